#include "serve/gateway_messages_compaction.h"

#include <fmt/format.h>

#include <utility>

#include "core/internal/json_dom.h"
#include "harness/content/message.h"
#include "harness/core/sha256.h"

namespace harness::serve {

namespace {

constexpr std::string_view kMarkerFormat = "harness_compaction";
// DecodeCompactionMarker's rule for a text that is no gateway marker at all.
constexpr std::string_view kNotAMarker =
    "its \"encrypted_content\" is not a marker this gateway wrote (a provider's compaction, or "
    "another gateway's)";

GatewayError Invalid(std::string message) {
  return InvalidRequest(GatewayWire::kMessages, "invalid_request", std::move(message));
}

// A compaction block the gateway cannot resume from.
GatewayError BadBlock(std::string message) {
  return InvalidRequest(GatewayWire::kMessages, "invalid_compaction_block", std::move(message));
}

GatewayError Internal(std::string message) {
  return GatewayError{500, "api_error", "internal", std::move(message)};
}

// The upstream answered what the gateway cannot relay with the compaction block in it.
GatewayError UpstreamBroke(std::string detail) {
  return GatewayError{502, "api_error", "upstream_unavailable", "the upstream's " + detail};
}

GatewayError FromJson(const JsonError& error) {
  return Invalid(fmt::format("the body is not strict JSON: {}", error.Describe()));
}

// The marker's digest: each part's length, then its bytes, so that no two different carries
// hash the same bytes.
std::string CarryDigest(std::string_view summary, const CompactionCarry& carry) {
  Sha256Hasher hasher;
  auto part = [&hasher](std::string_view bytes) {
    hasher.Update(fmt::format("{}:", bytes.size())).Update(bytes);
  };
  part(kMarkerFormat);
  part(summary);
  part(carry.session ? carry.session->ToString() : std::string());
  for (const std::string& element : carry.replacement)
    part(element);
  const Sha256Digest digest = hasher.Finish();
  return ToHex(digest);
}

Result<CompactEdit, GatewayError> ReadCompactEdit(const Json& value, const std::string& path) {
  auto opened = JsonObject::Open(value, path);
  if (!opened.ok())
    return Fail(Invalid(fmt::format("{} must be an object", path)));
  JsonObject edit = std::move(*opened);
  CompactEdit out;
  (void)edit.Find("type");
  if (const Json* trigger = edit.Find("trigger"); trigger != nullptr && !trigger->is_null()) {
    auto trigger_object = JsonObject::Open(*trigger, edit.MemberPath("trigger"));
    if (!trigger_object.ok())
      return Fail(
          Invalid(fmt::format("{}.trigger must be an object {{\"type\":\"input_tokens\","
                              "\"value\":N}} or null",
                              path)));
    auto type = trigger_object->RequireString("type");
    if (!type.ok() || *type != "input_tokens") {
      return Fail(Invalid(fmt::format(
          "{}.trigger.type must be \"input_tokens\", the only trigger there is", path)));
    }
    auto amount = trigger_object->RequireUint("value");
    if (!amount.ok() || *amount == 0) {
      return Fail(Invalid(fmt::format(
          "{}.trigger.value must be a whole number of input tokens of at least 1", path)));
    }
    if (auto unknown = trigger_object->RejectUnknown(); !unknown.ok())
      return Fail(Invalid(fmt::format("{}.trigger has an {} (a trigger is type and value)", path,
                                      unknown.error().detail)));
    out.trigger = *amount;
  }
  if (const Json* instructions = edit.Find("instructions");
      instructions != nullptr && !instructions->is_null()) {
    if (!instructions->is_string())
      return Fail(Invalid(fmt::format("{}.instructions must be a string or null", path)));
    out.instructions = instructions->get<std::string>();
  }
  if (const Json* pause = edit.Find("pause_after_compaction");
      pause != nullptr && !pause->is_null()) {
    if (!pause->is_boolean())
      return Fail(Invalid(fmt::format("{}.pause_after_compaction must be true or false", path)));
    out.pause_after_compaction = pause->get<bool>();
  }
  if (auto unknown = edit.RejectUnknown(); !unknown.ok()) {
    return Fail(
        Invalid(fmt::format("{} has an {}: a {} edit has type, trigger, instructions "
                            "and pause_after_compaction",
                            path, unknown.error().detail, kCompactEditType)));
  }
  return out;
}

// The compact edit of `context_management`, when there is one.
Result<std::optional<CompactEdit>, GatewayError> ReadContextManagement(const Json& root) {
  const auto found = root.find("context_management");
  if (found == root.end() || found->is_null())
    return std::optional<CompactEdit>();
  if (!found->is_object())
    return Fail(Invalid("$.context_management must be an object {\"edits\":[…]}"));
  const auto edits = found->find("edits");
  if (edits == found->end() || edits->is_null())
    return std::optional<CompactEdit>();
  if (!edits->is_array())
    return Fail(Invalid("$.context_management.edits must be an array of edits"));
  std::optional<CompactEdit> out;
  for (std::size_t i = 0; i < edits->size(); ++i) {
    const Json& edit = (*edits)[i];
    const std::string path = fmt::format("$.context_management.edits[{}]", i);
    if (!edit.is_object() || !edit.contains("type") || !edit["type"].is_string())
      return Fail(Invalid(fmt::format("{} must be an object with a string \"type\"", path)));
    if (edit["type"].get<std::string>() != kCompactEditType)
      continue;  // another edit: the upstream's to apply
    if (out) {
      return Fail(
          Invalid(fmt::format("{} is a second {} edit; give at most one", path, kCompactEditType)));
    }
    HARNESS_TRY(CompactEdit read, ReadCompactEdit(edit, path));
    out = std::move(read);
  }
  return out;
}

struct BlockAt {
  std::size_t message = 0;
  std::size_t block = 0;
};

// Every compaction block of `messages`, in order; compaction blocks are assistant content only.
Result<std::vector<BlockAt>, GatewayError> CompactionBlocks(const Json& messages) {
  std::vector<BlockAt> out;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const Json& message = messages[i];
    if (!message.is_object())
      continue;  // the dialect reader names it
    const auto content = message.find("content");
    if (content == message.end() || !content->is_array())
      continue;
    for (std::size_t j = 0; j < content->size(); ++j) {
      const Json& block = (*content)[j];
      if (!block.is_object())
        continue;
      const auto type = block.find("type");
      if (type == block.end() || !type->is_string() || type->get<std::string>() != "compaction")
        continue;
      const auto role = message.find("role");
      if (role == message.end() || !role->is_string() || role->get<std::string>() != "assistant") {
        return Fail(BadBlock(fmt::format(
            "$.messages[{}].content[{}] is a compaction block in a message that is not the "
            "assistant's; a compaction block is only valid where an answer returned it",
            i, j)));
      }
      out.push_back(BlockAt{i, j});
    }
  }
  return out;
}

Result<CompactionCarry, GatewayError> ReadCarriedBlock(const Json& block, const BlockAt& at,
                                                       std::string& summary) {
  const std::string path = fmt::format("$.messages[{}].content[{}]", at.message, at.block);
  const auto content = block.find("content");
  const auto marker = block.find("encrypted_content");
  auto foreign = [&path] {
    return BadBlock(fmt::format(
        "{} is a compaction block this gateway did not write (its \"encrypted_content\" is not a "
        "gateway marker: a provider's compaction, or another gateway's); the gateway resumes only "
        "from its own compaction blocks: remove it and send the messages it summarized",
        path));
  };
  if (marker == block.end() || !marker->is_string())
    return Fail(foreign());
  if (content == block.end() || !content->is_string() || content->get<std::string>().empty()) {
    return Fail(BadBlock(
        fmt::format("{}.content must be the summary the gateway wrote, a non-empty string", path)));
  }
  for (const auto& member : block.items()) {
    if (member.key() != "type" && member.key() != "content" &&
        member.key() != "encrypted_content" && member.key() != "cache_control") {
      return Fail(BadBlock(fmt::format("{}.{} is not a member of a compaction block", path,
                                       QuoteForDetail(member.key(), 32))));
    }
  }
  summary = content->get<std::string>();
  auto carry = DecodeCompactionMarker(summary, marker->get<std::string>());
  if (!carry.ok()) {
    if (carry.error() == kNotAMarker)
      return Fail(foreign());
    return Fail(
        BadBlock(fmt::format("{} cannot be resumed from: {}; send the block exactly as the "
                             "gateway returned it",
                             path, carry.error())));
  }
  return std::move(*carry);
}

// Message `index` without its blocks before `from` and without the undone compaction blocks in
// `skipped`: its exact text when nothing is removed, nullopt when no block is left.
std::optional<std::string> Remaining(const Json& messages, const DialectConversation& read,
                                     std::size_t index, std::size_t from,
                                     const std::vector<BlockAt>& skipped) {
  const Json& message = messages[index];
  auto skip = [&](std::size_t block) {
    for (const BlockAt& at : skipped) {
      if (at.message == index && at.block == block)
        return true;
    }
    return false;
  };
  const auto content = message.find("content");
  bool changed = from > 0;
  if (content != message.end() && content->is_array()) {
    for (std::size_t j = from; j < content->size() && !changed; ++j)
      changed = skip(j);
  }
  if (!changed)
    return read.elements[index].json;
  Json rest = Json::object();
  for (const auto& member : message.items()) {
    if (member.key() != "content") {
      rest[member.key()] = member.value();
      continue;
    }
    Json blocks = Json::array();
    for (std::size_t j = from; j < content->size(); ++j) {
      if (!skip(j))
        blocks.push_back((*content)[j]);
    }
    if (blocks.empty())
      return std::nullopt;
    rest["content"] = std::move(blocks);
  }
  return rest.dump();
}

// An element for a writer, which writes it exactly as this text.
DialectElement AsSent(std::string json) {
  DialectElement element;
  element.json = std::move(json);
  return element;
}

GatewayError FromDialect(const DialectError& error) {
  return Invalid(fmt::format("the conversation cannot be read: {}", error.Describe()));
}

}  // namespace

