#include "harness/content/codec.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <optional>
#include <vector>

#include "content/internal/codec_value.h"
#include "content/internal/raw_json.h"
#include "content/transcript_internal.h"
#include "core/internal/json_dom.h"
#include "harness/core/base64.h"

namespace harness {
namespace {

using raw_json::RawSpans;

// ---------------------------------------------------------------------------------------------
// Encoding. Every Append* below runs on a message ValidateMessage accepted: raw JSON is valid
// and tool_result nesting is at most kMaxToolResultDepth, which bounds the recursion.

void AppendUint(std::string& out, std::uint64_t value) {
  fmt::format_to(std::back_inserter(out), "{}", value);
}

void AppendBytes(std::string& out, const std::optional<std::string>& bytes) {
  if (!bytes) {
    out += "null";
    return;
  }
  out.push_back('"');
  AppendBase64(out, *bytes);
  out.push_back('"');
}

void AppendBlocks(std::string& out, const std::vector<Block>& blocks);

void AppendProviderState(std::string& out, const std::optional<std::string>& state,
                         const std::string& format) {
  if (state && !state->empty()) {
    out += ",\"provider_state\":";
    raw_json::AppendCompactJson(out, *state);
  }
  if (!format.empty()) {
    out += ",\"provider_state_format\":";
    AppendJsonString(out, format);
  }
}

void AppendBlock(std::string& out, const Block& block) {
  if (const auto* b = block.as<TextBlock>()) {
    out += "{\"type\":\"text\",\"text\":";
    AppendJsonString(out, b->text);
  } else if (const auto* b = block.as<RefusalBlock>()) {
    out += "{\"type\":\"refusal\",\"text\":";
    AppendJsonString(out, b->text);
  } else if (const auto* b = block.as<ImageBlock>()) {
    out += "{\"type\":\"image\",\"media_type\":";
    AppendJsonString(out, b->media_type);
    out += ",\"source\":{\"url\":";
    AppendJsonString(out, b->url);
    out += ",\"data\":";
    AppendBytes(out, b->data);
    out.push_back('}');
  } else if (const auto* b = block.as<AudioBlock>()) {
    out += "{\"type\":\"audio\",\"media_type\":";
    AppendJsonString(out, b->media_type);
    out += ",\"data\":";
    AppendBytes(out, b->data);
  } else if (const auto* b = block.as<DocumentBlock>()) {
    out += "{\"type\":\"document\",\"media_type\":";
    AppendJsonString(out, b->media_type);
    out += ",\"name\":";
    AppendJsonString(out, b->name);
    out += ",\"data\":";
    AppendBytes(out, b->data);
    out += ",\"text\":";
    AppendJsonString(out, b->text);
  } else if (const auto* b = block.as<ThinkingBlock>()) {
    out += "{\"type\":\"thinking\",\"thinking\":";
    AppendJsonString(out, b->thinking);
    out += ",\"signature\":";
    AppendJsonString(out, b->signature);
    if (!b->signature_format.empty()) {
      out += ",\"signature_format\":";
      AppendJsonString(out, b->signature_format);
    }
    AppendProviderState(out, b->provider_state, b->provider_state_format);
  } else if (const auto* b = block.as<ToolUseBlock>()) {
    out += "{\"type\":\"tool_use\",\"id\":";
    AppendJsonString(out, b->id);
    out += ",\"name\":";
    AppendJsonString(out, b->name);
    out += ",\"input\":";
    if (b->input) {
      raw_json::AppendCompactJson(out, *b->input);
    } else {
      out += "null";
    }
    AppendProviderState(out, b->provider_state, b->provider_state_format);
  } else if (const auto* b = block.as<ToolResultBlock>()) {
    out += "{\"type\":\"tool_result\",\"tool_use_id\":";
    AppendJsonString(out, b->tool_use_id);
    out += ",\"content\":";
    AppendBlocks(out, b->content);
    out += b->is_error ? ",\"is_error\":true" : ",\"is_error\":false";
  }
  out.push_back('}');
}

void AppendBlocks(std::string& out, const std::vector<Block>& blocks) {
  out.push_back('[');
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (i > 0)
      out.push_back(',');
    AppendBlock(out, blocks[i]);
  }
  out.push_back(']');
}

void AppendValidMessage(std::string& out, const Message& message) {
  out += "{\"role\":\"";
  out += RoleName(message.role());
  out += "\",\"blocks\":";
  AppendBlocks(out, message.blocks());
  if (const auto* m = message.as<AssistantMessage>()) {
    out += ",\"usage\":";
    if (!m->usage) {
      out += "null";
    } else {
      out += "{\"input_tokens\":";
      AppendUint(out, m->usage->input_tokens);
      out += ",\"output_tokens\":";
      AppendUint(out, m->usage->output_tokens);
      out += ",\"cache_read_tokens\":";
      AppendUint(out, m->usage->cache_read_tokens);
      out += ",\"cache_creation_tokens\":";
      AppendUint(out, m->usage->cache_creation_tokens);
      out += ",\"reasoning_tokens\":";
      AppendUint(out, m->usage->reasoning_tokens);
      out.push_back('}');
    }
  } else if (const auto* m = message.as<ToolResultMessage>()) {
    out += ",\"tool_use_id\":";
    AppendJsonString(out, m->tool_use_id);
    out += m->is_error ? ",\"is_error\":true" : ",\"is_error\":false";
  }
  out.push_back('}');
}

// ---------------------------------------------------------------------------------------------
// Decoding.

TranscriptError Error(TranscriptErrorKind kind, std::string path, std::string rule) {
  return TranscriptError{kind, std::move(path), std::move(rule)};
}

// A member read's JsonError, reported as a message or block error at the same path.
template <class T>
Result<T, TranscriptError> As(TranscriptErrorKind kind, Result<T, JsonError> read) {
  if (read.ok())
    return std::move(read).value();
  JsonError e = std::move(read).error();
  return Fail(Error(kind, std::move(e.path), std::move(e.detail)));
}

Status<TranscriptError> As(TranscriptErrorKind kind, Status<JsonError> read) {
  if (read.ok())
    return {};
  JsonError e = std::move(read).error();
  return Fail(Error(kind, std::move(e.path), std::move(e.detail)));
}

// A document ParseStrictJson refused.
TranscriptError ParseError(const JsonError& e) {
  std::string rule = e.detail;
  if (e.kind == JsonErrorKind::kSyntax || e.kind == JsonErrorKind::kTooDeep) {
    rule += fmt::format(" at byte {}", e.offset);
  }
  return Error(TranscriptErrorKind::kJson, e.path, std::move(rule));
}

JsonLimits ParseLimits(const TranscriptLimits& limits) {
  JsonLimits json;
  json.max_bytes = limits.max_bytes;
  json.max_depth = kTranscriptJsonDepth;
  return json;
}

class Decoder {
 public:
  // `spans` holds the source text of raw JSON members when the DOM was parsed here; null when
  // the caller passed a DOM.
  explicit Decoder(const RawSpans* spans) : spans_(spans) {}

