// Command: the closed union of what a client asks of a session (architecture: "what was asked"),
// and its validation (docs/spec/contracts.md §6, under docs/spec/decisions.md D2).
//
// Contract:
// - Every command has a CommandHeader: its id (the correlation key its reply cites), the session
//   and loop it targets, its agency (User: a person asked; Machine: the runtime asked) and when
//   it was created. A Compact with Agency User opens a Manual attempt, with Machine an Automatic
//   one (CompactionReasonFor, event/compaction.h).
// - The loop is always concrete: Session::Compact resolves "the active loop" before it builds
//   the command, so the journaled intent names the loop actually targeted. Only Shutdown may
//   leave loop_id zero, meaning the whole session.
// - ValidateCommand, first failure wins, CommandValidationError{<type>, <Field>, <rule>}:
//     Compact, Interrupt: CommandID "must be set" -> SessionID "must be set" -> LoopID "must be
//                         set" -> Agency "is invalid" (not Machine or User) -> CreatedAt "must
//                         be set"
//     SubmitInput:        the same, then Message "is invalid" (ValidateMessage fails) ->
//                         Origin "is invalid" (not an InputOrigin, event/lifecycle.h)
//     CancelQueuedInput:  the header as Compact's, then InputCommandID "must be set"
//     CancelDelegateRequest: the header as Compact's, then RequestCommandID "must be set"
//     Compact also:       Instructions "is invalid" when set and CompactInstructionsProblem
//                         names a problem
//     Shutdown:           CommandID -> SessionID -> Agency -> CreatedAt (loop_id free)
//   Steps CommandID..Agency are the reference's order for Compact; CreatedAt and the other
//   commands are ours.
// Thread safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "harness/compaction/input.h"
#include "harness/content/message.h"
#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/event/header.h"
#include "harness/event/lifecycle.h"
#include "harness/event/time.h"

namespace harness {

struct CommandHeader {
  Uuid command_id;
  Uuid session_id;
  Uuid loop_id;
  Agency agency = Agency::kMachine;
  EventTime created_at{};
  friend bool operator==(const CommandHeader&, const CommandHeader&) = default;
};

// Compact the loop's context (manual when Agency User). `instructions` (docs/compact-focus.md):
// what the person asking wants the summary to favour ("focus on the API design"); empty: none.
// `preview` (docs/preview.md): the attempt, if it passes every check, is proposed and waits for
// an approve or a discard instead of committing (a manual attempt only; whatever the policy's
// approval says).
struct Compact {
  static constexpr std::string_view kType = "Compact";
  CommandHeader header;
  std::string instructions;
  bool preview = false;
  friend bool operator==(const Compact&, const Compact&) = default;
};

inline constexpr std::size_t kMaxCompactInstructionsBytes = kMaxCompactionInstructionsBytes;

// Why `instructions` cannot be a Compact's: empty is fine (none); otherwise at most
// kMaxCompactInstructionsBytes of well-formed UTF-8 without control characters other than tab
// and newline, and not blank. nullopt when they can.
std::optional<std::string> CompactInstructionsProblem(std::string_view instructions);

// A user input for the loop: a client's own (kDirect), a request another agent delegates to the
// loop (kDelegateRequest, docs/runtime.md §4: it runs as a turn of its own) or a subagent's
// result (kSubagentResult).
struct SubmitInput {
  static constexpr std::string_view kType = "SubmitInput";
  CommandHeader header;
  UserMessage message;
  InputOrigin origin = InputOrigin::kDirect;
  friend bool operator==(const SubmitInput&, const SubmitInput&) = default;
};

// Withdraw the queued input `input_command_id` (its SubmitInput's id) before its turn takes it.
// Never journaled: the loop answers it with InputCancelled{retracted}, or refuses it.
struct CancelQueuedInput {
  static constexpr std::string_view kType = "CancelQueuedInput";
  CommandHeader header;
  Uuid input_command_id;
  friend bool operator==(const CancelQueuedInput&, const CancelQueuedInput&) = default;
};

// Withdraw the delegate request `request_command_id` (a SubmitInput of origin kDelegateRequest):
// queued, as CancelQueuedInput; running, its turn is cancelled (TurnInterrupted{canceled}).
// Never journaled, as CancelQueuedInput.
struct CancelDelegateRequest {
  static constexpr std::string_view kType = "CancelDelegateRequest";
  CommandHeader header;
  Uuid request_command_id;
  friend bool operator==(const CancelDelegateRequest&, const CancelDelegateRequest&) = default;
};

// Interrupt the loop's running turn (and a pending or running compaction).
struct Interrupt {
  static constexpr std::string_view kType = "Interrupt";
  CommandHeader header;
  friend bool operator==(const Interrupt&, const Interrupt&) = default;
};

// Shut the loop down, or the whole session when loop_id is zero.
struct Shutdown {
  static constexpr std::string_view kType = "Shutdown";
  CommandHeader header;
  friend bool operator==(const Shutdown&, const Shutdown&) = default;
};

using Command = std::variant<Compact, SubmitInput, Interrupt, Shutdown, CancelQueuedInput,
                             CancelDelegateRequest>;

struct CommandValidationError {
  std::string_view command;  // "Compact", …
  // "CommandID", "SessionID", "LoopID", "Agency", "CreatedAt", "Message", "Origin",
  // "InputCommandID", "RequestCommandID"
  std::string_view field;
  FieldRule rule = FieldRule::kIsInvalid;

  // "command: invalid <Command>: <Field> <rule>"
  std::string Message() const;
  friend bool operator==(const CommandValidationError&, const CommandValidationError&) = default;
};

Status<CommandValidationError> ValidateCommand(const Command& command);

std::string_view CommandTypeName(const Command& command);
const CommandHeader& HeaderOf(const Command& command);
CommandHeader& HeaderOf(Command& command);

}  // namespace harness