std::string EncodeCompactionMarker(std::string_view summary, const CompactionCarry& carry) {
  std::string out = "{\"";
  out.append(kMarkerFormat).append("\":1,\"session\":");
  if (carry.session)
    AppendJsonString(out, carry.session->ToString());
  else
    out.append("null");
  out.append(",\"replacement\":[");
  for (std::size_t i = 0; i < carry.replacement.size(); ++i) {
    out.append(i == 0 ? "" : ",");
    AppendJsonString(out, carry.replacement[i]);
  }
  out.append("],\"sha256\":\"").append(CarryDigest(summary, carry)).append("\"}");
  return out;
}

Result<CompactionCarry, std::string> DecodeCompactionMarker(std::string_view summary,
                                                            std::string_view marker) {
  const std::string not_ours(kNotAMarker);
  auto parsed = ParseStrictJson(marker);
  if (!parsed.ok() || !parsed->is_object())
    return Fail(not_ours);
  auto opened = JsonObject::Open(*parsed, "$");
  JsonObject object = std::move(*opened);
  auto format = object.RequireUint(kMarkerFormat);
  if (!format.ok())
    return Fail(not_ours);
  if (*format != 1)
    return Fail(std::string("its marker is of a format this gateway does not read"));
  CompactionCarry carry;
  auto session = object.Require("session");
  if (!session.ok())
    return Fail(std::string("its marker has no \"session\""));
  if (!(*session)->is_null()) {
    if (!(*session)->is_string())
      return Fail(std::string("its marker's \"session\" is not a session id"));
    auto id = Uuid::ParseCanonical((*session)->get<std::string>());
    if (!id.ok())
      return Fail(std::string("its marker's \"session\" is not a session id"));
    carry.session = *id;
  }
  auto replacement = object.RequireNonNull("replacement");
  if (!replacement.ok() || !(*replacement)->is_array() || (*replacement)->empty())
    return Fail(std::string("its marker's \"replacement\" is not an array of messages"));
  for (const Json& element : **replacement) {
    if (!element.is_string())
      return Fail(std::string("its marker's \"replacement\" holds a value that is not a string"));
    carry.replacement.push_back(element.get<std::string>());
  }
  auto digest = object.RequireString("sha256");
  if (!digest.ok())
    return Fail(std::string("its marker has no \"sha256\""));
  if (auto unknown = object.RejectUnknown(); !unknown.ok())
    return Fail(std::string("its marker has a member this gateway does not write"));
  if (*digest != CarryDigest(summary, carry)) {
    return Fail(std::string(
        "its summary or marker was changed after the gateway wrote it (the SHA-256 differs)"));
  }
  return carry;
}

