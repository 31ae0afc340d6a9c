// CompactConversation: one manual compaction of a conversation an application holds itself,
// in one call (docs/embedding.md). The caller gives messages and options and gets back the
// messages that replace them; it writes no event loop.
//
// Contract:
// - The call runs the runtime's own path, nothing beside it: it opens a Session on
//   `request.journal` (none: an in-memory journal the call owns and drops, so nothing is left
//   behind), creates one loop whose history is `request.messages`, pins the messages
//   `request.pins` names, sends CompactToLoop with `request.instructions` and waits for the
//   command's reply. Admission, tail selection, the compactor, validation, coverage, the
//   post-replacement count and the durable commit are the loop's (docs/runtime.md). The session
//   is then suspended, so a stored one is restorable: `harness sessions`, `harness compact
//   --session`, the inspector's preview and undo read and change it as any other.
// - Committed: CompactedConversation. `messages` is the replacement, in order: the summary
//   message, the messages kept with it because they are pinned (or a pinned message's tool-call
//   partners), then the retained tail, exactly the history the loop holds after the commit
//   (ReplacementMessages). `summary` is the summary's text; `report` says what changed.
// - Every other ending is a CompactFailure, and nothing is installed: the history in a stored
//   journal stays the messages as given.
//   kInvalidRequest: refused before any session or journal record exists: a pin index outside
//     the messages (or over kMaxPinnedMessages pins), instructions CompactInstructionsProblem
//     refuses, or a loop definition the runtime refuses (CheckLoopDefinition: a policy
//     ValidatePolicy refuses, a message too large for a journal record, a system prompt that is
//     not UTF-8). `session` holds the runtime's error when it was the one that refused.
//   kRefused: the runtime refused a step (the journal's lease or an append, a pin): `session`.
//   kRejected: the compaction ran and was rejected: `reason` (the reply's CompactRejectReason),
//     `detail` when the runtime said why, `invalid_summary` for an invalid summary,
//     `compactor_error` when the compactor failed, `coverage` for coverage_insufficient.
//   kUnanswered: the runtime failed before the command's reply (`runtime_failures`).
//   `message` is one line a user can act on; it never holds message content.
// - `request.stop` interrupts the compaction (Session::Interrupt): rejected `interrupted`.
// - `request.on_event` sees every event of the session in the order published, on the calling
//   thread, before the call returns; the loop's creation events (which carry the whole
//   history) only when it is set.
// - ObservedCompactor wraps a compactor and remembers what its last call failed with (the rule an
//   invalid summary broke, which CompactionRejected does not carry; an output whose identity
//   differs from the input's counts as invalid_summary identity, and a summary that fails the
//   grammar as the rule it broke, as the runtime rejects both) and the estimated tokens
//   (EstimateMessageTokens) of the last transcript it was given.
// - CompactOnlyModelClient is the model client of a loop that only compacts: a manual
//   compaction runs no turn, and a turn asked of it is refused.
// Thread safety: concurrent calls are independent (each has its own session; two calls on one
// journal hold two sessions). The request's compactor, counter and journal must be
// thread-safe, as the runtime's are.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "harness/compaction/compactor.h"
#include "harness/compaction/coverage.h"
#include "harness/compaction/policy.h"
#include "harness/compaction/reasons.h"
#include "harness/compaction/reject_detail.h"
#include "harness/content/message.h"
#include "harness/context/limits.h"
#include "harness/context/measurement.h"
#include "harness/core/env.h"
#include "harness/core/model_key.h"
#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/event/event.h"
#include "harness/inference/client.h"
#include "harness/inference/counter.h"
#include "harness/journal/journal.h"
#include "harness/runtime/host.h"
#include "harness/runtime/session.h"
#include "harness/summary/invalid_summary.h"