  Result<Message, TranscriptError> DecodeMessage(const Json& value, const std::string& path) const;

 private:
  Result<std::vector<Block>, TranscriptError> DecodeBlockList(const Json& list,
                                                              const std::string& path,
                                                              std::size_t depth) const;
  Result<Block, TranscriptError> DecodeBlock(const Json& value, const std::string& path,
                                             std::size_t depth) const;
  Result<Block, TranscriptError> DecodeLeafBlock(JsonObject& obj, const std::string& type) const;
  Result<std::string, TranscriptError> RawText(const Json& value, const std::string& path) const;
  Result<std::optional<std::string>, TranscriptError> OptionalRaw(JsonObject& obj,
                                                                  std::string_view name) const;

  const RawSpans* spans_;
};

constexpr auto kMessageError = TranscriptErrorKind::kMessage;
constexpr auto kBlockError = TranscriptErrorKind::kBlock;

// The member `name`, which must be an array; `kind` says whose member it is.
Result<const Json*, TranscriptError> RequireArray(JsonObject& obj, std::string_view name,
                                                  TranscriptErrorKind kind) {
  HARNESS_TRY(const Json* member, As(kind, obj.Require(name)));
  if (!member->is_array()) {
    return Fail(Error(kind, obj.MemberPath(name),
                      fmt::format("expected an array, found {}", JsonTypeName(*member))));
  }
  return member;
}

// An optional string member: absent is "", present must be a string.
Result<std::string, TranscriptError> OptionalString(JsonObject& obj, std::string_view name) {
  const Json* member = obj.Find(name);
  if (member == nullptr)
    return std::string();
  return As(kBlockError, JsonAsString(*member, obj.MemberPath(name)));
}

// A base64 member: null is absent bytes.
Result<std::optional<std::string>, TranscriptError> RequireBytes(JsonObject& obj,
                                                                 std::string_view name) {
  HARNESS_TRY(const Json* member, As(kBlockError, obj.Require(name)));
  if (member->is_null())
    return std::optional<std::string>();
  if (!member->is_string()) {
    return Fail(
        Error(kBlockError, obj.MemberPath(name),
              fmt::format("expected a base64 string or null, found {}", JsonTypeName(*member))));
  }
  auto bytes = Base64Decode(member->get_ref<const std::string&>());
  if (!bytes) {
    return Fail(Error(kBlockError, obj.MemberPath(name), "not canonical base64"));
  }
  return std::optional<std::string>(std::move(*bytes));
}

Result<std::string, TranscriptError> Decoder::RawText(const Json& value,
                                                      const std::string& path) const {
  if (spans_ != nullptr) {
    if (auto it = spans_->find(&value); it != spans_->end()) {
      return raw_json::CompactJson(it->second);
    }
  }
  if (raw_json::JsonDepth(value, kMaxRawJsonDepth) > kMaxRawJsonDepth) {
    return Fail(Error(TranscriptErrorKind::kEncoding, path,
                      fmt::format("raw JSON nested deeper than {}", kMaxRawJsonDepth)));
  }
  auto text = raw_json::CompactJsonFromDom(value);
  if (!text)
    return Fail(Error(TranscriptErrorKind::kEncoding, path, "raw JSON not serializable"));
  return std::move(*text);
}

Result<std::optional<std::string>, TranscriptError> Decoder::OptionalRaw(
    JsonObject& obj, std::string_view name) const {
  const Json* member = obj.Find(name);
  if (member == nullptr)
    return std::optional<std::string>();
  HARNESS_TRY(std::string raw, RawText(*member, obj.MemberPath(name)));
  return std::optional<std::string>(std::move(raw));
}

Result<Block, TranscriptError> Decoder::DecodeLeafBlock(JsonObject& obj,
                                                        const std::string& type) const {
  if (type == "text" || type == "refusal") {
    HARNESS_TRY(std::string text, As(kBlockError, obj.RequireString("text")));
    if (type == "text")
      return Block(TextBlock{std::move(text)});
    return Block(RefusalBlock{std::move(text)});
  }
  if (type == "image") {
    ImageBlock b;
    HARNESS_TRY(b.media_type, As(kBlockError, obj.RequireString("media_type")));
    HARNESS_TRY(const Json* source_value, As(kBlockError, obj.Require("source")));
    HARNESS_TRY(JsonObject source,
                As(kBlockError, JsonObject::Open(*source_value, obj.MemberPath("source"))));
    HARNESS_TRY(b.url, As(kBlockError, source.RequireString("url")));
    HARNESS_TRY(b.data, RequireBytes(source, "data"));
    HARNESS_CHECK(As(kBlockError, source.RejectUnknown()));
    return Block(std::move(b));
  }
  if (type == "audio") {
    AudioBlock b;
    HARNESS_TRY(b.media_type, As(kBlockError, obj.RequireString("media_type")));
    HARNESS_TRY(b.data, RequireBytes(obj, "data"));
    return Block(std::move(b));
  }
  if (type == "document") {
    DocumentBlock b;
    HARNESS_TRY(b.media_type, As(kBlockError, obj.RequireString("media_type")));
    HARNESS_TRY(b.name, As(kBlockError, obj.RequireString("name")));
    HARNESS_TRY(b.data, RequireBytes(obj, "data"));
    HARNESS_TRY(b.text, As(kBlockError, obj.RequireString("text")));
    return Block(std::move(b));
  }
  if (type == "thinking") {
    ThinkingBlock b;
    HARNESS_TRY(b.thinking, As(kBlockError, obj.RequireString("thinking")));
    HARNESS_TRY(b.signature, As(kBlockError, obj.RequireString("signature")));
    HARNESS_TRY(b.signature_format, OptionalString(obj, "signature_format"));
    HARNESS_TRY(b.provider_state, OptionalRaw(obj, "provider_state"));
    HARNESS_TRY(b.provider_state_format, OptionalString(obj, "provider_state_format"));
    return Block(std::move(b));
  }
  if (type == "tool_use") {
    ToolUseBlock b;
    HARNESS_TRY(b.id, As(kBlockError, obj.RequireString("id")));
    HARNESS_TRY(b.name, As(kBlockError, obj.RequireString("name")));
    HARNESS_TRY(const Json* input, As(kBlockError, obj.Require("input")));
    if (!input->is_null()) {
      HARNESS_TRY(std::string raw, RawText(*input, obj.MemberPath("input")));
      b.input = std::move(raw);
    }
    HARNESS_TRY(b.provider_state, OptionalRaw(obj, "provider_state"));
    HARNESS_TRY(b.provider_state_format, OptionalString(obj, "provider_state_format"));
    return Block(std::move(b));
  }
  return Fail(Error(kBlockError, obj.MemberPath("type"),
                    fmt::format("unknown block type {}", QuoteForDetail(type))));
}

Result<Block, TranscriptError> Decoder::DecodeBlock(const Json& value, const std::string& path,
                                                    std::size_t depth) const {
  if (value.is_null())
    return Fail(Error(kBlockError, path, "block is null"));
  HARNESS_TRY(JsonObject obj, As(kBlockError, JsonObject::Open(value, path)));
  HARNESS_TRY(std::string type, As(kBlockError, obj.RequireString("type")));
  if (type != "tool_result") {
    HARNESS_TRY(Block block, DecodeLeafBlock(obj, type));
    HARNESS_CHECK(As(kBlockError, obj.RejectUnknown()));
    return block;
  }
  ToolResultBlock b;
  HARNESS_TRY(b.tool_use_id, As(kBlockError, obj.RequireString("tool_use_id")));
  HARNESS_TRY(const Json* content, RequireArray(obj, "content", kBlockError));
  HARNESS_TRY(b.is_error, As(kBlockError, obj.RequireBool("is_error")));
  HARNESS_CHECK(As(kBlockError, obj.RejectUnknown()));
  HARNESS_TRY(b.content, DecodeBlockList(*content, obj.MemberPath("content"), depth + 1));
  return Block(std::move(b));
}

// Recursion: DecodeBlock → DecodeBlockList is refused at depth kMaxToolResultDepth + 1, before
// any element is looked at.
Result<std::vector<Block>, TranscriptError> Decoder::DecodeBlockList(const Json& list,
                                                                     const std::string& path,
                                                                     std::size_t depth) const {
  if (depth > kMaxToolResultDepth) {
    return Fail(Error(kBlockError, path, content_internal::TooDeepRule()));
  }
  std::vector<Block> blocks;
  blocks.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    HARNESS_TRY(Block block, DecodeBlock(list[i], fmt::format("{}[{}]", path, i), depth));
    blocks.push_back(std::move(block));
  }
  return blocks;
}