std::string CompactionBlockJson(std::string_view summary, const CompactionCarry& carry) {
  std::string out = "{\"type\":\"compaction\",\"content\":";
  AppendJsonString(out, summary);
  out.append(",\"encrypted_content\":");
  AppendJsonString(out, EncodeCompactionMarker(summary, carry));
  out.append("}");
  return out;
}

Result<MessagesGatewayRequest, GatewayError> ReadMessagesGatewayRequest(
    std::string_view body, const DialectLimits& limits, const UndoneCompaction& undone) {
  if (body.size() > limits.max_bytes) {
    return Fail(GatewayError{413, "request_too_large", "too_large",
                             fmt::format("the body is over {} bytes", limits.max_bytes)});
  }
  auto parsed = ParseStrictJson(body, JsonLimits{limits.max_bytes, limits.max_depth});
  if (!parsed.ok())
    return Fail(FromJson(parsed.error()));
  const Json& root = *parsed;
  if (!root.is_object())
    return Fail(Invalid("the body must be a JSON object, a Messages request"));
  MessagesGatewayRequest out;
  if (const auto model = root.find("model"); model != root.end()) {
    if (!model->is_string())
      return Fail(Invalid("$.model must be a string, the model's name"));
    out.model = model->get<std::string>();
  }
  if (const auto stream = root.find("stream"); stream != root.end() && !stream->is_null()) {
    if (!stream->is_boolean())
      return Fail(Invalid("$.stream must be true or false"));
    out.stream = stream->get<bool>();
  }
  HARNESS_TRY(out.edit, ReadContextManagement(root));
  const auto messages = root.find("messages");
  if (messages == root.end() || !messages->is_array())
    return Fail(Invalid("$.messages must be an array of messages"));
  HARNESS_TRY(const std::vector<BlockAt> blocks, CompactionBlocks(*messages));

  auto read = ReadAnthropicMessages(body, limits);
  if (!read.ok())
    return Fail(FromDialect(read.error()));
  if (blocks.empty()) {
    out.conversation = std::move(*read);
    return out;
  }

  // Resume from the last compaction block that was not undone: the replacement it carries,
  // then the rest; the undone blocks after it are dropped, their messages kept.
  std::optional<BlockAt> resume;
  std::optional<CompactionCarry> carried;
  std::vector<BlockAt> skipped;
  for (auto at = blocks.rbegin(); at != blocks.rend() && !resume; ++at) {
    std::string summary;
    HARNESS_TRY(CompactionCarry carry,
                ReadCarriedBlock((*messages)[at->message]["content"][at->block], *at, summary));
    if (carry.session && undone && undone(*carry.session)) {
      skipped.push_back(*at);
      out.undone.push_back(*carry.session);
      continue;
    }
    resume = *at;
    carried = std::move(carry);
  }
  std::vector<DialectElement> tail;
  std::size_t next = 0;
  if (resume) {
    for (const std::string& element : carried->replacement)
      tail.push_back(AsSent(element));
    if (auto rest = Remaining(*messages, *read, resume->message, resume->block + 1, skipped))
      tail.push_back(AsSent(std::move(*rest)));
    next = resume->message + 1;
  }
  for (std::size_t i = next; i < read->elements.size(); ++i) {
    if (auto kept = Remaining(*messages, *read, i, 0, skipped))
      tail.push_back(AsSent(std::move(*kept)));
  }
  auto written = WriteAnthropicMessages(Transcript{}, tail);
  if (!written.ok())
    return Fail(FromDialect(written.error()));
  auto resumed = ReadAnthropicMessages(*written, limits);
  if (!resumed.ok())
    return Fail(FromDialect(resumed.error()));
  resumed->system = std::move(read->system);
  resumed->system_json = std::move(read->system_json);
  out.conversation = std::move(*resumed);
  out.messages = std::move(*written);
  if (resume)
    out.resumed_at = resume->message;
  out.carried = std::move(carried);
  return out;
}

