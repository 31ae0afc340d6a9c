// The session, loop, input and turn lifecycle events: what the runtime journals so that a loop's
// history, context basis and pending inputs are the fold of its enduring events alone
// (docs/events.md, "Fold rules"). All must be Public.
//
// Identity profiles (event/header.h):
//   session: SessionActive, SessionIdle, ActiveLoopChanged
//   loop:    LoopCreated, LoopHistoryContinued, LoopRequestChanged, InputAccepted, InputQueued,
//            InputRejected, InputCancelled, LoopIdle, LoopExited
//   turn:    TurnStarted, MessageCommitted, TurnCompleted, TurnFailed, TurnInterrupted
// InputQueued is ephemeral; every other event here is enduring.
//
// Body validation, first failure wins, every failure InvalidEventError{<type>, <Field>,
// "is invalid"} (Visibility first everywhere: it must be Public):
//   ActiveLoopChanged: ActiveLoopID non-zero
//   LoopCreated:       Kind (native|foreign) -> Model (ModelKey::Validate) -> CompactionPolicy
//                      (a foreign loop has none) -> SystemPrompt (at most
//                      kMaxSystemPromptBytes) -> Tools (ToolDefinitionProblem of each, names
//                      unique, at most kMaxLoopTools; a foreign loop has none) -> Policy (set only
//                      with CompactionPolicy) -> Compactor (at most kMaxCompactorNameBytes) ->
//                      History (each message ValidateMessage) -> ContinuedHistory (at most
//                      kMaxInitialHistoryMessages - history size) -> MaxStepsPerTurn (1 to
//                      kMaxStepsPerTurn)
//   LoopHistoryContinued: History (1 to kMaxHistoryMessages messages, each ValidateMessage)
//   LoopRequestChanged: Change (at least one member set) -> SystemPrompt (at most
//                      kMaxSystemPromptBytes)
//   InputAccepted:     CommandID (cause.command_id) non-zero -> Message (ValidateMessage) ->
//                      Origin valid
//   InputQueued:       CommandID non-zero
//   InputRejected:     CommandID non-zero -> Reason valid
//   InputCancelled:    CommandID non-zero -> Reason valid
//   LoopExited:        Reason valid
//   MessageCommitted:  Message (ValidateMessage) -> InputCommandID (when set, the message must be
//                      a user message)
//   TurnFailed:        Reason valid -> Detail (at most 4096 bytes) -> Context (only for
//                      context_limit, coverage_insufficient, pinned_too_large and
//                      summary_too_large; input_limit non-zero and input_tokens reaching it) ->
//                      Steps (only for step_limit; limit 1 to kMaxStepsPerTurn and made reaching
//                      it)
//   TurnInterrupted:   Reason valid
//   SessionActive, SessionIdle, TurnStarted, TurnCompleted, LoopIdle: nothing beyond Visibility.
// Enum wire values are fixed; 0 is the unset sentinel and invalid everywhere. InputAccepted's
// origin is written only when it is not kDirect (absent: kDirect, as in every journal written
// before inputs had an origin). TurnFailReason
// alone travels as its lower-snake name (TurnFailReasonName), the string every journal has held.
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/compaction/policy.h"
#include "harness/content/message.h"
#include "harness/core/model_key.h"
#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/event/header.h"
#include "harness/inference/request.h"