Result<Message, TranscriptError> Decoder::DecodeMessage(const Json& value,
                                                        const std::string& path) const {
  if (value.is_null())
    return Fail(Error(kMessageError, path, "message is null"));
  HARNESS_TRY(JsonObject obj, As(kMessageError, JsonObject::Open(value, path)));
  HARNESS_TRY(std::string role, As(kMessageError, obj.RequireString("role")));
  if (role != "user" && role != "assistant" && role != "system" && role != "tool") {
    return Fail(Error(kMessageError, obj.MemberPath("role"),
                      fmt::format("unknown role {}", QuoteForDetail(role))));
  }
  HARNESS_TRY(const Json* blocks_value, RequireArray(obj, "blocks", kMessageError));
  std::optional<Usage> usage;
  std::string tool_use_id;
  bool is_error = false;
  if (role == "assistant") {
    HARNESS_TRY(const Json* usage_value, As(kMessageError, obj.Require("usage")));
    if (!usage_value->is_null()) {
      HARNESS_TRY(JsonObject u,
                  As(kMessageError, JsonObject::Open(*usage_value, obj.MemberPath("usage"))));
      Usage counts;
      HARNESS_TRY(counts.input_tokens, As(kMessageError, u.RequireUint("input_tokens")));
      HARNESS_TRY(counts.output_tokens, As(kMessageError, u.RequireUint("output_tokens")));
      HARNESS_TRY(counts.cache_read_tokens, As(kMessageError, u.RequireUint("cache_read_tokens")));
      HARNESS_TRY(counts.cache_creation_tokens,
                  As(kMessageError, u.RequireUint("cache_creation_tokens")));
      HARNESS_TRY(counts.reasoning_tokens, As(kMessageError, u.RequireUint("reasoning_tokens")));
      HARNESS_CHECK(As(kMessageError, u.RejectUnknown()));
      usage = counts;
    }
  } else if (role == "tool") {
    HARNESS_TRY(tool_use_id, As(kMessageError, obj.RequireString("tool_use_id")));
    HARNESS_TRY(is_error, As(kMessageError, obj.RequireBool("is_error")));
  }
  HARNESS_CHECK(As(kMessageError, obj.RejectUnknown()));
  HARNESS_TRY(std::vector<Block> blocks,
              DecodeBlockList(*blocks_value, obj.MemberPath("blocks"), 0));
  if (role == "user")
    return Message(UserMessage{std::move(blocks)});
  if (role == "system")
    return Message(SystemMessage{std::move(blocks)});
  if (role == "assistant")
    return Message(AssistantMessage{std::move(blocks), usage});
  return Message(ToolResultMessage{std::move(blocks), std::move(tool_use_id), is_error});
}