std::string UpstreamMessagesBody(std::string_view body, const MessagesGatewayRequest& request,
                                 std::optional<std::string_view> messages) {
  if (!messages && request.messages)
    messages = *request.messages;
  if (!request.edit && !messages)
    return std::string(body);
  // The body was read by ReadMessagesGatewayRequest: it parses.
  auto parsed = ParseStrictJson(body, JsonLimits{body.size(), kMaxRawJsonDepth + 16});
  if (!parsed.ok())
    return std::string(body);
  const Json& root = *parsed;
  std::string out = "{";
  bool first = true;
  auto member = [&](const std::string& name, std::string_view value) {
    out.append(first ? "" : ",");
    first = false;
    AppendJsonString(out, name);
    out.append(":").append(value);
  };
  for (const auto& item : root.items()) {
    if (item.key() == "messages" && messages) {
      member(item.key(), *messages);
    } else if (item.key() == "context_management" && item.value().is_object()) {
      Json kept = Json::object();
      for (const auto& field : item.value().items()) {
        if (field.key() != "edits" || !field.value().is_array()) {
          kept[field.key()] = field.value();
          continue;
        }
        Json edits = Json::array();
        for (const Json& edit : field.value()) {
          if (!(edit.is_object() && edit.contains("type") && edit["type"] == kCompactEditType))
            edits.push_back(edit);
        }
        if (!edits.empty())
          kept["edits"] = std::move(edits);
      }
      if (!kept.empty())
        member(item.key(), kept.dump());
    } else {
      member(item.key(), item.value().dump());
    }
  }
  out.append("}");
  return out;
}

