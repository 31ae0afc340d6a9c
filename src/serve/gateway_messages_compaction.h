// Anthropic Messages compaction at the gateway: the pure parts of `POST /v1/messages` with the
// `compact_20260112` context-management edit (docs/spec/gateway.md "POST /v1/messages").
//
// Contract:
// - ReadMessagesGatewayRequest reads a Messages request body (strict JSON, within `limits`):
//   its `model`, `stream`, the `compact_20260112` edit of `context_management.edits` (trigger
//   {type "input_tokens", value >= 1}, instructions, pause_after_compaction; every other member
//   of the edit refused, two such edits refused; other edits are kept for the upstream) and its
//   conversation (`system` + `messages`, read with the Anthropic dialect reader, dialect.h).
// - A request that carries `compaction` blocks resumes from the last one: the messages before the
//   message holding it, and that message's blocks before it, are dropped. In their place comes
//   the replacement the gateway stored in the block's `encrypted_content` when it wrote the
//   block (the summary message and the retained elements, each exactly as the compaction wrote
//   them); then the blocks after it (an assistant message) and the later messages as sent.
//   MessagesGatewayRequest::messages is that array; conversation is it read.
// - Undo: a block whose journaled compaction `undone` says was undone is not resumed from: it is
//   removed from its message (a message left without blocks is dropped) and the previous block
//   is considered in its place; with none left the conversation is the messages as sent
//   without those blocks.
// - The gateway only resumes from blocks it wrote: a compaction block whose `encrypted_content`
//   is not a gateway marker (a provider's block, a failed compaction's null content), or whose
//   summary or marker was changed after the gateway wrote it (the marker's SHA-256 no longer
//   matches), one with a member Anthropic does not define, or a compaction block in a user
//   message, is refused with an invalid_request_error (code invalid_compaction_block) naming the
//   block's JSONPath. Earlier compaction blocks are dropped with what they sit in.
// - UpstreamMessagesBody is the body the upstream gets: the original bytes when neither a
//   compaction edit nor a compaction block was read; otherwise every member of the body in order
//   and re-encoded (same values), the compaction edit removed from `context_management.edits`
//   (`context_management` removed when nothing else is left in it), and `messages` replaced by
//   the given array text.
// - CompactionDue: the request's input tokens exceed the edit's trigger.
// - CompactionBlockJson is `{"type":"compaction","content":summary,"encrypted_content":marker}`;
//   the marker is a JSON text: the format (`harness_compaction` 1), the session the compaction is
//   journaled as (or null), the replacement's elements as JSON strings of their exact text, and
//   the SHA-256 of the summary, the session and the elements (length-prefixed, so no two carries
//   hash alike). It is an integrity check against edits and foreign blocks, not a secret: a
//   caller that writes its own marker only misleads its own conversation.
// - CarryOfReplacement reads the replacement a compaction wrote in the Anthropic shape
//   (CompactHeldConversationParts' `messages`, conversation_compact.h) into the carry its block
//   stores: every element exactly as written, and the session the compaction is journaled as.
// - PrependCompactionBlock puts the block first in a Messages answer's `content` (the answer
//   re-encoded); PausedAnswer / PausedStream are the answer of a paused compaction: the block
//   alone, stop_reason "compaction", no upstream call.
// - CompactionStreamSplice relays a Messages event stream with the block spliced in first: the
//   block's three events right after message_start, and every later content_block_* event's
//   `index` one higher; every other event passes with its name and data as received. Memory is
//   bounded by the SSE decoder's limits: a stream that breaks them ends, for the client, with an
//   `error` event (api_error), and nothing after it is relayed.
// - Every failure is a GatewayError of the Messages wire (gateway.h): a status, an Anthropic
//   error type (invalid_request_error, request_too_large, api_error) and a message a user can act
//   on that quotes at most a few bytes of the input. No function throws or recurses with the
//   input's depth.
// Thread safety: pure functions; a CompactionStreamSplice is used by one thread at a time.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/result.h"
#include "harness/core/tokens.h"
#include "harness/core/uuid.h"
#include "harness/dialect/dialect.h"
#include "harness/http/sse.h"
#include "serve/gateway.h"

namespace harness::serve {

inline constexpr std::string_view kCompactEditType = "compact_20260112";
inline constexpr TokenCount kDefaultCompactTrigger = 150'000;

struct CompactEdit {
  TokenCount trigger = kDefaultCompactTrigger;
  std::string instructions;
  bool pause_after_compaction = false;
};

// What a gateway compaction block carries besides its summary.
struct CompactionCarry {
  std::optional<Uuid> session;  // the journaled compaction; none when not stored
  // The replacement: the summary message, then the retained elements, each exactly as written.
  std::vector<std::string> replacement;
  friend bool operator==(const CompactionCarry&, const CompactionCarry&) = default;
};

std::string EncodeCompactionMarker(std::string_view summary, const CompactionCarry& carry);
// The carry, or the rule the marker breaks.
Result<CompactionCarry, std::string> DecodeCompactionMarker(std::string_view summary,
                                                            std::string_view marker);
std::string CompactionBlockJson(std::string_view summary, const CompactionCarry& carry);

struct MessagesGatewayRequest {
  std::string model;  // "" when absent (the upstream says so)
  bool stream = false;
  std::optional<CompactEdit> edit;
  // Set when the request resumed from a compaction block: the messages the upstream gets.
  std::optional<std::string> messages;
  std::optional<std::size_t> resumed_at;  // the index of the message holding that block
  std::optional<CompactionCarry> carried;
  std::vector<Uuid> undone;          // the sessions of the compaction blocks dropped as undone
  DialectConversation conversation;  // the conversation the upstream gets, read
};

// Whether the compaction journaled as `session` was undone since (docs/undo.md).
using UndoneCompaction = std::function<bool(const Uuid& session)>;

Result<MessagesGatewayRequest, GatewayError> ReadMessagesGatewayRequest(
    std::string_view body, const DialectLimits& limits = {}, const UndoneCompaction& undone = {});

// `messages`: the array to send; nullopt: the request's own (MessagesGatewayRequest::messages
// when it resumed, else the body's).
std::string UpstreamMessagesBody(std::string_view body, const MessagesGatewayRequest& request,
                                 std::optional<std::string_view> messages = std::nullopt);

bool CompactionDue(TokenCount input_tokens, const CompactEdit& edit);

Result<CompactionCarry, GatewayError> CarryOfReplacement(std::string_view messages,
                                                         std::optional<Uuid> session);

Result<std::string, GatewayError> PrependCompactionBlock(std::string_view answer,
                                                         std::string_view block);
std::string PausedAnswer(std::string_view id, std::string_view model, std::string_view block,
                         TokenCount input_tokens);
std::string PausedStream(std::string_view id, std::string_view model, std::string_view block,
                         TokenCount input_tokens);

class CompactionStreamSplice {
 public:
  explicit CompactionStreamSplice(std::string block, SseLimits limits = {});
  // The bytes to send for `bytes` of the upstream's stream.
  std::string operator()(std::string_view bytes);

 private:
  std::string Relay(const SseEvent& event);

  std::string block_;
  SseDecoder decoder_;
  bool spliced_ = false;
  bool broken_ = false;
};

}  // namespace harness::serve
