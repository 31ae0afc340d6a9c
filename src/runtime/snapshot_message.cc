// The binary form of a message in a version-2 snapshot (runtime/snapshot_message.h,
// docs/spec/snapshots.md §2).
#include "runtime/snapshot_message.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "harness/content/codec.h"
#include "harness/content/transcript.h"
#include "harness/core/utf8.h"

namespace harness::runtime_detail {

namespace {

using Writer = SnapshotBytesWriter;
using Reader = SnapshotBytesReader;

// The block kinds in Block::Variant's order, so a block's kind byte is its variant index.
enum BlockKind : std::uint8_t {
  kTextKind,
  kRefusalKind,
  kImageKind,
  kAudioKind,
  kDocumentKind,
  kThinkingKind,
  kToolUseKind,
  kToolResultKind,
};
constexpr std::uint8_t kLastBlockKind = kToolResultKind;
static_assert(std::variant_size_v<Block::Variant> == kLastBlockKind + 1);
constexpr std::uint8_t kLastRole = static_cast<std::uint8_t>(Role::kTool);
// The shortest block: its kind and one length (a text block).
constexpr std::size_t kMinBlockBytes = 1 + 8;

// --- writing --------------------------------------------------------------------------------

void PutText(Writer& w, std::string_view text) {
  if (IsWellFormedUtf8(text)) {
    w.Bytes(text);
    return;
  }
  std::string replaced;
  AppendReplacingIllFormedUtf8(replaced, text);
  w.Bytes(replaced);
}

// Raw bytes (data) and raw JSON (checked by ValidateMessage) are written as they are.
void PutOptionalBytes(Writer& w, const std::optional<std::string>& bytes) {
  w.Bool(bytes.has_value());
  if (bytes)
    w.Bytes(*bytes);
}

void PutBlocks(Writer& w, const std::vector<Block>& blocks);

void PutBlock(Writer& w, const Block& block) {
  w.U8(static_cast<std::uint8_t>(block.value.index()));
  block.Visit([&w](const auto& b) {
    using B = std::decay_t<decltype(b)>;
    if constexpr (std::is_same_v<B, TextBlock> || std::is_same_v<B, RefusalBlock>) {
      PutText(w, b.text);
    } else if constexpr (std::is_same_v<B, ImageBlock>) {
      PutText(w, b.media_type);
      PutText(w, b.url);
      PutOptionalBytes(w, b.data);
    } else if constexpr (std::is_same_v<B, AudioBlock>) {
      PutText(w, b.media_type);
      PutOptionalBytes(w, b.data);
    } else if constexpr (std::is_same_v<B, DocumentBlock>) {
      PutText(w, b.media_type);
      PutText(w, b.name);
      PutOptionalBytes(w, b.data);
      PutText(w, b.text);
    } else if constexpr (std::is_same_v<B, ThinkingBlock>) {
      PutText(w, b.thinking);
      PutText(w, b.signature);
      PutText(w, b.signature_format);
      PutOptionalBytes(w, b.provider_state);
      PutText(w, b.provider_state_format);
    } else if constexpr (std::is_same_v<B, ToolUseBlock>) {
      PutText(w, b.id);
      PutText(w, b.name);
      PutOptionalBytes(w, b.input);
      PutOptionalBytes(w, b.provider_state);
      PutText(w, b.provider_state_format);
    } else {
      static_assert(std::is_same_v<B, ToolResultBlock>);
      PutText(w, b.tool_use_id);
      PutBlocks(w, b.content);
      w.Bool(b.is_error);
    }
  });
}

void PutBlocks(Writer& w, const std::vector<Block>& blocks) {
  w.U64(blocks.size());
  for (const Block& block : blocks)
    PutBlock(w, block);
}

// --- reading --------------------------------------------------------------------------------

Result<std::string, SnapshotError> GetText(Reader& r, std::string_view what) {
  HARNESS_TRY(std::string_view bytes, r.Bytes(what));
  if (!IsWellFormedUtf8(bytes))
    return Fail(Malformed(std::string(what) + " is not well-formed UTF-8"));
  return std::string(bytes);
}

Result<std::optional<std::string>, SnapshotError> GetOptionalBytes(Reader& r,
                                                                   std::string_view what) {
  HARNESS_TRY(bool present, r.Bool(what));
  if (!present)
    return std::optional<std::string>();
  HARNESS_TRY(std::string_view bytes, r.Bytes(what));
  return std::optional<std::string>(std::string(bytes));
}

// A provider_state the content codec reads back is absent or not empty.
Result<std::optional<std::string>, SnapshotError> GetProviderState(Reader& r) {
  HARNESS_TRY(std::optional<std::string> state, GetOptionalBytes(r, "a provider state"));
  if (state && state->empty())
    return Fail(Malformed("a provider state is present and empty"));
  return state;
}

Result<std::vector<Block>, SnapshotError> GetBlocks(Reader& r, std::size_t depth);

Result<Block, SnapshotError> GetBlock(Reader& r, std::size_t depth) {
  HARNESS_TRY(std::uint8_t kind, r.Enum("a block kind", kLastBlockKind));
  switch (static_cast<BlockKind>(kind)) {
    case kTextKind: {
      HARNESS_TRY(std::string text, GetText(r, "a text block"));
      return Block(TextBlock{std::move(text)});
    }
    case kRefusalKind: {
      HARNESS_TRY(std::string text, GetText(r, "a refusal block"));
      return Block(RefusalBlock{std::move(text)});
    }
    case kImageKind: {
      ImageBlock b;
      HARNESS_TRY(b.media_type, GetText(r, "an image's media type"));
      HARNESS_TRY(b.url, GetText(r, "an image's url"));
      HARNESS_TRY(b.data, GetOptionalBytes(r, "an image's data"));
      return Block(std::move(b));
    }
    case kAudioKind: {
      AudioBlock b;
      HARNESS_TRY(b.media_type, GetText(r, "an audio's media type"));
      HARNESS_TRY(b.data, GetOptionalBytes(r, "an audio's data"));
      return Block(std::move(b));
    }
    case kDocumentKind: {
      DocumentBlock b;
      HARNESS_TRY(b.media_type, GetText(r, "a document's media type"));
      HARNESS_TRY(b.name, GetText(r, "a document's name"));
      HARNESS_TRY(b.data, GetOptionalBytes(r, "a document's data"));
      HARNESS_TRY(b.text, GetText(r, "a document's text"));
      return Block(std::move(b));
    }
    case kThinkingKind: {
      ThinkingBlock b;
      HARNESS_TRY(b.thinking, GetText(r, "a thinking block"));
      HARNESS_TRY(b.signature, GetText(r, "a thinking signature"));
      HARNESS_TRY(b.signature_format, GetText(r, "a thinking signature format"));
      HARNESS_TRY(b.provider_state, GetProviderState(r));
      HARNESS_TRY(b.provider_state_format, GetText(r, "a provider state format"));
      return Block(std::move(b));
    }
    case kToolUseKind: {
      ToolUseBlock b;
      HARNESS_TRY(b.id, GetText(r, "a tool use id"));
      HARNESS_TRY(b.name, GetText(r, "a tool name"));
      HARNESS_TRY(b.input, GetOptionalBytes(r, "a tool input"));
      if (b.input && *b.input == "null")
        return Fail(Malformed("a tool input is present and null"));
      HARNESS_TRY(b.provider_state, GetProviderState(r));
      HARNESS_TRY(b.provider_state_format, GetText(r, "a provider state format"));
      return Block(std::move(b));
    }
    case kToolResultKind: {
      ToolResultBlock b;
      HARNESS_TRY(b.tool_use_id, GetText(r, "a tool result's call id"));
      HARNESS_TRY(b.content, GetBlocks(r, depth + 1));
      HARNESS_TRY(b.is_error, r.Bool("a tool result's error flag"));
      return Block(std::move(b));
    }
  }
  return Fail(Malformed("a block kind is outside its domain"));
}

Result<std::vector<Block>, SnapshotError> GetBlocks(Reader& r, std::size_t depth) {
  // Before anything is read: the recursion below is as deep as the content codec admits.
  if (depth > kMaxToolResultDepth)
    return Fail(Malformed("tool result blocks nest deeper than kMaxToolResultDepth"));
  return r.List("blocks", kMinBlockBytes, [&] { return GetBlock(r, depth); });
}

Result<Message, SnapshotError> GetMessageOfRole(Reader& r, Role role) {
  HARNESS_TRY(std::vector<Block> blocks, GetBlocks(r, 0));
  switch (role) {
    case Role::kUser:
      return Message(UserMessage{std::move(blocks)});
    case Role::kSystem:
      return Message(SystemMessage{std::move(blocks)});
    case Role::kAssistant: {
      AssistantMessage m{std::move(blocks), std::nullopt};
      HARNESS_TRY(bool billed, r.Bool("usage"));
      if (billed) {
        Usage u;
        for (TokenCount* count : {&u.input_tokens, &u.output_tokens, &u.cache_read_tokens,
                                  &u.cache_creation_tokens, &u.reasoning_tokens}) {
          HARNESS_TRY(*count, r.U64("usage"));
        }
        m.usage = u;
      }
      return Message(std::move(m));
    }
    case Role::kTool: {
      ToolResultMessage m;
      m.blocks = std::move(blocks);
      HARNESS_TRY(m.tool_use_id, GetText(r, "a tool message's call id"));
      HARNESS_TRY(m.is_error, r.Bool("a tool message's error flag"));
      return Message(std::move(m));
    }
  }
  return Fail(Malformed("a role is outside its domain"));
}

}  // namespace

void PutSnapshotMessage(Writer& w, const Message& message) {
  w.U8(static_cast<std::uint8_t>(message.role()));
  PutBlocks(w, message.blocks());
  if (const auto* assistant = message.as<AssistantMessage>()) {
    w.Bool(assistant->usage.has_value());
    if (const auto& u = assistant->usage) {
      for (TokenCount count : {u->input_tokens, u->output_tokens, u->cache_read_tokens,
                               u->cache_creation_tokens, u->reasoning_tokens})
        w.U64(count);
    }
  } else if (const auto* tool = message.as<ToolResultMessage>()) {
    PutText(w, tool->tool_use_id);
    w.Bool(tool->is_error);
  }
}

Result<Message, SnapshotError> GetSnapshotMessage(Reader& r) {
  HARNESS_TRY(std::uint8_t role, r.Enum("a message's role", kLastRole));
  HARNESS_TRY(Message message, GetMessageOfRole(r, static_cast<Role>(role)));
  if (!ValidateMessage(message).ok())
    return Fail(Malformed("a message's raw JSON is not strict JSON"));
  return message;
}

// --- MessagesOut and MessagesIn -----------------------------------------------------------

Status<SnapshotError> MessagesOut::Put(Writer& w, const Message& message) {
  if (version_ == 1) {
    auto json = EncodeMessage(message);
    if (!json)
      return Fail(Malformed("a message does not encode"));
    w.Bytes(*json);
    return {};
  }
  Writer one;
  PutSnapshotMessage(one, message);
  std::string bytes = std::move(one).Take();
  auto [it, added] = index_.try_emplace(std::move(bytes), Entry{order_.size(), 0});
  if (added) {
    // Checked once per distinct message: the decoder reads back what this writes.
    if (!ValidateMessage(message).ok()) {
      index_.erase(it);
      return Fail(Malformed("a message does not encode"));
    }
    order_.push_back(&*it);
  }
  ++it->second.citations;
  w.U32(static_cast<std::uint32_t>(it->second.index));
  return {};
}

Status<SnapshotError> MessagesOut::PutHistory(Writer& w, const std::vector<Message>& history) {
  if (version_ == 1) {
    auto json = EncodeTranscript(history);
    if (!json)
      return Fail(Malformed("a history does not encode"));
    w.Bytes(*json);
    return {};
  }
  w.U64(history.size());
  for (const Message& message : history)
    HARNESS_CHECK(Put(w, message));
  return {};
}

void MessagesOut::PutTable(Writer& w) const {
  w.U64(order_.size());
  for (const auto* entry : order_) {
    w.U32(entry->second.citations);
    w.Raw(entry->first);
  }
}

Status<SnapshotError> MessagesIn::GetTable(Reader& r) {
  HARNESS_TRY(std::size_t n, r.Count("messages", 4 + kMinSnapshotMessageBytes));
  table_.reserve(n);
  left_.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    HARNESS_TRY(std::uint64_t citations, r.Fixed(4, "a message's citations"));
    if (citations == 0)
      return Fail(Malformed("a message of the table is cited by nothing"));
    HARNESS_TRY(Message message, GetSnapshotMessage(r));
    table_.push_back(std::move(message));
    left_.push_back(static_cast<std::uint32_t>(citations));
  }
  return {};
}