bool CompactionDue(TokenCount input_tokens, const CompactEdit& edit) {
  return input_tokens > edit.trigger;
}

Result<CompactionCarry, GatewayError> CarryOfReplacement(std::string_view messages,
                                                         std::optional<Uuid> session) {
  auto conversation = ReadAnthropicMessages(messages);
  if (!conversation.ok()) {
    return Fail(Internal("the compaction's replacement cannot be read back: " +
                         conversation.error().Describe()));
  }
  if (conversation->elements.empty())
    return Fail(Internal("the compaction's replacement has no summary message"));
  CompactionCarry carry;
  carry.session = session;
  for (const DialectElement& element : conversation->elements)
    carry.replacement.push_back(element.json);
  return carry;
}

Result<std::string, GatewayError> PrependCompactionBlock(std::string_view answer,
                                                         std::string_view block) {
  auto parsed = ParseStrictJson(answer);
  auto bad = [] { return UpstreamBroke("answer is not a Messages answer (no \"content\" array)"); };
  if (!parsed.ok() || !parsed->is_object())
    return Fail(bad());
  Json& root = *parsed;
  const auto content = root.find("content");
  if (content == root.end() || !content->is_array())
    return Fail(bad());
  auto compaction = ParseStrictJson(block);
  if (!compaction.ok())
    return Fail(Internal("the gateway's compaction block is not JSON"));
  content->insert(content->begin(), std::move(*compaction));
  return root.dump();
}

