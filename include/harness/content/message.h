// The conversation model: messages and the blocks inside them.
//
// Contract:
// - Four message kinds, each with the role it must carry: UserMessage (user), AssistantMessage
//   (assistant, optional Usage), SystemMessage (system), ToolResultMessage (tool, with the id of
//   the call it answers and an error flag). The kind is the role, so a message whose role
//   disagrees with its kind cannot be built. A message may have zero blocks.
// - Blocks are a closed set: text, refusal, image, audio, document, thinking, tool_use and
//   tool_result. A tool_result block holds nested blocks; nesting depth is limited by
//   ValidateTranscript (content/transcript.h) and the codec, not by the type.
// - Values, not pointers: a "null" message or block (the reference's typed nil) cannot exist in
//   memory; the codec refuses `null` where a message or block is expected.
// - Binary payloads (image/audio/document data) are raw bytes; absent differs from empty.
//   Raw JSON fields (tool input, provider state) hold JSON text exactly as it will be written;
//   absent differs from present-but-empty, which is not valid JSON (ValidateTranscript).
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "harness/core/tokens.h"

namespace harness {

enum class Role { kUser, kAssistant, kSystem, kTool };

struct Usage {
  TokenCount input_tokens = 0;
  TokenCount output_tokens = 0;  // includes reasoning_tokens
  TokenCount cache_read_tokens = 0;
  TokenCount cache_creation_tokens = 0;
  TokenCount reasoning_tokens = 0;
  friend bool operator==(const Usage&, const Usage&) = default;
};

struct TextBlock {
  std::string text;
  friend bool operator==(const TextBlock&, const TextBlock&) = default;
};

struct RefusalBlock {
  std::string text;  // may be empty: the refusal itself is the content
  friend bool operator==(const RefusalBlock&, const RefusalBlock&) = default;
};

struct ImageBlock {
  std::string media_type;
  std::string url;
  std::optional<std::string> data;  // raw bytes
  friend bool operator==(const ImageBlock&, const ImageBlock&) = default;
};

struct AudioBlock {
  std::string media_type;
  std::optional<std::string> data;  // raw bytes
  friend bool operator==(const AudioBlock&, const AudioBlock&) = default;
};

struct DocumentBlock {
  std::string media_type;
  std::string name;
  std::optional<std::string> data;  // raw bytes
  std::string text;
  friend bool operator==(const DocumentBlock&, const DocumentBlock&) = default;
};

struct ThinkingBlock {
  std::string thinking;
  std::string signature;
  std::string signature_format;
  std::optional<std::string> provider_state;  // raw JSON text
  std::string provider_state_format;
  friend bool operator==(const ThinkingBlock&, const ThinkingBlock&) = default;
};

struct ToolUseBlock {
  std::string id;
  std::string name;
  std::optional<std::string> input;           // raw JSON text; absent encodes as null
  std::optional<std::string> provider_state;  // raw JSON text
  std::string provider_state_format;
  friend bool operator==(const ToolUseBlock&, const ToolUseBlock&) = default;
};

struct Block;

struct ToolResultBlock {
  std::string tool_use_id;
  std::vector<Block> content;
  bool is_error = false;
  friend bool operator==(const ToolResultBlock&, const ToolResultBlock&);
};

// One block of a kind that is rarely short, on the heap, as a value: copies copy it, == compares
// it. A transcript holds many small text blocks, so a Block is only as large as a text block
// (a string and the variant's index) instead of as large as its largest kind; see Block.
// A moved-from box reads as an empty block (as a moved-from string reads empty).
template <class B>
class Boxed {
 public:
  Boxed(B block) : owned_(std::make_unique<B>(std::move(block))) {}  // NOLINT: implicit
  Boxed(const Boxed& other) : owned_(std::make_unique<B>(other.get())) {}
  Boxed(Boxed&&) noexcept = default;
  Boxed& operator=(const Boxed& other) {
    if (this != &other)
      owned_ = std::make_unique<B>(other.get());
    return *this;
  }
  Boxed& operator=(Boxed&&) noexcept = default;
  ~Boxed() = default;

  const B& get() const {
    if (owned_)
      return *owned_;
    static const B kEmpty{};
    return kEmpty;
  }
  B& get() {
    if (!owned_)
      owned_ = std::make_unique<B>();
    return *owned_;
  }
  friend bool operator==(const Boxed& a, const Boxed& b) { return a.get() == b.get(); }