Result<Message, TranscriptError> DecodeOne(const Json& value, const std::string& path,
                                           const RawSpans* spans) {
  HARNESS_TRY(Message message, Decoder(spans).DecodeMessage(value, path));
  HARNESS_CHECK(ValidateMessage(message, path));
  return message;
}

TranscriptError NotAnArray(const std::string& path, const Json& value) {
  return Error(TranscriptErrorKind::kJson, path,
               fmt::format("expected an array of messages, found {}", JsonTypeName(value)));
}

// Message `index` of a transcript at `path`, decoded and validated, appended to `transcript`.
// Both decoders go message by message, so the first error in document order wins, and the
// limit on messages is found at the first message beyond it.
Status<TranscriptError> AppendDecoded(Transcript& transcript, const Json& value,
                                      const std::string& path, std::size_t index,
                                      const TranscriptLimits& limits, const RawSpans* spans) {
  if (index >= limits.max_messages) {
    return Fail(Error(TranscriptErrorKind::kJson, path,
                      fmt::format("more than {} messages, the limit", limits.max_messages)));
  }
  HARNESS_TRY(Message message, DecodeOne(value, fmt::format("{}[{}]", path, index), spans));
  transcript.push_back(std::move(message));
  return {};
}

TranscriptError NoMessages(const std::string& path) {
  return Error(TranscriptErrorKind::kEmpty, path, "transcript has no messages");
}

