// The event union's compile-time properties, the context events (docs/spec/contracts.md §5.8)
// and the lifecycle events' body validation (ours; docs/events.md).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "harness/event/event.h"
#include "test_events.h"

namespace harness {
namespace {

using namespace event_testing;

// ---------------------------------------------------------------------------------------------
// The union

static_assert(!kIsEnduring<CompactionStarted>);
static_assert(!kIsEnduring<ContextPressure>);
static_assert(!kIsEnduring<InputQueued>);
static_assert(kIsEnduring<CompactionCommitted>);
static_assert(kIsReplyEvent<CompactWaiterResolved> && kIsReplyEvent<CompactWaiterRejected>);
static_assert(!kIsReplyEvent<CompactionCommitted>);
static_assert(ScopeOf(SessionIdle::kProfile) == EventScope::kSession);
static_assert(ScopeOf(TurnStarted::kProfile) == EventScope::kLoop);
static_assert(kKindOf<MessageCommitted> == EventKind::kMessageCommitted);

TEST(EventKinds, ClassProfileAndNameOfEveryKind) {
  struct Row {
    const char* name;
    EventClass cls;
    IdentityProfile profile;
  };
  constexpr auto E = EventClass::kEphemeral;
  constexpr auto D = EventClass::kEnduring;
  constexpr auto S = IdentityProfile::kSession;
  constexpr auto L = IdentityProfile::kLoop;
  constexpr auto T = IdentityProfile::kTurn;
  const Row rows[] = {
      {"CompactionStarted", E, L},
      {"CompactionCommitted", D, L},
      {"CompactionRejected", D, L},
      {"CompactWaiterResolved", D, L},
      {"CompactWaiterRejected", D, L},
      {"ContextMeasured", D, L},
      {"ContextPressure", E, L},
      {"SessionActive", D, S},
      {"SessionIdle", D, S},
      {"ActiveLoopChanged", D, S},
      {"LoopCreated", D, L},
      {"InputAccepted", D, L},
      {"InputQueued", E, L},
      {"InputRejected", D, L},
      {"InputCancelled", D, L},
      {"LoopIdle", D, L},
      {"LoopExited", D, L},
      {"TurnStarted", D, T},
      {"MessageCommitted", D, T},
      {"TurnCompleted", D, T},
      {"TurnFailed", D, T},
      {"TurnInterrupted", D, T},
      {"LoopHistoryContinued", D, L},
      {"LoopRequestChanged", D, L},
      {"MessagePinned", D, L},
      {"MessageUnpinned", D, L},
      {"HistoryReverted", D, L},
      {"CompactionProposed", D, L},
      {"ToolOutputsMasked", D, L},
      {"ToolOutputsUnmasked", D, L},
      {"CompactionChunkSummarized", D, L},
  };
  ASSERT_EQ(std::size(rows), kEventKindCount);
  const auto events = AllValidEvents();
  ASSERT_EQ(events.size(), kEventKindCount);
  for (std::size_t i = 0; i < kEventKindCount; ++i) {
    const auto kind = static_cast<EventKind>(i);
    EXPECT_EQ(EventKindName(kind), rows[i].name);
    EXPECT_EQ(EventKindFromName(rows[i].name), kind);
    EXPECT_EQ(ClassOf(kind), rows[i].cls) << rows[i].name;
    EXPECT_EQ(ProfileOf(kind), rows[i].profile) << rows[i].name;
    EXPECT_EQ(KindOf(events[i]), kind);
    EXPECT_EQ(EventTypeName(events[i]), rows[i].name);
    EXPECT_EQ(IsEnduring(events[i]), rows[i].cls == D);
  }
  EXPECT_EQ(EventKindFromName("compactionCommitted"), std::nullopt);
  EXPECT_EQ(EventKindFromName(""), std::nullopt);
  EXPECT_EQ(EventKindName(static_cast<EventKind>(kEventKindCount)), "");
}

TEST(EventKinds, EveryFixtureIsValid) {
  for (const Event& event : AllValidEvents()) {
    const auto status = Validate(event);
    EXPECT_TRUE(status.ok()) << EventTypeName(event) << ": "
                             << (status.ok() ? "" : status.error().Message());
  }
}

TEST(EventKinds, ReplyToIsTheCommandOfAWaiterReply) {
  EXPECT_EQ(ReplyTo(ValidResolved()), kWaiter1);
  EXPECT_EQ(ReplyTo(ValidWaiterRejected()), kWaiter1);
  EXPECT_EQ(ReplyTo(ValidInputAccepted()), std::nullopt);
  EXPECT_EQ(ReplyTo(ValidCommitted()), std::nullopt);
}

TEST(EventKinds, HeaderOfReachesTheHeader) {
  Event event = ValidRejected();
  HeaderOf(event).event_id = Id(0x55);
  EXPECT_EQ(std::get<CompactionRejected>(event).header.event_id, Id(0x55));
  EXPECT_EQ(ScopeOf(event), EventScope::kLoop);
  EXPECT_EQ(ScopeOf(Event(SessionIdle{SessionHeader()})), EventScope::kSession);
}

// ---------------------------------------------------------------------------------------------
// Body validation, table-driven: one valid event, one mutation, the verdict.

struct Case {
  const char* name;
  Event event;
  const char* expected;
};

template <class E, class F>
Event Mutated(E event, F mutate) {
  mutate(event);
  return event;
}

template <class E>
Event InternalOf(E event) {
  event.header.visibility = Visibility::kInternal;
  return event;
}

// check-sizes: a table of cases, one a few lines, read row by row.
std::vector<Case> BodyCases() {
  const EventHeader cmd = CommandCause(LoopHeader(), Id(0x40), Agency::kUser);
  return {
      // ContextMeasured (§5.8): the measurement's own field names.
      {"measured_internal", InternalOf(ValidMeasured()), "Visibility is invalid"},
      {"measured_revision",
       Mutated(ValidMeasured(), [](auto& e) { e.measurement.basis.revision = 0; }),
       "Revision is invalid"},
      {"measured_through",
       Mutated(ValidMeasured(), [](auto& e) { e.measurement.basis.through_event_id = Uuid(); }),
       "ThroughEventID is invalid"},
      {"measured_model",
       Mutated(ValidMeasured(), [](auto& e) { e.measurement.model.model.clear(); }),
       "Model is invalid"},
      {"measured_fingerprint",
       Mutated(ValidMeasured(), [](auto& e) { e.measurement.request_fingerprint = Fingerprint(); }),
       "RequestFingerprint is invalid"},
      {"measured_limit", Mutated(ValidMeasured(), [](auto& e) { e.measurement.input_limit = 0; }),
       "InputLimit is invalid"},
      {"measured_quality",
       Mutated(ValidMeasured(), [](auto& e) { e.measurement.quality = CountQuality::kUnknown; }),
       "Quality is invalid"},
      {"measured_quality_4",
       Mutated(ValidMeasured(),
               [](auto& e) { e.measurement.quality = static_cast<CountQuality>(4); }),
       "Quality is invalid"},
      {"measured_over_limit_is_evidence",
       Mutated(ValidMeasured(), [](auto& e) { e.measurement.input_tokens = 1000; }), "valid"},
      // ContextPressure (§5.8).
      {"pressure_internal", InternalOf(ValidPressure()), "Visibility is invalid"},
      {"pressure_measurement_first",
       Mutated(ValidPressure(),
               [](auto& e) {
                 e.measurement.input_limit = 0;
                 e.occupancy = 10001;
               }),
       "InputLimit is invalid"},
      {"pressure_occupancy", Mutated(ValidPressure(), [](auto& e) { e.occupancy = 10001; }),
       "Occupancy is invalid"},
      {"pressure_occupancy_full_scale",
       Mutated(ValidPressure(), [](auto& e) { e.occupancy = 10000; }), "valid"},
      {"pressure_previous_4",
       Mutated(ValidPressure(), [](auto& e) { e.previous = static_cast<PressureLevel>(4); }),
       "Previous is invalid"},
      {"pressure_previous_unknown",
       Mutated(ValidPressure(), [](auto& e) { e.previous = PressureLevel::kUnknown; }), "valid"},
      {"pressure_current_unknown",
       Mutated(ValidPressure(), [](auto& e) { e.current = PressureLevel::kUnknown; }),
       "Current is invalid"},
      {"pressure_current_4",
       Mutated(ValidPressure(), [](auto& e) { e.current = static_cast<PressureLevel>(4); }),
       "Current is invalid"},
      {"pressure_no_change",
       Mutated(ValidPressure(), [](auto& e) { e.current = PressureLevel::kNormal; }),
       "Current is invalid"},
      {"pressure_hard_limit",
       Mutated(ValidPressure(), [](auto& e) { e.current = PressureLevel::kHardLimit; }), "valid"},
      // Session events.
      {"session_active_internal", InternalOf(SessionActive{SessionHeader()}),
       "Visibility is invalid"},
      {"session_idle_internal", InternalOf(SessionIdle{SessionHeader()}), "Visibility is invalid"},
      {"active_loop_zero", ActiveLoopChanged{SessionHeader(), Uuid()}, "ActiveLoopID is invalid"},
      {"active_loop_internal_first", InternalOf(ActiveLoopChanged{SessionHeader(), Uuid()}),
       "Visibility is invalid"},
      // LoopCreated.
      {"loop_created_internal", InternalOf(ValidLoopCreated()), "Visibility is invalid"},
      {"loop_created_kind_0",
       Mutated(ValidLoopCreated(), [](auto& e) { e.kind = LoopKind::kUnspecified; }),
       "Kind is invalid"},
      {"loop_created_kind_3",
       Mutated(ValidLoopCreated(),
               [](auto& e) {
                 e.kind = static_cast<LoopKind>(3);
                 e.model = {};
               }),
       "Kind is invalid"},
      {"loop_created_provider_empty",
       Mutated(ValidLoopCreated(), [](auto& e) { e.model.provider.clear(); }), "Model is invalid"},
      {"loop_created_model_empty",
       Mutated(ValidLoopCreated(),
               [](auto& e) {
                 e.model.model.clear();
                 e.kind = LoopKind::kForeign;
               }),
       "Model is invalid"},
      {"loop_created_foreign_with_policy",
       Mutated(ValidLoopCreated(), [](auto& e) { e.kind = LoopKind::kForeign; }),
       "CompactionPolicy is invalid"},
      {"loop_created_foreign_without_policy",
       Mutated(ValidLoopCreated(),
               [](auto& e) {
                 e.kind = LoopKind::kForeign;
                 e.compaction_policy = false;
               }),
       "valid"},
      {"loop_created_system_prompt_at_the_limit",
       Mutated(ValidLoopCreated(),
               [](auto& e) { e.system_prompt = std::string(kMaxSystemPromptBytes, 'p'); }),
       "valid"},
      {"loop_created_system_prompt_over_the_limit",
       Mutated(ValidLoopCreated(),
               [](auto& e) { e.system_prompt = std::string(kMaxSystemPromptBytes + 1, 'p'); }),
       "SystemPrompt is invalid"},
      {"loop_created_with_everything", ValidLoopCreatedWithEverything(), "valid"},
      {"loop_created_tools_at_the_limit",
       Mutated(ValidLoopCreated(),
               [](auto& e) {
                 for (std::size_t i = 0; i < kMaxLoopTools; ++i)
                   e.tools.push_back(ToolDefinition{"t" + std::to_string(i), "", "{}"});
               }),
       "valid"},
      {"loop_created_tools_over_the_limit",
       Mutated(ValidLoopCreated(),
               [](auto& e) {
                 for (std::size_t i = 0; i <= kMaxLoopTools; ++i)
                   e.tools.push_back(ToolDefinition{"t" + std::to_string(i), "", "{}"});
               }),
       "Tools is invalid"},
      {"loop_created_tool_name_with_a_space",
       Mutated(ValidLoopCreated(),
               [](auto& e) {
                 e.tools = {ToolDefinition{"read file", "", "{}"}};
               }),
       "Tools is invalid"},
      {"loop_created_tool_name_of_65",
       Mutated(ValidLoopCreated(),
               [](auto& e) {
                 e.tools = {ToolDefinition{std::string(65, 'n'), "", "{}"}};
               }),
       "Tools is invalid"},
      {"loop_created_tools_of_one_name",
       Mutated(ValidLoopCreated(),
               [](auto& e) {
                 e.tools = {ToolDefinition{"read", "", "{}"}, ToolDefinition{"read", "", "{}"}};
               }),
       "Tools is invalid"},
      {"loop_created_tool_schema_not_an_object",
       Mutated(ValidLoopCreated(),
               [](auto& e) {
                 e.tools = {ToolDefinition{"t", "", "[]"}};
               }),
       "Tools is invalid"},
      {"loop_created_tool_schema_not_json",
       Mutated(ValidLoopCreated(),
               [](auto& e) {
                 e.tools = {ToolDefinition{"t", "", "{\"a\":1,}"}};
               }),
       "Tools is invalid"},
      {"loop_created_tool_description_not_utf8",
       Mutated(ValidLoopCreated(),
               [](auto& e) {
                 e.tools = {ToolDefinition{"t", "\xff", "{}"}};
               }),
       "Tools is invalid"},
      {"loop_created_foreign_with_tools",
       Mutated(ValidLoopCreated(),
               [](auto& e) {
                 e.kind = LoopKind::kForeign;
                 e.compaction_policy = false;
                 e.tools = {ToolDefinition{"t", "", "{}"}};
               }),
       "Tools is invalid"},
      {"loop_created_policy_without_compaction",
       Mutated(ValidLoopCreated(),
               [](auto& e) {
                 e.compaction_policy = false;
                 e.policy = ValidPolicy();
               }),
       "Policy is invalid"},
      {"loop_created_compactor_over_the_limit",
       Mutated(ValidLoopCreated(),
               [](auto& e) { e.compactor = std::string(kMaxCompactorNameBytes + 1, 'c'); }),
       "Compactor is invalid"},
      {"loop_created_compactor_at_the_limit",
       Mutated(ValidLoopCreated(),
               [](auto& e) { e.compactor = std::string(kMaxCompactorNameBytes, 'c'); }),
       "valid"},
      {"loop_created_continued_history_at_the_limit",
       Mutated(ValidLoopCreated(),
               [](auto& e) { e.continued_history = kMaxInitialHistoryMessages - 2; }),
       "valid"},
      {"loop_created_continued_history_over_the_limit",
       Mutated(ValidLoopCreated(),
               [](auto& e) { e.continued_history = kMaxInitialHistoryMessages - 1; }),
       "ContinuedHistory is invalid"},
      {"loop_created_max_steps_zero",
       Mutated(ValidLoopCreated(), [](auto& e) { e.max_steps_per_turn = 0; }),
       "MaxStepsPerTurn is invalid"},
      {"loop_created_max_steps_one",
       Mutated(ValidLoopCreated(), [](auto& e) { e.max_steps_per_turn = 1; }), "valid"},
      {"loop_created_max_steps_at_the_limit",
       Mutated(ValidLoopCreated(), [](auto& e) { e.max_steps_per_turn = kMaxStepsPerTurn; }),
       "valid"},
      {"loop_created_max_steps_over_the_limit",
       Mutated(ValidLoopCreated(), [](auto& e) { e.max_steps_per_turn = kMaxStepsPerTurn + 1; }),
       "MaxStepsPerTurn is invalid"},
      // LoopHistoryContinued.
      {"loop_history_continued", LoopHistoryContinued{LoopHeader(), {User("more")}}, "valid"},
      {"loop_history_continued_empty", LoopHistoryContinued{LoopHeader(), {}},
       "History is invalid"},
      {"loop_history_continued_bad_message",
       LoopHistoryContinued{LoopHeader(),
                            {AssistantMessage{{ToolUseBlock{"c", "n", "{x", {}, ""}}, {}}}},
       "History is invalid"},
      // LoopRequestChanged.
      {"loop_request_changed", LoopRequestChanged{LoopHeader(), ""}, "valid"},
      {"loop_request_changed_nothing", LoopRequestChanged{LoopHeader(), std::nullopt},
       "Change is invalid"},
      {"loop_request_changed_prompt_over_the_limit",
       LoopRequestChanged{LoopHeader(), std::string(kMaxSystemPromptBytes + 1, 'p')},
       "SystemPrompt is invalid"},
      {"loop_created_bad_history",
       Mutated(ValidLoopCreated(),
               [](auto& e) {
                 e.history.push_back(AssistantMessage{{ToolUseBlock{"c", "n", "{x", {}, ""}}, {}});
               }),
       "History is invalid"},
      {"loop_created_unpaired_history_is_fine",
       Mutated(ValidLoopCreated(),
               [](auto& e) {
                 e.history.push_back(AssistantMessage{{ToolUseBlock{"c", "n", {}, {}, ""}}, {}});
               }),
       "valid"},
      {"loop_created_empty_history",
       Mutated(ValidLoopCreated(), [](auto& e) { e.history.clear(); }), "valid"},
      // Inputs.
      {"input_accepted_internal", InternalOf(ValidInputAccepted()), "Visibility is invalid"},
      {"input_accepted_no_command",
       Mutated(ValidInputAccepted(), [](auto& e) { e.header.cause.command_id = Uuid(); }),
       "CommandID is invalid"},
      {"input_accepted_bad_message",
       Mutated(ValidInputAccepted(),
               [](auto& e) {
                 Block nested = Text("x");
                 for (int i = 0; i < 129; ++i)
                   nested = ToolResultBlock{"x", {nested}, false};
                 e.message.blocks = {nested};
               }),
       "Message is invalid"},
      {"input_accepted_empty_message",
       Mutated(ValidInputAccepted(), [](auto& e) { e.message.blocks.clear(); }), "valid"},
      {"input_queued_no_command", InputQueued{LoopHeader()}, "CommandID is invalid"},
      {"input_rejected_reason_0", InputRejected{cmd, InputRejectReason::kUnspecified},
       "Reason is invalid"},
      {"input_rejected_no_command_first",
       InputRejected{LoopHeader(), InputRejectReason::kUnspecified}, "CommandID is invalid"},
      {"input_rejected_shutting_down", InputRejected{cmd, InputRejectReason::kShuttingDown},
       "valid"},
      {"input_cancelled_reason_4", InputCancelled{cmd, static_cast<InputCancelReason>(4)},
       "Reason is invalid"},
      {"input_cancelled_shutting_down", InputCancelled{cmd, InputCancelReason::kShuttingDown},
       "valid"},
      {"input_cancelled_no_command", InputCancelled{LoopHeader(), InputCancelReason::kRetracted},
       "CommandID is invalid"},
      // Loop status.
      {"loop_idle_internal", InternalOf(LoopIdle{LoopHeader()}), "Visibility is invalid"},
      {"loop_exited_reason_0", LoopExited{LoopHeader(), LoopExitReason::kUnspecified},
       "Reason is invalid"},
      {"loop_exited_faulted", LoopExited{LoopHeader(), LoopExitReason::kFaulted}, "valid"},
      // Turns.
      {"turn_started_internal", InternalOf(TurnStarted{TurnHeader()}), "Visibility is invalid"},
      {"message_committed_internal", InternalOf(ValidMessageCommitted()), "Visibility is invalid"},
      {"message_committed_bad_message",
       MessageCommitted{TurnHeader(), AssistantMessage{{ToolUseBlock{"c", "n", "", {}, ""}}, {}},
                        Uuid()},
       "Message is invalid"},
      {"message_committed_input_on_assistant",
       MessageCommitted{TurnHeader(), AssistantMessage{{Text("hi")}, Usage{1, 2, 0, 0, 0}},
                        Id(0x40)},
       "InputCommandID is invalid"},
      {"message_committed_assistant", MessageCommitted{TurnHeader(), AssistantMessage{}, Uuid()},
       "valid"},
      {"message_committed_tool_result",
       MessageCommitted{TurnHeader(), ToolResultMessage{{Text("out")}, "c", true}, Uuid()},
       "valid"},
      {"message_committed_user_without_input",
       MessageCommitted{TurnHeader(), User("steer"), Uuid()}, "valid"},
      {"turn_completed_internal", InternalOf(TurnCompleted{TurnHeader()}), "Visibility is invalid"},
      {"turn_failed_reason_0", TurnFailed{TurnHeader(), TurnFailReason::kUnspecified, ""},
       "Reason is invalid"},
      {"turn_failed_reason_11", TurnFailed{TurnHeader(), static_cast<TurnFailReason>(11), ""},
       "Reason is invalid"},
      {"turn_failed_summary_too_large",
       TurnFailed{TurnHeader(), TurnFailReason::kSummaryTooLarge, ""}, "valid"},
      {"turn_failed_reason_before_detail",
       TurnFailed{TurnHeader(), TurnFailReason::kUnspecified, std::string(5000, 'x')},
       "Reason is invalid"},
      {"turn_failed_detail_4096",
       TurnFailed{TurnHeader(), TurnFailReason::kModelError, std::string(4096, 'x')}, "valid"},
      {"turn_failed_detail_4097",
       TurnFailed{TurnHeader(), TurnFailReason::kModelError, std::string(4097, 'x')},
       "Detail is invalid"},
      {"turn_failed_context_at_the_limit",
       TurnFailed{TurnHeader(), TurnFailReason::kContextLimit, "", TurnFailedContext{100, 100}},
       "valid"},
      {"turn_failed_context_over_the_limit",
       TurnFailed{TurnHeader(), TurnFailReason::kPinnedTooLarge, "", TurnFailedContext{101, 100}},
       "valid"},
      {"turn_failed_context_below_the_limit",
       TurnFailed{TurnHeader(), TurnFailReason::kSummaryTooLarge, "", TurnFailedContext{99, 100}},
       "Context is invalid"},
      {"turn_failed_context_limit_0",
       TurnFailed{TurnHeader(), TurnFailReason::kContextLimit, "", TurnFailedContext{0, 0}},
       "Context is invalid"},
      {"turn_failed_context_on_a_model_error",
       TurnFailed{TurnHeader(), TurnFailReason::kModelError, "", TurnFailedContext{100, 100}},
       "Context is invalid"},
      {"turn_failed_detail_before_context",
       TurnFailed{TurnHeader(), TurnFailReason::kModelError, std::string(4097, 'x'),
                  TurnFailedContext{0, 0}},
       "Detail is invalid"},
      {"turn_failed_steps_at_the_limit",
       TurnFailed{TurnHeader(), TurnFailReason::kStepLimit, "", std::nullopt,
                  TurnFailedSteps{64, 64}},
       "valid"},
      {"turn_failed_steps_max_limit",
       TurnFailed{TurnHeader(), TurnFailReason::kStepLimit, "", std::nullopt,
                  TurnFailedSteps{kMaxStepsPerTurn, kMaxStepsPerTurn}},
       "valid"},
      {"turn_failed_steps_limit_over_max",
       TurnFailed{TurnHeader(), TurnFailReason::kStepLimit, "", std::nullopt,
                  TurnFailedSteps{kMaxStepsPerTurn + 1, kMaxStepsPerTurn + 1}},
       "Steps is invalid"},
      {"turn_failed_steps_limit_0",
       TurnFailed{TurnHeader(), TurnFailReason::kStepLimit, "", std::nullopt,
                  TurnFailedSteps{0, 0}},
       "Steps is invalid"},
      {"turn_failed_steps_below_the_limit",
       TurnFailed{TurnHeader(), TurnFailReason::kStepLimit, "", std::nullopt,
                  TurnFailedSteps{63, 64}},
       "Steps is invalid"},
      {"turn_failed_steps_on_a_context_limit",
       TurnFailed{TurnHeader(), TurnFailReason::kContextLimit, "", std::nullopt,
                  TurnFailedSteps{64, 64}},
       "Steps is invalid"},
      {"turn_failed_context_before_steps",
       TurnFailed{TurnHeader(), TurnFailReason::kStepLimit, "", TurnFailedContext{1, 1},
                  TurnFailedSteps{0, 0}},
       "Context is invalid"},
      {"turn_interrupted_reason_0",
       TurnInterrupted{TurnHeader(), TurnInterruptReason::kUnspecified}, "Reason is invalid"},
      {"turn_interrupted_restored", TurnInterrupted{TurnHeader(), TurnInterruptReason::kRestored},
       "valid"},
      {"turn_interrupted_reason_5",
       TurnInterrupted{TurnHeader(), static_cast<TurnInterruptReason>(5)}, "Reason is invalid"},
  };
}

TEST(LifecycleEvents, BodyValidation) {
  for (const auto& c : BodyCases()) {
    const auto status = Validate(c.event);
    EXPECT_EQ(Verdict(status), c.expected) << c.name;
    if (!status.ok()) {
      EXPECT_EQ(status.error().event, EventTypeName(c.event)) << c.name;
    }
  }
}

TEST(ContextMeasured, FailureCarriesTheMeasurementError) {
  ContextMeasured e = ValidMeasured();
  e.measurement.model.provider.clear();
  const auto status = Validate(e);
  ASSERT_FALSE(status.ok());
  ASSERT_TRUE(status.error().context.has_value());
  EXPECT_EQ(status.error().context->field, ContextField::kModel);
  ASSERT_TRUE(status.error().context->model_error.has_value());
  EXPECT_EQ(status.error().context->model_error->field, ModelKeyField::kProvider);
}

TEST(LifecycleEnums, WireValuesAndNames) {
  EXPECT_EQ(static_cast<int>(LoopKind::kNative), 1);
  EXPECT_EQ(static_cast<int>(LoopKind::kForeign), 2);
  EXPECT_EQ(LoopKindName(LoopKind::kNative), "native");
  EXPECT_EQ(LoopKindName(LoopKind::kForeign), "foreign");
  EXPECT_EQ(LoopKindName(LoopKind::kUnspecified), "");
  EXPECT_EQ(static_cast<int>(InputRejectReason::kQueueFull), 1);
  EXPECT_EQ(static_cast<int>(InputRejectReason::kShuttingDown), 2);
  EXPECT_EQ(InputRejectReasonName(InputRejectReason::kQueueFull), "queue_full");
  EXPECT_EQ(InputRejectReasonName(InputRejectReason::kShuttingDown), "shutting_down");
  EXPECT_EQ(static_cast<int>(InputCancelReason::kRetracted), 1);
  EXPECT_EQ(static_cast<int>(InputCancelReason::kInterrupted), 2);
  EXPECT_EQ(static_cast<int>(InputCancelReason::kShuttingDown), 3);
  EXPECT_EQ(InputCancelReasonName(InputCancelReason::kRetracted), "retracted");
  EXPECT_EQ(InputCancelReasonName(InputCancelReason::kInterrupted), "interrupted");
  EXPECT_EQ(InputCancelReasonName(InputCancelReason::kShuttingDown), "shutting_down");
  EXPECT_EQ(static_cast<int>(TurnInterruptReason::kInterrupted), 1);
  EXPECT_EQ(static_cast<int>(TurnInterruptReason::kShuttingDown), 2);
  EXPECT_EQ(static_cast<int>(TurnInterruptReason::kCanceled), 3);
  EXPECT_EQ(static_cast<int>(TurnInterruptReason::kRestored), 4);
  EXPECT_EQ(TurnInterruptReasonName(TurnInterruptReason::kInterrupted), "interrupted");
  EXPECT_EQ(TurnInterruptReasonName(TurnInterruptReason::kShuttingDown), "shutting_down");
  EXPECT_EQ(TurnInterruptReasonName(TurnInterruptReason::kCanceled), "canceled");
  EXPECT_EQ(TurnInterruptReasonName(TurnInterruptReason::kRestored), "restored");
  EXPECT_EQ(static_cast<int>(LoopExitReason::kShutdown), 1);
  EXPECT_EQ(static_cast<int>(LoopExitReason::kFaulted), 2);
  EXPECT_EQ(LoopExitReasonName(LoopExitReason::kShutdown), "shutdown");
  EXPECT_EQ(LoopExitReasonName(LoopExitReason::kFaulted), "faulted");
  EXPECT_EQ(LoopExitReasonName(static_cast<LoopExitReason>(3)), "");
}

// Every reason's name is the string journals hold, and FromName is its exact inverse.
TEST(LifecycleEnums, TurnFailReasonNamesAreTheWireStrings) {
  const std::vector<std::pair<TurnFailReason, std::string_view>> names = {
      {TurnFailReason::kContextLimit, "context_limit"},
      {TurnFailReason::kContextLimitUnknown, "context_limit_unknown"},
      {TurnFailReason::kContextCountFailed, "context_count_failed"},
      {TurnFailReason::kModelError, "model_error"},
      {TurnFailReason::kInvalidModelOutput, "invalid_model_output"},
      {TurnFailReason::kStepLimit, "step_limit"},
      {TurnFailReason::kCompactionFinalization, "compaction_finalization"},
      {TurnFailReason::kCoverageInsufficient, "coverage_insufficient"},
      {TurnFailReason::kPinnedTooLarge, "pinned_too_large"},
      {TurnFailReason::kSummaryTooLarge, "summary_too_large"},
  };
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto& [reason, name] = names[i];
    EXPECT_EQ(static_cast<std::size_t>(reason), i + 1) << name;
    EXPECT_EQ(TurnFailReasonName(reason), name);
    EXPECT_EQ(TurnFailReasonFromName(name), reason) << name;
  }
  EXPECT_EQ(TurnFailReasonName(TurnFailReason::kUnspecified), "");
  EXPECT_EQ(TurnFailReasonName(static_cast<TurnFailReason>(11)), "");
  for (std::string_view other : {"", "unspecified", "Context_limit", "context_limit ", "step"})
    EXPECT_EQ(TurnFailReasonFromName(other), std::nullopt) << other;
}

}  // namespace
}  // namespace harness
