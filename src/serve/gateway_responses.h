// The OpenAI Responses side of the gateway (docs/spec/gateway.md "POST /v1/responses" and
// "POST /v1/responses/compact"): what both Responses handlers read from a request, and the
// compaction item harness writes into a response and reads back from a later request.
//
// Contract:
// - The compaction item is {"type":"compaction","id":"cmp_<48 hex>","encrypted_content":TEXT}
//   with TEXT readable JSON: {"harness_compaction":1,"summary":"<conversation_summary>…",
//   "items":[…]}, `items` the Responses input items that replace every item up to and with the
//   compaction item (the summary as a user message, then the retained items as they were sent).
//   The id's hex is the start of the SHA-256 of TEXT, a checksum and not a signature: it tells
//   an item harness wrote from another server's (OpenAI's encrypted one) or one edited since,
//   not from one forged on purpose (the conversation is the caller's to change anyway).
//   ReadCompactionItem checks all of it: the item's three members (and created_by, which it
//   ignores), the id, TEXT's exact members, a summary that ParseSummary accepts and an array of
//   items; any failure is a sentence a user can act on, quoting no more than a few bytes. Strict
//   JSON throughout, depth and size bounded.
// - ReadResponsesInput reads a request body's `input` (a string, or an array of items) with the
//   Responses dialect, `instructions` as the system prompt; when the input holds compaction
//   items, the last one must be harness's, and it and every item before it are replaced by the
//   items it carries (earlier compaction items go with them). `rewritten` says so: the input
//   must then be sent as `items`, not as the caller wrote it.
// - ReadCompactThreshold reads `context_management`: absent or null, none; else an array of at
//   most 8 entries of which one may be {"type":"compaction","compact_threshold":N} (N from 1 to
//   kMaxCompactThreshold); another type is refused, as is a second compaction entry.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/internal/json_dom.h"
#include "harness/core/result.h"
#include "harness/http/sse.h"
#include "serve/api.h"
#include "serve/conversation_compact.h"
#include "serve/gateway.h"

namespace harness::serve {

inline constexpr std::uint64_t kMaxCompactThreshold = 100'000'000;

struct CarriedCompaction {
  std::string summary;
  std::string items;  // a JSON array of Responses input items
};

std::string EncodeCompactionItem(const CarriedCompaction& carried);
Result<CarriedCompaction, std::string> ReadCompactionItem(std::string_view item);

struct ResponsesInput {
  DialectConversation conversation;  // read from `items`
  std::string items;                 // the input items, a JSON array
  std::string system;                // `instructions`
  bool rewritten = false;            // a compaction item was replaced by what it carries
};

// The body parsed (strict JSON, bounded) as an object, or the wire's invalid_json error.
Result<Json, GatewayError> ParseResponsesBody(GatewayWire wire, std::string_view body);
// `body` parsed from `text` (ParseResponsesBody).
Result<ResponsesInput, GatewayError> ReadResponsesInput(GatewayWire wire, const Json& body,
                                                        std::string_view text);
Result<std::optional<std::uint64_t>, GatewayError> ReadCompactThreshold(GatewayWire wire,
                                                                        const Json& body);

// A compaction request of a Responses body for CompactHeldConversationParts: the input read as
// above, the offline compactor, `store` (absent: journal_by_default). previous_response_id and
// conversation are refused: harness keeps no responses to continue from.
Result<ConversationCompactRequest, GatewayError> ReadResponsesCompaction(GatewayWire wire,
                                                                         std::string_view body,
                                                                         bool journal_by_default);
Result<ConversationCompactRequest, GatewayError> CompactionOfInput(GatewayWire wire,
                                                                   const Json& body,
                                                                   ResponsesInput input,
                                                                   bool journal_by_default);

// Rewrites an upstream's Responses event stream, piece by piece as it arrives, so that the
// compaction item is its first output item: announced (output_item.added, output_item.done at
// output_index 0) after the first event, every later event's output_index one more and its
// sequence_number two more (where it has them), and every response snapshot's output led by the
// item. An event whose data is not a JSON object passes as it came (its framing rewritten); past
// the SSE decoder's bounds the rest passes byte for byte. Memory: one event at a time.
class CompactionItemInStream {
 public:
  explicit CompactionItemInStream(Json item);
  std::string operator()(std::string_view bytes);

 private:
  static std::string Frame(std::string_view name, const std::string& data);
  std::string Rewrite(const SseEvent& event);

  Json item_;
  SseDecoder decoder_;
  bool injected_ = false;
  bool broken_ = false;
};

// {"input_tokens":N,"input_tokens_details":{"cached_tokens":0},"output_tokens":M,
//  "output_tokens_details":{"reasoning_tokens":0},"total_tokens":N+M}
std::string ResponsesUsage(std::uint64_t input_tokens, std::uint64_t output_tokens);
// {"summary":…,"retained_items":N,"retained_verbatim":B[,"session_id":…,"loop_id":…]}: what
// harness did, for a person and the inspector (clients ignore a member they do not know).
std::string HarnessCompactionMember(const HeldCompaction& held);

}  // namespace harness::serve