// The shortest message and its separator: {"role":"user","blocks":[]}, so that a text of
// commas cannot reserve more slots than a transcript of its size could fill.
constexpr std::size_t kMinMessageBytes = 28;

// How many elements the root array of `json` has, if it is one: the commas outside strings at
// depth one, plus one. Only a capacity hint: a text that is not an array, or not JSON, gives a
// number the parse then ignores (it refuses the text).
std::size_t CountRootArrayElements(std::string_view json) {
  std::size_t depth = 0;
  std::size_t commas = 0;
  bool any = false;
  bool in_string = false;
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        any = any || depth == 1;
        break;
      case '[':
      case '{':
        any = any || depth == 1;
        ++depth;
        break;
      case ']':
      case '}':
        depth -= depth > 0 ? 1 : 0;
        break;
      case ',':
        commas += depth == 1 ? 1 : 0;
        break;
      default:
        any = any || (depth == 1 && c != ' ' && c != '\n' && c != '\r' && c != '\t');
        break;
    }
  }
  return any ? commas + 1 : 0;
}

}  // namespace

std::uint64_t EstimatedMessageBytes(const Message& message) {
  std::string encoded;
  if (!AppendMessage(encoded, message).ok())
    return 0;
  std::uint64_t bytes = encoded.size();
  // Iterative: results nest in results (at most 128 deep in a valid message).
  std::vector<const std::vector<Block>*> lists{&message.blocks()};
  while (!lists.empty()) {
    const std::vector<Block>* list = lists.back();
    lists.pop_back();
    for (const Block& block : *list) {
      if (const auto* image = block.as<ImageBlock>()) {
        const std::uint64_t counted =
            image->url.size() + (image->data ? (image->data->size() + 2) / 3 * 4 : 0);
        bytes = bytes - std::min(bytes, counted) + kImageTokenEstimate * 4;
      } else if (const auto* result = block.as<ToolResultBlock>()) {
        lists.push_back(&result->content);
      }
    }
  }
  return bytes;
}