 private:
  std::unique_ptr<B> owned_;
};

// How Block stores each kind: text and refusal inline (a string each), every other kind boxed.
template <class B>
struct BlockStorage {
  using type = Boxed<B>;
};
template <>
struct BlockStorage<TextBlock> {
  using type = TextBlock;
};
template <>
struct BlockStorage<RefusalBlock> {
  using type = RefusalBlock;
};
template <class B>
using BlockStorageOf = typename BlockStorage<B>::type;

inline const TextBlock& Unboxed(const TextBlock& b) {
  return b;
}
inline const RefusalBlock& Unboxed(const RefusalBlock& b) {
  return b;
}
template <class B>
const B& Unboxed(const Boxed<B>& b) {
  return b.get();
}

// A block of any kind. 40 bytes whatever its kind (the kinds other than text and refusal are
// boxed), so that a transcript of many short blocks costs about its text, not five times it
// (docs/content.md "Limits"). Read it with is/as, or Visit for all kinds; `value` is the
// storage, in the kinds' order (value.index() is the kind).
struct Block {
  using Variant = std::variant<TextBlock, RefusalBlock, Boxed<ImageBlock>, Boxed<AudioBlock>,
                               Boxed<DocumentBlock>, Boxed<ThinkingBlock>, Boxed<ToolUseBlock>,
                               Boxed<ToolResultBlock>>;
  Variant value;

  template <class B>
  requires(!std::is_same_v<std::decay_t<B>, Block> &&
           std::is_constructible_v<Variant, BlockStorageOf<std::decay_t<B>>>) Block(B block)
      : value(std::in_place_type<BlockStorageOf<std::decay_t<B>>>, std::move(block)) {
  }  // NOLINT: a block converts to Block implicitly

  template <class B>
  bool is() const {
    return std::holds_alternative<BlockStorageOf<B>>(value);
  }
  template <class B>
  const B* as() const {
    const auto* stored = std::get_if<BlockStorageOf<B>>(&value);
    return stored == nullptr ? nullptr : &Unboxed(*stored);
  }
  template <class B>
  B* as() {
    auto* stored = std::get_if<BlockStorageOf<B>>(&value);
    if (stored == nullptr)
      return nullptr;
    if constexpr (std::is_same_v<BlockStorageOf<B>, B>)
      return stored;
    else
      return &stored->get();
  }
  // f(const B&) for the block's kind B.
  template <class F>
  decltype(auto) Visit(F&& f) const {
    return std::visit([&f](const auto& stored) -> decltype(auto) { return f(Unboxed(stored)); },
                      value);
  }
  friend bool operator==(const Block&, const Block&) = default;
};

inline bool operator==(const ToolResultBlock& a, const ToolResultBlock& b) {
  return a.tool_use_id == b.tool_use_id && a.is_error == b.is_error && a.content == b.content;
}

struct UserMessage {
  std::vector<Block> blocks;
  friend bool operator==(const UserMessage&, const UserMessage&) = default;
};

struct AssistantMessage {
  std::vector<Block> blocks;
  std::optional<Usage> usage;
  friend bool operator==(const AssistantMessage&, const AssistantMessage&) = default;
};

struct SystemMessage {
  std::vector<Block> blocks;
  friend bool operator==(const SystemMessage&, const SystemMessage&) = default;
};

struct ToolResultMessage {
  std::vector<Block> blocks;
  std::string tool_use_id;
  bool is_error = false;
  friend bool operator==(const ToolResultMessage&, const ToolResultMessage&) = default;
};

struct Message {
  using Variant = std::variant<UserMessage, AssistantMessage, SystemMessage, ToolResultMessage>;
  Variant value;

  template <class M>
  requires(!std::is_same_v<std::decay_t<M>, Message> && std::is_constructible_v<Variant, M>)
      Message(M message)
      : value(std::move(message)) {}  // NOLINT: a message converts implicitly

  Role role() const { return static_cast<Role>(value.index()); }
  const std::vector<Block>& blocks() const;
  template <class M>
  const M* as() const {
    return std::get_if<M>(&value);
  }
  friend bool operator==(const Message&, const Message&) = default;
};

using Transcript = std::vector<Message>;

// Wire names: "user", "assistant", "system", "tool".
const char* RoleName(Role role);

}  // namespace harness