namespace harness {

struct CompactRequest {
  std::vector<Message> messages;  // the conversation, oldest first; starts with a user message
  std::string system_prompt;      // what the model requests are made with (counted, kept)
  ModelKey model{"harness", "offline"};  // the conversation's model (the counter's, the summary's)
  ModelLimits limits;                    // the model's window and output: required
  CompactionPolicy policy;  // keep-recent targets, summary budget, coverage mode: all explicit
  std::shared_ptr<ContextCounter> counter;  // null: EstimateCounter (policy needs a margin then)
  std::shared_ptr<Compactor> compactor;     // null: the offline ExtractiveCompactor
  std::string compactor_name;               // journaled with the loop ("" none)
  std::string instructions;                 // for the summarizer (docs/compact-focus.md)
  std::vector<std::size_t> pins;            // indexes into `messages` kept verbatim (pins.md)
  Journal* journal = nullptr;   // where the session is stored; null: in memory, dropped after
  Env* env = nullptr;           // time and ids; null: a SystemEnv of the call's own
  SessionHost* host = nullptr;  // threads shared with other sessions; null: the session's own
  std::stop_token stop;         // requested: the compaction is interrupted
  std::function<void(const Event&)> on_event;  // optional: every event, as it is delivered
};

struct CompactionReport {
  std::size_t messages_before = 0;
  std::optional<ContextMeasurement> before;  // the loop's measurement before the compaction
  ContextMeasurement after;                  // the request after it (post_context)
  std::size_t retained = 0;                  // retained tail messages (not the pinned ones)
  std::size_t pinned = 0;                    // messages kept because pinned (or partners)
  std::size_t shortened = 0;                 // blocks of the tail shortened to fit
  std::optional<CoverageReport> coverage;    // absent when coverage is off
  std::uint32_t repaired = 0;                // anchors coverage repair wrote into the summary
  std::optional<TokenCount> summarizer_input_tokens;  // what the compactor read, estimated
  std::chrono::nanoseconds waited{0};  // from the Compact request to its reply (Env's clock)
};

// Where a stored compaction is: the session, its loop and the Compact command.
struct StoredCompaction {
  Uuid session;
  Uuid loop;
  Uuid command;
};

struct CompactedConversation {
  std::vector<Message> messages;  // the replacement history, in order
  std::string summary;            // the summary's text
  CompactionReport report;
  CompactionCommitted committed;           // the commit as journaled
  std::optional<StoredCompaction> stored;  // set when request.journal was given
};

enum class CompactFailureKind : std::uint8_t {
  kInvalidRequest = 1,
  kRefused = 2,
  kRejected = 3,
  kUnanswered = 4,
};

// "invalid_request", "refused", "rejected", "unanswered"
std::string_view CompactFailureKindName(CompactFailureKind kind);

struct CompactFailure {
  CompactFailureKind kind = CompactFailureKind::kInvalidRequest;
  std::string message;  // one line for a user: what happened and what to change
  std::optional<SessionError> session;
  std::optional<CompactRejectReason> reason;
  std::optional<CompactRejectDetail> detail;
  std::optional<InvalidSummaryReason> invalid_summary;
  std::optional<CompactorError> compactor_error;
  std::optional<CoverageReport> coverage;
  std::optional<ContextMeasurement> before;
  std::optional<StoredCompaction> stored;  // a stored session's ids, once it exists
  std::string runtime_failures;            // kUnanswered: "<kind>: <detail>; …"
  std::chrono::nanoseconds waited{0};      // from the Compact request to the end of the wait
};

class ObservedCompactor final : public Compactor {
 public:
  explicit ObservedCompactor(std::shared_ptr<Compactor> inner) : inner_(std::move(inner)) {}

  Result<CompactionOutput, CompactorError> Compact(const CompactionInput& input,
                                                   std::stop_token stop) override;
  std::optional<TokenCount> InputBudget() const override { return inner_->InputBudget(); }
  std::optional<CompactorError> last_error() const;
  std::optional<TokenCount> last_input_tokens() const;

 private:
  std::shared_ptr<Compactor> inner_;
  mutable std::mutex mutex_;
  std::optional<CompactorError> last_error_;
  std::optional<std::string> last_summary_;  // a summary returned, parsed by last_error()
  std::optional<TokenCount> last_input_tokens_;
};

class CompactOnlyModelClient final : public ModelClient {
 public:
  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest&,
                                                     std::stop_token) override;
};

// The history a commit installs: the summary, the pinned messages, the retained tail.
std::vector<Message> ReplacementMessages(const CompactionCommitted& committed);

Result<CompactedConversation, CompactFailure> CompactConversation(CompactRequest request);

}  // namespace harness