Status<TranscriptError> AppendMessage(std::string& out, const Message& message) {
  HARNESS_CHECK(ValidateMessage(message, "$"));
  AppendValidMessage(out, message);
  return {};
}

Result<std::string, TranscriptError> EncodeMessage(const Message& message) {
  std::string out;
  HARNESS_CHECK(AppendMessage(out, message));
  return out;
}

Result<std::string, TranscriptError> EncodeTranscript(const Transcript& transcript) {
  if (transcript.empty()) {
    return Fail(Error(TranscriptErrorKind::kEmpty, "$", "transcript has no messages"));
  }
  std::string out = "[";
  for (std::size_t i = 0; i < transcript.size(); ++i) {
    HARNESS_CHECK(ValidateMessage(transcript[i], fmt::format("$[{}]", i)));
    if (i > 0)
      out.push_back(',');
    AppendValidMessage(out, transcript[i]);
  }
  out.push_back(']');
  return out;
}

Result<std::size_t, TranscriptError> ForEachTranscriptMessage(
    std::string_view json, const std::function<void(Message)>& each,
    const TranscriptLimits& limits) {
  std::optional<TranscriptError> refused;
  const std::string root = "$";
  const auto element = [&](std::size_t index, Json& value, std::string_view text) {
    RawSpans spans;
    raw_json::CollectRawSpans(value, text, spans);
    if (index >= limits.max_messages) {
      refused = Error(TranscriptErrorKind::kJson, root,
                      fmt::format("more than {} messages, the limit", limits.max_messages));
      return false;
    }
    auto message = DecodeOne(value, fmt::format("{}[{}]", root, index), &spans);
    if (!message.ok()) {
      refused = std::move(message).error();
      return false;
    }
    each(std::move(message).value());
    return true;
  };
  auto read = ParseStrictJsonArray(json, ParseLimits(limits), element);
  if (!read.ok())
    return Fail(ParseError(read.error()));
  if (refused)
    return Fail(std::move(*refused));
  if (read->root)
    return Fail(NotAnArray(root, *read->root));
  if (read->elements == 0)
    return Fail(NoMessages(root));
  return read->elements;
}

// The messages are counted first by a scan of the text (the commas between the root array's
// elements), so that the transcript is allocated once at its size: grown by doubling it would
// hold up to twice the messages' slots, and three times while it moves them.
Result<Transcript, TranscriptError> DecodeTranscript(std::string_view json,
                                                     const TranscriptLimits& limits) {
  Transcript transcript;
  if (json.size() <= limits.max_bytes)
    transcript.reserve(std::min(
        {CountRootArrayElements(json), json.size() / kMinMessageBytes + 1, limits.max_messages}));
  HARNESS_CHECK(ForEachTranscriptMessage(
      json, [&transcript](Message message) { transcript.push_back(std::move(message)); }, limits));
  return transcript;
}

Result<Transcript, TranscriptError> DecodeTranscriptValue(const Json& array, std::string path,
                                                          const TranscriptLimits& limits) {
  if (!array.is_array())
    return Fail(NotAnArray(path, array));
  if (array.empty())
    return Fail(NoMessages(path));
  Transcript transcript;
  transcript.reserve(std::min(array.size(), limits.max_messages));
  for (std::size_t i = 0; i < array.size(); ++i)
    HARNESS_CHECK(AppendDecoded(transcript, array[i], path, i, limits, nullptr));
  return transcript;
}

Result<Message, TranscriptError> DecodeMessageValue(const Json& message, std::string path) {
  return DecodeOne(message, path, nullptr);
}

Result<Message, TranscriptError> DecodeMessage(std::string_view json,
                                               const TranscriptLimits& limits) {
  auto parsed = ParseStrictJson(json, ParseLimits(limits));
  if (!parsed.ok())
    return Fail(ParseError(parsed.error()));
  RawSpans spans;
  raw_json::CollectRawSpans(*parsed, json, spans);
  return DecodeOne(*parsed, "$", &spans);
}

}  // namespace harness
