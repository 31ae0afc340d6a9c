#include "harness/event/lifecycle.h"

#include <algorithm>
#include <set>

#include "core/internal/json_dom.h"
#include "harness/content/transcript.h"
#include "harness/core/utf8.h"

namespace harness {
namespace {

template <class E>
Failure<InvalidEventError> Invalid(std::string_view field) {
  return Fail(InvalidEventError{E::kType, field, FieldRule::kIsInvalid, std::nullopt});
}

// Visibility, the one rule every lifecycle event shares.
template <class E>
Status<InvalidEventError> CheckPublic(const E& event) {
  if (event.header.visibility != Visibility::kPublic)
    return Invalid<E>("Visibility");
  return {};
}

template <class E>
Status<InvalidEventError> CheckCommand(const E& event) {
  HARNESS_CHECK(CheckPublic(event));
  if (event.header.cause.command_id.IsZero())
    return Invalid<E>("CommandID");
  return {};
}

template <class E>
Status<InvalidEventError> CheckHistory(const std::vector<Message>& history) {
  for (const Message& message : history) {
    if (!ValidateMessage(message).ok())
      return Invalid<E>("History");
  }
  return {};
}

bool IsToolNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

Status<InvalidEventError> CheckTools(const LoopCreated& e) {
  if (e.tools.size() > kMaxLoopTools || (e.kind == LoopKind::kForeign && !e.tools.empty()))
    return Invalid<LoopCreated>("Tools");
  std::set<std::string_view> names;
  for (const ToolDefinition& tool : e.tools) {
    if (ToolDefinitionProblem(tool) || !names.insert(tool.name).second)
      return Invalid<LoopCreated>("Tools");
  }
  return {};
}

// The reasons a failure for the request's size names, and so the only ones a context may go with.
bool MeasuresContext(TurnFailReason reason) {
  return reason == TurnFailReason::kContextLimit ||
         reason == TurnFailReason::kCoverageInsufficient ||
         reason == TurnFailReason::kPinnedTooLarge || reason == TurnFailReason::kSummaryTooLarge;
}

}  // namespace

bool IsToolName(std::string_view name) {
  return !name.empty() && name.size() <= kMaxToolNameBytes &&
         std::all_of(name.begin(), name.end(), IsToolNameChar);
}

std::optional<std::string> ToolDefinitionProblem(const ToolDefinition& tool) {
  if (!IsToolName(tool.name)) {
    return "the name " + QuoteForDetail(tool.name, kMaxToolNameBytes) + " is not 1 to " +
           std::to_string(kMaxToolNameBytes) + " characters of A-Z a-z 0-9 _ -";
  }
  if (tool.description.size() > kMaxToolDescriptionBytes) {
    return "the description of " + tool.name + " is over " +
           std::to_string(kMaxToolDescriptionBytes) + " bytes";
  }
  if (!IsWellFormedUtf8(tool.description))
    return "the description of " + tool.name + " is not UTF-8";
  if (tool.input_schema.size() > kMaxToolSchemaBytes) {
    return "the input schema of " + tool.name + " is over " + std::to_string(kMaxToolSchemaBytes) +
           " bytes";
  }
  auto schema = ParseStrictJson(tool.input_schema, JsonLimits{kMaxToolSchemaBytes, 512});
  if (!schema.ok() || !schema->is_object())
    return "the input schema of " + tool.name + " is not a JSON object";
  return std::nullopt;
}

std::string_view LoopKindName(LoopKind kind) {
  switch (kind) {
    case LoopKind::kNative:
      return "native";
    case LoopKind::kForeign:
      return "foreign";
    case LoopKind::kUnspecified:
      break;
  }
  return "";
}

std::string_view InputRejectReasonName(InputRejectReason reason) {
  switch (reason) {
    case InputRejectReason::kQueueFull:
      return "queue_full";
    case InputRejectReason::kShuttingDown:
      return "shutting_down";
    case InputRejectReason::kUnspecified:
      break;
  }
  return "";
}

std::string_view InputCancelReasonName(InputCancelReason reason) {
  switch (reason) {
    case InputCancelReason::kRetracted:
      return "retracted";
    case InputCancelReason::kInterrupted:
      return "interrupted";
    case InputCancelReason::kShuttingDown:
      return "shutting_down";
    case InputCancelReason::kUnspecified:
      break;
  }
  return "";
}

std::string_view InputOriginName(InputOrigin origin) {
  switch (origin) {
    case InputOrigin::kDirect:
      return "direct";
    case InputOrigin::kDelegateRequest:
      return "delegate_request";
    case InputOrigin::kSubagentResult:
      return "subagent_result";
    case InputOrigin::kUnspecified:
      break;
  }
  return "";
}

std::string_view TurnFailReasonName(TurnFailReason reason) {
  switch (reason) {
    case TurnFailReason::kContextLimit:
      return "context_limit";
    case TurnFailReason::kContextLimitUnknown:
      return "context_limit_unknown";
    case TurnFailReason::kContextCountFailed:
      return "context_count_failed";
    case TurnFailReason::kModelError:
      return "model_error";
    case TurnFailReason::kInvalidModelOutput:
      return "invalid_model_output";
    case TurnFailReason::kStepLimit:
      return "step_limit";
    case TurnFailReason::kCompactionFinalization:
      return "compaction_finalization";
    case TurnFailReason::kCoverageInsufficient:
      return "coverage_insufficient";
    case TurnFailReason::kPinnedTooLarge:
      return "pinned_too_large";
    case TurnFailReason::kSummaryTooLarge:
      return "summary_too_large";
    case TurnFailReason::kUnspecified:
      break;
  }
  return "";
}

std::optional<TurnFailReason> TurnFailReasonFromName(std::string_view name) {
  for (std::uint8_t raw = 1; raw <= static_cast<std::uint8_t>(TurnFailReason::kSummaryTooLarge);
       ++raw) {
    const auto reason = static_cast<TurnFailReason>(raw);
    if (!name.empty() && TurnFailReasonName(reason) == name)
      return reason;
  }
  return std::nullopt;
}

std::string_view TurnInterruptReasonName(TurnInterruptReason reason) {
  switch (reason) {
    case TurnInterruptReason::kInterrupted:
      return "interrupted";
    case TurnInterruptReason::kShuttingDown:
      return "shutting_down";
    case TurnInterruptReason::kCanceled:
      return "canceled";
    case TurnInterruptReason::kRestored:
      return "restored";
    case TurnInterruptReason::kUnspecified:
      break;
  }
  return "";
}

std::string_view LoopExitReasonName(LoopExitReason reason) {
  switch (reason) {
    case LoopExitReason::kShutdown:
      return "shutdown";
    case LoopExitReason::kFaulted:
      return "faulted";
    case LoopExitReason::kUnspecified:
      break;
  }
  return "";
}

Status<InvalidEventError> ValidateBody(const SessionActive& e) {
  return CheckPublic(e);
}
Status<InvalidEventError> ValidateBody(const SessionIdle& e) {
  return CheckPublic(e);
}

Status<InvalidEventError> ValidateBody(const ActiveLoopChanged& e) {
  HARNESS_CHECK(CheckPublic(e));
  if (e.active_loop_id.IsZero())
    return Invalid<ActiveLoopChanged>("ActiveLoopID");
  return {};
}

Status<InvalidEventError> ValidateBody(const LoopCreated& e) {
  using E = LoopCreated;
  HARNESS_CHECK(CheckPublic(e));
  if (LoopKindName(e.kind).empty())
    return Invalid<E>("Kind");
  if (!e.model.Validate().ok())
    return Invalid<E>("Model");
  if (e.kind == LoopKind::kForeign && e.compaction_policy)
    return Invalid<E>("CompactionPolicy");
  if (e.system_prompt.size() > kMaxSystemPromptBytes)
    return Invalid<E>("SystemPrompt");
  HARNESS_CHECK(CheckTools(e));
  if (e.policy.has_value() && !e.compaction_policy)
    return Invalid<E>("Policy");
  if (e.compactor.size() > kMaxCompactorNameBytes || !IsWellFormedUtf8(e.compactor))
    return Invalid<E>("Compactor");
  HARNESS_CHECK(CheckHistory<E>(e.history));
  if (e.history.size() > kMaxInitialHistoryMessages ||
      e.continued_history > kMaxInitialHistoryMessages - e.history.size())
    return Invalid<E>("ContinuedHistory");
  if (e.max_steps_per_turn == 0 || e.max_steps_per_turn > kMaxStepsPerTurn)
    return Invalid<E>("MaxStepsPerTurn");
  return {};
}

Status<InvalidEventError> ValidateBody(const LoopHistoryContinued& e) {
  using E = LoopHistoryContinued;
  HARNESS_CHECK(CheckPublic(e));
  if (e.history.empty() || e.history.size() > kMaxHistoryMessages)
    return Invalid<E>("History");
  return CheckHistory<E>(e.history);
}

Status<InvalidEventError> ValidateBody(const LoopRequestChanged& e) {
  using E = LoopRequestChanged;
  HARNESS_CHECK(CheckPublic(e));
  if (!e.system_prompt)
    return Invalid<E>("Change");
  if (e.system_prompt->size() > kMaxSystemPromptBytes)
    return Invalid<E>("SystemPrompt");
  return {};
}

Status<InvalidEventError> ValidateBody(const InputAccepted& e) {
  HARNESS_CHECK(CheckCommand(e));
  if (!ValidateMessage(e.message).ok())
    return Invalid<InputAccepted>("Message");
  if (InputOriginName(e.origin).empty())
    return Invalid<InputAccepted>("Origin");
  return {};
}

Status<InvalidEventError> ValidateBody(const InputQueued& e) {
  return CheckCommand(e);
}

Status<InvalidEventError> ValidateBody(const InputRejected& e) {
  HARNESS_CHECK(CheckCommand(e));
  if (InputRejectReasonName(e.reason).empty())
    return Invalid<InputRejected>("Reason");
  return {};
}

Status<InvalidEventError> ValidateBody(const InputCancelled& e) {
  HARNESS_CHECK(CheckCommand(e));
  if (InputCancelReasonName(e.reason).empty())
    return Invalid<InputCancelled>("Reason");
  return {};
}

Status<InvalidEventError> ValidateBody(const LoopIdle& e) {
  return CheckPublic(e);
}

Status<InvalidEventError> ValidateBody(const LoopExited& e) {
  HARNESS_CHECK(CheckPublic(e));
  if (LoopExitReasonName(e.reason).empty())
    return Invalid<LoopExited>("Reason");
  return {};
}

Status<InvalidEventError> ValidateBody(const TurnStarted& e) {
  return CheckPublic(e);
}

Status<InvalidEventError> ValidateBody(const MessageCommitted& e) {
  using E = MessageCommitted;
  HARNESS_CHECK(CheckPublic(e));
  if (!ValidateMessage(e.message).ok())
    return Invalid<E>("Message");
  if (!e.input_command_id.IsZero() && e.message.role() != Role::kUser)
    return Invalid<E>("InputCommandID");
  return {};
}

Status<InvalidEventError> ValidateBody(const TurnCompleted& e) {
  return CheckPublic(e);
}

Status<InvalidEventError> ValidateBody(const TurnFailed& e) {
  using E = TurnFailed;
  HARNESS_CHECK(CheckPublic(e));
  if (TurnFailReasonName(e.reason).empty())
    return Invalid<E>("Reason");
  if (e.detail.size() > kMaxTurnFailureDetailBytes)
    return Invalid<E>("Detail");
  if (e.context && (!MeasuresContext(e.reason) || e.context->input_limit == 0 ||
                    e.context->input_tokens < e.context->input_limit))
    return Invalid<E>("Context");
  if (e.steps && (e.reason != TurnFailReason::kStepLimit || e.steps->limit == 0 ||
                  e.steps->limit > kMaxStepsPerTurn || e.steps->made < e.steps->limit))
    return Invalid<E>("Steps");
  return {};
}

Status<InvalidEventError> ValidateBody(const TurnInterrupted& e) {
  HARNESS_CHECK(CheckPublic(e));
  if (TurnInterruptReasonName(e.reason).empty())
    return Invalid<TurnInterrupted>("Reason");
  return {};
}

}  // namespace harness
