// What the three dialects share (module-private): where a value is, typed reads of untrusted
// members that fail with a DialectError at that place, the split of a request into its
// elements' exact texts, and the writer of a dialect's array.
// Thread safety: pure functions; a ConversationBuilder is used by one thread.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/content/data_url.h"
#include "harness/dialect/dialect.h"

namespace harness::dialect_internal {

// Where a value is: the element it belongs to and its JSONPath from the input's root.
struct At {
  std::size_t element = DialectError::kNoElement;
  std::string path = "$";

  At Member(std::string_view name) const;
  At Element(std::size_t index) const;
};

Failure<DialectError> Error(DialectErrorKind kind, const At& at, std::string rule);
Failure<DialectError> ShapeError(const At& at, std::string rule);
// "<what> of type \"<type>\" is not supported: <why>"
Failure<DialectError> Unsupported(const At& at, std::string_view what, std::string_view type,
                                  std::string_view why);

// "unknown role <role>: <which roles the dialect has>", at the role member of `at`.
Failure<DialectError> UnknownRole(const At& at, std::string_view role, std::string_view roles);

// Member `name` of `object` (an object), or nullptr when absent; `null` counts as absent.
const Json* Find(const Json& object, std::string_view name);
Result<std::string, DialectError> RequireString(const Json& object, const At& at,
                                                std::string_view name);
Result<std::optional<std::string>, DialectError> OptionalString(const Json& object, const At& at,
                                                                std::string_view name);
Result<const Json*, DialectError> RequireMember(const Json& object, const At& at,
                                                std::string_view name);
Result<const Json*, DialectError> OptionalArray(const Json& object, const At& at,
                                                std::string_view name);
Result<bool, DialectError> OptionalBool(const Json& object, const At& at, std::string_view name);
// `value` must be an object (the dialects' elements, parts and blocks all are).
Status<DialectError> RequireObject(const Json& value, const At& at, std::string_view what);

// Content that is a string (one text block) or an array of parts, each an object with a
// "type": `read` turns each part into a block.
using PartReader = std::function<Result<Block, DialectError>(const Json& part, const At& at,
                                                             const std::string& type)>;
Result<std::vector<Block>, DialectError> ReadParts(const Json& content, const At& at,
                                                   const PartReader& read);

// A tool input sent as a JSON value (Anthropic): compact text, no deeper than kMaxRawJsonDepth.
Result<std::string, DialectError> ToolInputFromValue(const Json& value, const At& at);
// A tool input sent as text (OpenAI "arguments"): compact JSON when the text is strict JSON no
// deeper than kMaxRawJsonDepth, else the text as a JSON string, so nothing of it is lost.
std::string ToolInputFromText(std::string_view text);

// The request read: the document's DOM, the array of elements and each element's exact text.
struct Request {
  Json document;
  const Json* member = nullptr;  // the array when it is a member of the body; nullptr: the root
  const Json& array() const { return member != nullptr ? *member : document; }
  std::string array_path = "$";            // "$" or "$.messages"
  std::vector<std::string_view> elements;  // into the caller's text
  const Json* system = nullptr;            // the body's `system` member, when asked for
  std::string_view system_text;
};

// Parses `text` within `limits`: the array itself, or an object with the array as member
// `member` (and, when `system_member` is not empty, that member's value and text).
Result<Request, DialectError> ReadRequest(std::string_view text, const DialectLimits& limits,
                                          std::string_view member,
                                          std::string_view system_member = {});

// Builds a conversation element by element.
class ConversationBuilder {
 public:
  ConversationBuilder(Dialect dialect, std::string array_path)
      : array_path_(std::move(array_path)) {
    out_.dialect = dialect;
  }

  DialectConversation& conversation() { return out_; }
  // Starts the next element with its exact text.
  void Begin(std::string_view json);
  // What the current element was read as (its role or item type).
  void Name(std::string kind) { out_.elements.back().kind = std::move(kind); }
  // Adds a message to the current element.
  void Add(Message message);
  // Adds blocks to the assistant message of the current step (started by an earlier element of
  // the same step, or now), so that one step of several elements is one assistant message.
  void AddToStep(std::vector<Block> blocks);
  // The current element becomes part of the open step without adding to it (opaque items
  // between the items of a step).
  void JoinStep();
  // Ends the current assistant step: the next AddToStep starts a new message.
  void EndStep() { step_open_ = false; }
  void CountOpaquePart() { ++out_.elements.back().opaque_parts; }

  Result<DialectConversation, DialectError> Finish();

 private:
  std::string array_path_;
  DialectConversation out_;
  bool step_open_ = false;
};

// One element of each dialect (openai_chat.cc, openai_responses.cc, anthropic_messages.cc), and
// Messages' `system` as text.
Status<DialectError> ChatElement(const Json& message, const At& at, ConversationBuilder& out);
Status<DialectError> ResponsesElement(const Json& item, const At& at, ConversationBuilder& out);
Status<DialectError> AnthropicElement(const Json& message, const At& at, ConversationBuilder& out);
Result<std::string, DialectError> AnthropicSystem(const Json& system, const At& at);

// The head as the Chat Completions wire writes it (EncodeOpenAiChatRequest): its "messages",
// `system` first. A block with no form is kUnsupported, the rule naming `target`.
Result<Json, DialectError> EncodeChatMessages(std::string_view system, const Transcript& head,
                                              std::string_view target);

// The exact text of member `member` (an array) of a request body a provider encoder wrote;
// "[]" when it has none.
std::string ArrayOfBody(std::string_view body, std::string_view member);

// Reads one element (an object) at `at` into `out`, whose current element it is.
using ElementReader = std::function<Status<DialectError>(const Json& element, const At& at,
                                                         ConversationBuilder& out)>;
// Reads the system member of a request body (`system_member` of ReadConversation).
using SystemReader = std::function<Status<DialectError>(const Json& system, std::string_view text,
                                                        DialectConversation& out)>;

// A dialect's reader: the request (ReadRequest), then every element in order.
Result<DialectConversation, DialectError> ReadConversation(Dialect dialect, std::string_view text,
                                                           const DialectLimits& limits,
                                                           std::string_view member,
                                                           const ElementReader& element,
                                                           std::string_view system_member = {},
                                                           const SystemReader& system = {});

// `[` head written by `write_head` (a JSON array's text, may be "[]"), then every retained
// element's exact text, `]`.
std::string JoinArray(std::string_view head_array, std::span<const DialectElement> retained);

}  // namespace harness::dialect_internal
