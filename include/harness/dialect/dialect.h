// The providers' conversation formats read into harness and written back out
// (docs/spec/dialects.md): OpenAI Chat Completions `messages`, OpenAI Responses `input` items and
// Anthropic Messages `system` + `messages`. Pure functions, no I/O.
//
// Contract of the readers (ReadOpenAiChat, ReadOpenAiResponses, ReadAnthropicMessages):
// - The input is either the array itself (Chat `messages`, Responses `input`, Anthropic
//   `messages`) or a request body, a JSON object holding it (`messages`, `input`; Anthropic's
//   optional `system`); the body's other members (model, tools, ...) are not read.
// - Each element of the array is an element of the conversation, in order: its exact text as
//   sent (DialectElement::json, byte for byte), and which harness messages it became: the range
//   [first_message, first_message + message_count) of DialectConversation::transcript. Several
//   consecutive Responses items of one assistant step share one assistant message; an Anthropic
//   user message of tool results becomes one tool message per result. An element the harness
//   cannot read (encrypted reasoning, a provider-side tool call) is opaque: message_count 0,
//   first_message the message it sits before or within, and it travels verbatim. Parts of a
//   read element that the transcript has no place for are counted in opaque_parts.
//   docs/spec/dialects.md has the table of what becomes what, what is opaque and what is refused.
// - Every message of the transcript passes ValidateMessage (content/transcript.h); an input
//   with no readable element gives an empty transcript. Anthropic's `system` member is not in
//   the transcript: it is DialectConversation::system (its text) and system_json (as sent).
// - Bad input is a DialectError, never a crash or an exception: the element index, the JSONPath
//   of the offending value and a rule in words a user can act on, quoting at most a few bytes of
//   the input. Strict JSON (core/json.h: no duplicate members, valid UTF-8); at most
//   limits.max_bytes (checked first), limits.max_elements elements and limits.max_depth levels
//   of nesting (checked while parsing). No code path recurses with the input's depth. Memory:
//   the text, its DOM and the conversation read from it.
// - Reading is deterministic.
//
// Contract of the writers (WriteOpenAiChat, WriteOpenAiResponses, WriteAnthropicMessages): the
// JSON array of the dialect: `head` (harness messages, e.g. a compaction's summary, or a whole
// harness transcript) written fresh in the dialect's shape, then `retained`, elements of a read
// conversation, each exactly as it was sent. Writing fresh follows the provider wires' block
// rules (provider/openai_wire.h, provider/anthropic_wire.h) for Chat and Messages, and
// docs/spec/dialects.md for Responses; a block that has no form in the dialect is a
// DialectError (kUnsupported) naming the message index. Reading what a writer wrote gives the
// same transcript as reading the retained elements and the head did.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "harness/content/message.h"
#include "harness/content/transcript.h"
#include "harness/core/result.h"

namespace harness {

enum class Dialect { kOpenAiChat, kOpenAiResponses, kAnthropicMessages };

// Wire names: "openai-chat", "openai-responses", "anthropic-messages".
std::string_view DialectName(Dialect dialect);

enum class DialectErrorKind {
  kJson,         // not strict JSON (syntax, UTF-8, a duplicate member, too deep)
  kShape,        // a member missing, of the wrong type or with a value the dialect does not define
  kUnsupported,  // a valid element the harness refuses (it cannot keep it faithfully)
  kLimit,        // over limits.max_bytes or limits.max_elements
};

// Wire names: "json", "shape", "unsupported", "limit".
std::string_view DialectErrorKindName(DialectErrorKind kind);

struct DialectError {
  static constexpr std::size_t kNoElement = static_cast<std::size_t>(-1);

  DialectErrorKind kind;
  std::size_t element = kNoElement;  // index in the array; kNoElement for the document
  std::string path;                  // JSONPath from the input's root: "$.messages[3].content"
  std::string rule;                  // what is wrong, in words a user can act on

  // "element <n>: <path>: <rule>", or "<path>: <rule>" for the document.
  std::string Describe() const;
};

struct DialectLimits {
  std::size_t max_bytes = 16u * 1024 * 1024;
  std::size_t max_elements = 100'000;
  // Nesting of the whole input: a tool input as deep as a transcript allows (kMaxRawJsonDepth)
  // and the levels of the request around it.
  std::size_t max_depth = kMaxRawJsonDepth + 16;
};

struct DialectElement {
  std::string json;  // the element exactly as sent
  std::string kind;  // the role or item/type it was read as ("user", "function_call", ...)
  std::size_t first_message = 0;
  std::size_t message_count = 0;  // 0: opaque, kept only as json
  std::size_t opaque_parts = 0;   // parts (blocks, content parts) kept only as json
  friend bool operator==(const DialectElement&, const DialectElement&) = default;
};

struct DialectConversation {
  Dialect dialect = Dialect::kOpenAiChat;
  std::string system;                      // Anthropic `system` as text (blocks joined by "\n")
  std::optional<std::string> system_json;  // Anthropic `system` exactly as sent
  Transcript transcript;
  std::vector<DialectElement> elements;
};

Result<DialectConversation, DialectError> ReadOpenAiChat(std::string_view json,
                                                         const DialectLimits& limits = {});
Result<DialectConversation, DialectError> ReadOpenAiResponses(std::string_view json,
                                                              const DialectLimits& limits = {});
Result<DialectConversation, DialectError> ReadAnthropicMessages(std::string_view json,
                                                                const DialectLimits& limits = {});
Result<DialectConversation, DialectError> ReadDialect(Dialect dialect, std::string_view json,
                                                      const DialectLimits& limits = {});

// The index of the first element that starts at transcript message `message` or later, so
// that elements [index, end) hold exactly the messages [message, end) (and the opaque elements
// among them); nullopt when `message` falls inside an element (a cut there cannot be written
// verbatim). `message` == transcript.size() gives the index of the trailing opaque elements.
// Elements [ElementStartingAt(a), ElementStartingAt(b)) hold exactly the messages [a, b).
std::optional<std::size_t> ElementStartingAt(const DialectConversation& conversation,
                                             std::size_t message);
// The index of the first element that became transcript message `message` (for an error that
// names a message: the element to name to the user); nullopt when there is no such message.
std::optional<std::size_t> ElementHolding(const DialectConversation& conversation,
                                          std::size_t message);

// `system` (when not empty) is written first as a system message (Chat) or a system message
// item (Responses); Anthropic's system prompt is a member of its own (WriteAnthropicSystem).
Result<std::string, DialectError> WriteOpenAiChat(std::string_view system, const Transcript& head,
                                                  std::span<const DialectElement> retained = {});
Result<std::string, DialectError> WriteOpenAiResponses(
    std::string_view system, const Transcript& head, std::span<const DialectElement> retained = {});
Result<std::string, DialectError> WriteAnthropicMessages(
    const Transcript& head, std::span<const DialectElement> retained = {});
// The value of Anthropic's `system` member for a system prompt: a JSON string.
std::string WriteAnthropicSystem(std::string_view system);

}  // namespace harness