namespace {

std::string MessageHead(std::string_view id, std::string_view model, std::string_view content,
                        std::string_view stop_reason, TokenCount input_tokens) {
  std::string out = "{\"id\":";
  AppendJsonString(out, id);
  out.append(",\"type\":\"message\",\"role\":\"assistant\",\"model\":");
  AppendJsonString(out, model);
  out.append(",\"content\":").append(content);
  out.append(",\"stop_reason\":").append(stop_reason);
  out.append(",\"stop_sequence\":null,\"usage\":{\"input_tokens\":")
      .append(std::to_string(input_tokens))
      .append(",\"output_tokens\":0}}");
  return out;
}

// One event; an unnamed one (`name` empty) is written without an `event:` line.
void AppendEvent(std::string& out, std::string_view name, std::string_view data) {
  if (!name.empty())
    out.append("event: ").append(name).append("\n");
  std::size_t start = 0;
  while (true) {
    const std::size_t end = data.find('\n', start);
    out.append("data: ").append(data.substr(start, end - start)).append("\n");
    if (end == std::string_view::npos)
      break;
    start = end + 1;
  }
  out.append("\n");
}

// The three events of the compaction block at index 0: its start (without the summary), the
// summary in one delta, its stop.
void AppendBlockEvents(std::string& out, std::string_view block) {
  auto parsed = ParseStrictJson(block);
  std::string content;
  std::string marker;
  if (parsed.ok() && parsed->is_object()) {
    if (auto it = parsed->find("content"); it != parsed->end() && it->is_string())
      content = it->get<std::string>();
    if (auto it = parsed->find("encrypted_content"); it != parsed->end() && it->is_string())
      marker = it->get<std::string>();
  }
  AppendEvent(out, "content_block_start",
              "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":"
              "\"compaction\",\"content\":null,\"encrypted_content\":null}}");
  std::string delta =
      "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"compaction_delta\","
      "\"content\":";
  AppendJsonString(delta, content);
  delta.append(",\"encrypted_content\":");
  AppendJsonString(delta, marker);
  delta.append("}}");
  AppendEvent(out, "content_block_delta", delta);
  AppendEvent(out, "content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}");
}

}  // namespace

std::string PausedAnswer(std::string_view id, std::string_view model, std::string_view block,
                         TokenCount input_tokens) {
  std::string content;
  content.reserve(block.size() + 2);
  content.append("[").append(block).append("]");
  return MessageHead(id, model, content, "\"compaction\"", input_tokens);
}

std::string PausedStream(std::string_view id, std::string_view model, std::string_view block,
                         TokenCount input_tokens) {
  std::string out;
  std::string start = "{\"type\":\"message_start\",\"message\":";
  start.append(MessageHead(id, model, "[]", "null", input_tokens)).append("}");
  AppendEvent(out, "message_start", start);
  AppendBlockEvents(out, block);
  AppendEvent(out, "message_delta",
              "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"compaction\","
              "\"stop_sequence\":null},\"usage\":{\"output_tokens\":0}}");
  AppendEvent(out, "message_stop", "{\"type\":\"message_stop\"}");
  return out;
}

CompactionStreamSplice::CompactionStreamSplice(std::string block, SseLimits limits)
    : block_(std::move(block)), decoder_(limits) {}

std::string CompactionStreamSplice::Relay(const SseEvent& event) {
  std::string out;
  auto parsed = ParseStrictJson(event.data);
  std::string type;
  if (parsed.ok() && parsed->is_object()) {
    if (const auto it = parsed->find("type"); it != parsed->end() && it->is_string())
      type = it->get<std::string>();
  }
  if (spliced_ && type.starts_with("content_block_")) {
    if (const auto index = parsed->find("index");
        index != parsed->end() && index->is_number_unsigned()) {
      *index = index->get<std::uint64_t>() + 1;
      AppendEvent(out, event.event, parsed->dump());
      return out;
    }
  }
  AppendEvent(out, event.event, event.data);
  if (!spliced_ && type == "message_start") {
    spliced_ = true;
    AppendBlockEvents(out, block_);
  }
  return out;
}

std::string CompactionStreamSplice::operator()(std::string_view bytes) {
  if (broken_)
    return std::string();
  std::vector<SseEvent> events;
  const auto fed = decoder_.Feed(bytes, events);
  std::string out;
  for (const SseEvent& event : events)
    out.append(Relay(event));
  if (!fed.ok()) {
    broken_ = true;
    out.append(GatewayErrorEvent(GatewayWire::kMessages,
                                 UpstreamBroke("event stream broke: " + fed.error().Describe())));
  }
  return out;
}

}  // namespace harness::serve