namespace harness {

// Messages in LoopCreated.history (or LoopHistoryContinued.history) the decoder accepts.
inline constexpr std::size_t kMaxHistoryMessages = 100'000;
// Messages in a loop's whole initial history (LoopCreated and its continuations). A 64 MiB
// transcript cannot hold more: every message takes more than 16 bytes.
inline constexpr std::size_t kMaxInitialHistoryMessages = 4u * 1024 * 1024;
// Model calls one turn of a native loop may make: what a LoopCreated without max_steps_per_turn
// means (every journal written before the member existed), and the most it may record.
inline constexpr std::uint64_t kDefaultMaxStepsPerTurn = 64;
inline constexpr std::uint64_t kMaxStepsPerTurn = 1'000'000;
// A loop's system prompt; it travels in LoopCreated and LoopRequestChanged, which also carry
// their header and (LoopCreated) history within one record.
inline constexpr std::size_t kMaxSystemPromptBytes = 1u * 1024 * 1024;
// A loop's tools as LoopCreated records them: what every provider accepts (a name of 1 to 64
// characters of A-Z a-z 0-9 _ -), and room for 128 tools of the largest description and schema
// in one record with the largest system prompt.
inline constexpr std::size_t kMaxLoopTools = 128;
inline constexpr std::size_t kMaxToolNameBytes = 64;
inline constexpr std::size_t kMaxToolDescriptionBytes = 16 * 1024;
inline constexpr std::size_t kMaxToolSchemaBytes = 64 * 1024;
// How the application names a loop's compactor (LoopCreated.compactor).
inline constexpr std::size_t kMaxCompactorNameBytes = 256;
inline constexpr std::size_t kMaxTurnFailureDetailBytes = 4096;

enum class LoopKind : std::uint8_t {
  kUnspecified = 0,
  kNative = 1,   // driven by this runtime: turns, tools, compaction
  kForeign = 2,  // another engine drives it; it cannot be compacted
};
enum class InputRejectReason : std::uint8_t {
  kUnspecified = 0,
  kQueueFull = 1,     // the loop's input queue holds 64 inputs
  kShuttingDown = 2,  // the loop is shutting down
};
// Who an input is from (docs/runtime.md §4). A delegate request and its turn stand apart: it is
// never folded into a running turn, nothing is folded into its turn, and CancelDelegateRequest
// withdraws it queued or cancels its turn.
enum class InputOrigin : std::uint8_t {
  kUnspecified = 0,
  kDirect = 1,           // a client's input for the loop itself (a person's or a program's)
  kDelegateRequest = 2,  // a managed request another agent delegated to this loop
  kSubagentResult = 3,   // the result a subagent of this loop sends back
};
enum class InputCancelReason : std::uint8_t {
  kUnspecified = 0,
  kRetracted = 1,     // the client withdrew a queued input
  kInterrupted = 2,   // an interrupt dropped a queued machine input
  kShuttingDown = 3,  // the loop exited with the input still queued
};
enum class TurnInterruptReason : std::uint8_t {
  kUnspecified = 0,
  kInterrupted = 1,
  kShuttingDown = 2,
  kCanceled = 3,
  kRestored = 4,  // synthesized on restore for a turn the journal left open
};
enum class LoopExitReason : std::uint8_t {
  kUnspecified = 0,
  kShutdown = 1,
  kFaulted = 2,
};
// Why a turn failed. On the wire it is its name ("context_limit", ...), not its number: the
// names are what journals have always held, so each earlier TurnFailed decodes to its reason.
enum class TurnFailReason : std::uint8_t {
  kUnspecified = 0,
  kContextLimit = 1,            // the request reaches the model's input limit
  kContextLimitUnknown = 2,     // the model's input limit is not known, so nothing can be sent
  kContextCountFailed = 3,      // the request could not be counted
  kModelError = 4,              // the model call failed (the detail is the InferenceError)
  kInvalidModelOutput = 5,      // the model's answer is not a valid assistant message
  kStepLimit = 6,               // the turn made the loop's max_steps_per_turn model calls
  kCompactionFinalization = 7,  // a compaction's outcome could not be journaled
  kCoverageInsufficient = 8,    // an enforced coverage rejection left the request at the limit
  kPinnedTooLarge = 9,          // the pinned messages left no room and the request is at the limit
  kSummaryTooLarge = 10,        // the compacted request still reaches the input limit
};

// Lower-snake names ("native", "queue_full", "retracted", "restored", "faulted", …); "" for
// values outside the domain (0 included).
std::string_view LoopKindName(LoopKind kind);
std::string_view InputRejectReasonName(InputRejectReason reason);
std::string_view InputCancelReasonName(InputCancelReason reason);
// "direct", "delegate_request", "subagent_result".
std::string_view InputOriginName(InputOrigin origin);
std::string_view TurnInterruptReasonName(TurnInterruptReason reason);
std::string_view LoopExitReasonName(LoopExitReason reason);
// "context_limit", "step_limit", …; "" outside the domain. FromName is its inverse: nullopt for
// any other string ("" included).
std::string_view TurnFailReasonName(TurnFailReason reason);
std::optional<TurnFailReason> TurnFailReasonFromName(std::string_view name);

// Why `tool` cannot be recorded in a LoopCreated ("the name … is not 1 to 64 characters of
// A-Z a-z 0-9 _ -", "the input schema is not a JSON object", …), or nullopt when it can. The
// input schema must be a strict JSON object (core/json.h) of at most kMaxToolSchemaBytes; it is
// recorded as its text, byte for byte what the provider is sent.
std::optional<std::string> ToolDefinitionProblem(const ToolDefinition& tool);
// 1 to kMaxToolNameBytes characters of A-Z a-z 0-9 _ -.
bool IsToolName(std::string_view name);

// --- session profile -------------------------------------------------------------------------

struct SessionActive {
  static constexpr std::string_view kType = "SessionActive";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kSession;
  EventHeader header;
  friend bool operator==(const SessionActive&, const SessionActive&) = default;
};

struct SessionIdle {
  static constexpr std::string_view kType = "SessionIdle";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kSession;
  EventHeader header;
  friend bool operator==(const SessionIdle&, const SessionIdle&) = default;
};

// The loop Session::Compact and input routing target from now on.
struct ActiveLoopChanged {
  static constexpr std::string_view kType = "ActiveLoopChanged";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kSession;
  EventHeader header;
  Uuid active_loop_id;
  friend bool operator==(const ActiveLoopChanged&, const ActiveLoopChanged&) = default;
};

// --- loop profile ----------------------------------------------------------------------------

// The first event of a loop: what the loop is and what its requests start from.
// `system_prompt` is the loop's system prompt ("" for none). The initial history (an imported
// transcript, for example; empty for a fresh loop) is `history` followed by the histories of the
// `continued_history` messages' LoopHistoryContinued events, which the runtime appends in the
// same journal batch right after this event (LoopCreationEvents), so that an initial history is
// not bounded by one record's size.
// What a restore needs to rebuild the loop as it was made: its `tools`' definitions, its
// compaction `policy` (set exactly when compaction_policy is), `compactor`, the name its
// application gave the loop's compactor ("" for none), and `max_steps_per_turn`, the model calls
// one turn may make. Each is written only when set (max_steps_per_turn only when it is not
// kDefaultMaxStepsPerTurn), so a LoopCreated of a journal written before they existed decodes
// with none of them and the default step limit.
struct LoopCreated {
  static constexpr std::string_view kType = "LoopCreated";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;
  EventHeader header;
  LoopKind kind = LoopKind::kUnspecified;
  ModelKey model;
  bool compaction_policy = false;  // a compaction policy is configured
  std::string system_prompt;
  std::vector<ToolDefinition> tools;
  std::optional<CompactionPolicy> policy;
  std::string compactor;
  std::vector<Message> history;
  std::uint64_t continued_history = 0;  // messages in the LoopHistoryContinued events that follow
  std::uint64_t max_steps_per_turn = kDefaultMaxStepsPerTurn;
  friend bool operator==(const LoopCreated&, const LoopCreated&) = default;
};

// The next part of a loop's initial history, right after its LoopCreated (or the previous
// continuation) in the same journal batch.
struct LoopHistoryContinued {
  static constexpr std::string_view kType = "LoopHistoryContinued";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;
  EventHeader header;
  std::vector<Message> history;
  friend bool operator==(const LoopHistoryContinued&, const LoopHistoryContinued&) = default;
};

// A change of what the loop's model requests are made with, from the next request on. Each
// member that is set replaces the loop's current value; an unset one leaves it. One event for
// every part of a request's shape that a loop's creator chose (its system prompt today), so that
// a later part is a new optional member, not a new event.
struct LoopRequestChanged {
  static constexpr std::string_view kType = "LoopRequestChanged";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;
  EventHeader header;
  std::optional<std::string> system_prompt;  // set: the new system prompt ("" removes it)
  friend bool operator==(const LoopRequestChanged&, const LoopRequestChanged&) = default;
};

// A user input the loop accepted: it is queued (or taken at once) and will reach the history
// through a MessageCommitted naming it. header.cause.command_id is the SubmitInput command;
// `origin` is the SubmitInput's.
struct InputAccepted {
  static constexpr std::string_view kType = "InputAccepted";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;
  EventHeader header;
  UserMessage message;
  InputOrigin origin = InputOrigin::kDirect;
  friend bool operator==(const InputAccepted&, const InputAccepted&) = default;
};

// Live signal: the accepted input waits because a compaction occupies the loop's slot.
struct InputQueued {
  static constexpr std::string_view kType = "InputQueued";
  static constexpr EventClass kClass = EventClass::kEphemeral;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;
  EventHeader header;
  friend bool operator==(const InputQueued&, const InputQueued&) = default;
};

// The reply to a SubmitInput the loop refused (header.cause.command_id).
struct InputRejected {
  static constexpr std::string_view kType = "InputRejected";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;
  EventHeader header;
  InputRejectReason reason = InputRejectReason::kUnspecified;
  friend bool operator==(const InputRejected&, const InputRejected&) = default;
};

// A pending (accepted, not yet committed) input left the queue without reaching the history.
struct InputCancelled {
  static constexpr std::string_view kType = "InputCancelled";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;
  EventHeader header;
  InputCancelReason reason = InputCancelReason::kUnspecified;
  friend bool operator==(const InputCancelled&, const InputCancelled&) = default;
};

struct LoopIdle {
  static constexpr std::string_view kType = "LoopIdle";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;
  EventHeader header;
  friend bool operator==(const LoopIdle&, const LoopIdle&) = default;
};

struct LoopExited {
  static constexpr std::string_view kType = "LoopExited";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kLoop;
  EventHeader header;
  LoopExitReason reason = LoopExitReason::kUnspecified;
  friend bool operator==(const LoopExited&, const LoopExited&) = default;
};

// --- turn profile ----------------------------------------------------------------------------

struct TurnStarted {
  static constexpr std::string_view kType = "TurnStarted";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kTurn;
  EventHeader header;
  friend bool operator==(const TurnStarted&, const TurnStarted&) = default;
};

// One message appended to the loop's history: the user input the turn takes (input_command_id
// names the InputAccepted it consumes), an assistant reply, a tool result.
struct MessageCommitted {
  static constexpr std::string_view kType = "MessageCommitted";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kTurn;
  EventHeader header;
  Message message = UserMessage{};
  Uuid input_command_id;  // zero unless the message is an accepted input
  friend bool operator==(const MessageCommitted&, const MessageCommitted&) = default;
};

struct TurnCompleted {
  static constexpr std::string_view kType = "TurnCompleted";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kTurn;
  EventHeader header;
  friend bool operator==(const TurnCompleted&, const TurnCompleted&) = default;
};

// A turn's request against the model's input limit when it failed for its size.
struct TurnFailedContext {
  TokenCount input_tokens = 0;
  TokenCount input_limit = 0;
  friend bool operator==(const TurnFailedContext&, const TurnFailedContext&) = default;
};
// A turn's model calls against the loop's max_steps_per_turn when it failed for their number.
struct TurnFailedSteps {
  std::uint64_t made = 0;
  std::uint64_t limit = 0;
  friend bool operator==(const TurnFailedSteps&, const TurnFailedSteps&) = default;
};

// A turn that ended without its answer, and why. The measurement behind the reason travels with
// it where the reason has one: `context` for the size failures, `steps` for step_limit. Both are
// written only when set, so a TurnFailed without them is byte for byte what the codec wrote
// before they existed, and decodes with neither.
struct TurnFailed {
  static constexpr std::string_view kType = "TurnFailed";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kTurn;
  EventHeader header;
  TurnFailReason reason = TurnFailReason::kUnspecified;
  std::string detail;  // human-readable, bounded; never model output or transcript bytes
  std::optional<TurnFailedContext> context = std::nullopt;
  std::optional<TurnFailedSteps> steps = std::nullopt;
  friend bool operator==(const TurnFailed&, const TurnFailed&) = default;
};

struct TurnInterrupted {
  static constexpr std::string_view kType = "TurnInterrupted";
  static constexpr EventClass kClass = EventClass::kEnduring;
  static constexpr IdentityProfile kProfile = IdentityProfile::kTurn;
  EventHeader header;
  TurnInterruptReason reason = TurnInterruptReason::kUnspecified;
  friend bool operator==(const TurnInterrupted&, const TurnInterrupted&) = default;
};

Status<InvalidEventError> ValidateBody(const SessionActive& event);
Status<InvalidEventError> ValidateBody(const SessionIdle& event);
Status<InvalidEventError> ValidateBody(const ActiveLoopChanged& event);
Status<InvalidEventError> ValidateBody(const LoopCreated& event);
Status<InvalidEventError> ValidateBody(const LoopHistoryContinued& event);
Status<InvalidEventError> ValidateBody(const LoopRequestChanged& event);
Status<InvalidEventError> ValidateBody(const InputAccepted& event);
Status<InvalidEventError> ValidateBody(const InputQueued& event);
Status<InvalidEventError> ValidateBody(const InputRejected& event);
Status<InvalidEventError> ValidateBody(const InputCancelled& event);
Status<InvalidEventError> ValidateBody(const LoopIdle& event);
Status<InvalidEventError> ValidateBody(const LoopExited& event);
Status<InvalidEventError> ValidateBody(const TurnStarted& event);
Status<InvalidEventError> ValidateBody(const MessageCommitted& event);
Status<InvalidEventError> ValidateBody(const TurnCompleted& event);
Status<InvalidEventError> ValidateBody(const TurnFailed& event);
Status<InvalidEventError> ValidateBody(const TurnInterrupted& event);

}  // namespace harness