Result<Message, SnapshotError> MessagesIn::Get(Reader& r, std::string_view what) {
  if (version_ == 1) {
    HARNESS_TRY(std::string_view json, r.Bytes(what));
    auto message = DecodeMessage(json, TranscriptLimits{json.size(), 1});
    if (!message)
      return Fail(Malformed(std::string(what) + " does not decode as a message"));
    return std::move(*message);
  }
  HARNESS_TRY(std::uint64_t index, r.Fixed(4, what));
  if (index >= table_.size())
    return Fail(Malformed(std::string(what) + " cites a message the table does not hold"));
  // The table is in the order of first citation, so one state has one encoding.
  if (index > first_uncited_)
    return Fail(Malformed("the table's messages are not in the order they are first cited"));
  if (index == first_uncited_)
    ++first_uncited_;
  if (left_[index] == 0)
    return Fail(Malformed("a message is cited more often than the table says"));
  // The last citation takes the message; the others copy it (a copy, not a parse).
  if (--left_[index] == 0)
    return std::move(table_[index]);
  return table_[index];
}

Result<std::vector<Message>, SnapshotError> MessagesIn::GetHistory(Reader& r,
                                                                   std::string_view what) {
  if (version_ == 1) {
    HARNESS_TRY(std::string_view json, r.Bytes(what));
    auto history = DecodeTranscript(json, TranscriptLimits{json.size(), json.size()});
    if (!history)
      return Fail(Malformed(std::string(what) + " does not decode as a transcript"));
    return std::move(*history);
  }
  return r.List(what, 4, [&] { return Get(r, what); });
}

Status<SnapshotError> MessagesIn::CheckAllCited() const {
  for (std::uint32_t left : left_) {
    if (left != 0)
      return Fail(Malformed("a message is cited less often than the table says"));
  }
  return {};
}

}  // namespace harness::runtime_detail
