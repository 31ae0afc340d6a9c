// Valid events of every kind, and the ids and times the event tests share.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <string>
#include <vector>

#include "harness/event/event.h"

namespace harness::event_testing {

inline Uuid Id(unsigned n) {
  return Uuid::Parse(fmt::format("00000000-0000-4000-8000-{:012x}", n)).value();
}

inline const Uuid kSession = Id(0xa1);
inline const Uuid kLoop = Id(0xa2);
inline const Uuid kTurn = Id(0xa3);
inline const Uuid kStep = Id(0xa4);
inline const Uuid kEventId = Id(0x10);
inline const Uuid kAttempt = Id(0x20);
inline const Uuid kWaiter1 = Id(0x31);
inline const Uuid kWaiter2 = Id(0x32);
inline const Uuid kThrough = Id(0x01);
inline const Uuid kPinnedMessageId = Id(0x41);

// 2024-05-06T07:08:09.123456789Z
inline EventTime T0() {
  using namespace std::chrono;
  return EventTime(sys_days(year(2024) / 5 / 6).time_since_epoch() + hours(7) + minutes(8) +
                   seconds(9) + nanoseconds(123456789));
}

inline EventHeader SessionHeader() {
  EventHeader h;
  h.session_id = kSession;
  h.event_id = kEventId;
  h.created_at = T0();
  return h;
}

inline EventHeader LoopHeader() {
  EventHeader h = SessionHeader();
  h.loop_id = kLoop;
  return h;
}

inline EventHeader TurnHeader() {
  EventHeader h = LoopHeader();
  h.turn_id = kTurn;
  h.step_id = kStep;
  return h;
}

inline EventHeader CommandCause(EventHeader h, const Uuid& command, Agency agency) {
  h.cause.command_id = command;
  h.cause.agency = agency;
  return h;
}

inline Fingerprint FingerprintOne() {
  Sha256Digest bytes{};
  bytes[0] = 1;
  return Fingerprint(bytes);
}

inline ContextMeasurement Measurement(ContextBasis basis) {
  return ContextMeasurement{basis, ModelKey{"provider", "model"}, FingerprintOne(), 2,
                            100,   CountQuality::kExactLocal};
}

inline Block Text(std::string text) {
  return TextBlock{std::move(text)};
}

inline UserMessage User(std::string text) {
  return UserMessage{{Text(std::move(text))}};
}

inline CompactionStarted ValidStarted() {
  return CompactionStarted{LoopHeader(), kAttempt, CompactionReason::kManual,
                           ContextBasis{1, kThrough}};
}

// docs/spec/contracts.md §5.9: two distinct waiters, summary "summary", post context
// {basis {2, this event}, 2 tokens, limit 100, ExactLocal}, 1.5 s.
inline CompactionCommitted ValidCommitted() {
  CompactionCommitted e;
  e.header = LoopHeader();
  e.attempt_id = kAttempt;
  e.waiter_command_ids = {kWaiter1, kWaiter2};
  e.reason = CompactionReason::kManual;
  e.basis = ContextBasis{1, kThrough};
  e.summary = User("summary");
  e.retained = {User("keep this"), AssistantMessage{{Text("kept")}, std::nullopt}};
  e.post_context = Measurement(ContextBasis{2, kEventId});
  e.duration = std::chrono::milliseconds(1500);
  return e;
}

// §5.9: automatic, ExecutionFailed, 1 s.
inline CompactionRejected ValidRejected() {
  return CompactionRejected{LoopHeader(),
                            kAttempt,
                            {kWaiter1},
                            CompactionReason::kAutomatic,
                            ContextBasis{1, kThrough},
                            CompactRejectReason::kExecutionFailed,
                            std::chrono::seconds(1),
                            std::nullopt,
                            std::nullopt};
}

// A manual proposal (docs/preview.md): two messages replaced, one kept, ten minutes to decide.
inline CompactionProposed ValidProposed() {
  CompactionProposed e;
  e.header = LoopHeader();
  e.attempt_id = kAttempt;
  e.waiter_command_ids = {kWaiter1};
  e.reason = CompactionReason::kManual;
  e.basis = ContextBasis{1, kThrough};
  e.summary = User("summary");
  e.replaced = 2;
  e.kept = {kPinnedMessageId};
  e.post_context = Measurement(ContextBasis{1, kThrough});
  e.expires_at = T0() + std::chrono::minutes(10);
  return e;
}

// The second of three chunks of a manual attempt (docs/chunked.md).
inline CompactionChunkSummarized ValidChunk() {
  CompactionChunkSummarized e;
  e.header = LoopHeader();
  e.attempt_id = kAttempt;
  e.reason = CompactionReason::kManual;
  e.basis = ContextBasis{1, kThrough};
  e.request_fingerprint = Fingerprint(Sha256("request"));
  e.chunk = 1;
  e.chunks = 3;
  e.digest = Fingerprint(Sha256("chunk"));
  e.summary = User("summary of a part");
  return e;
}

inline CompactWaiterResolved ValidResolved() {
  auto e = MakeWaiterResolved(LoopHeader(), kAttempt, kWaiter1, Agency::kUser, kEventId);
  e.header.created_at = T0();
  return e;
}

inline CompactWaiterRejected ValidWaiterRejected() {
  auto e = MakeWaiterRejected(LoopHeader(), kAttempt, kWaiter1, Agency::kUser,
                              CompactRejectReason::kInterrupted);
  e.header.created_at = T0();
  return e;
}

inline ContextMeasured ValidMeasured() {
  return ContextMeasured{LoopHeader(), Measurement(ContextBasis{3, kThrough})};
}

inline ContextPressure ValidPressure() {
  return ContextPressure{LoopHeader(), Measurement(ContextBasis{3, kThrough}), 9000,
                         PressureLevel::kNormal, PressureLevel::kCompact};
}

inline LoopCreated ValidLoopCreated() {
  LoopCreated e;
  e.header = LoopHeader();
  e.kind = LoopKind::kNative;
  e.model = ModelKey{"provider", "model"};
  e.compaction_policy = true;
  e.history = {User("hello"), AssistantMessage{{Text("hi")}, std::nullopt}};
  return e;
}

// A valid policy with every member away from its default.
inline CompactionPolicy ValidPolicy() {
  CompactionPolicy p;
  p.automatic = true;
  p.counter_policy = CounterPolicy::kAllowConservative;
  p.compact_at = 8000;
  p.rearm_below = 6000;
  p.keep_recent_segments = 2;
  p.keep_recent_tokens = 4096;
  p.reserved_output = 1024;
  p.safety_margin = 512;
  p.max_summary_tokens = 2048;
  p.count_timeout = std::chrono::seconds(5);
  p.coverage.mode = CoverageMode::kEnforce;
  p.coverage.min_ratio = 7500;
  return p;
}

// A LoopCreated with every optional member set: tools, policy, compactor name.
inline LoopCreated ValidLoopCreatedWithEverything() {
  LoopCreated e = ValidLoopCreated();
  e.system_prompt = "You review C++ code.";
  e.tools = {ToolDefinition{"read_file", "Reads a \"file\".",
                            R"({"type":"object","properties":{"path":{"type":"string"}}})"},
             ToolDefinition{"run-tests_2", "", R"({"type":"object"})"}};
  e.policy = ValidPolicy();
  e.compactor = "model:summarizer";
  e.max_steps_per_turn = 12;
  return e;
}

inline InputAccepted ValidInputAccepted() {
  return InputAccepted{CommandCause(LoopHeader(), Id(0x40), Agency::kUser), User("hello")};
}

inline MessageCommitted ValidMessageCommitted() {
  return MessageCommitted{TurnHeader(), User("hello"), Id(0x40)};
}

// One valid event of every kind, in the order of the variant.
inline std::vector<Event> AllValidEvents() {
  const EventHeader command_cause = CommandCause(LoopHeader(), Id(0x40), Agency::kUser);
  return {
      ValidStarted(),
      ValidCommitted(),
      ValidRejected(),
      ValidResolved(),
      ValidWaiterRejected(),
      ValidMeasured(),
      ValidPressure(),
      SessionActive{SessionHeader()},
      SessionIdle{SessionHeader()},
      ActiveLoopChanged{SessionHeader(), kLoop},
      ValidLoopCreated(),
      ValidInputAccepted(),
      InputQueued{command_cause},
      InputRejected{command_cause, InputRejectReason::kQueueFull},
      InputCancelled{command_cause, InputCancelReason::kRetracted},
      LoopIdle{LoopHeader()},
      LoopExited{LoopHeader(), LoopExitReason::kShutdown},
      TurnStarted{TurnHeader()},
      ValidMessageCommitted(),
      TurnCompleted{TurnHeader()},
      TurnFailed{TurnHeader(), TurnFailReason::kContextLimit,
                 "the request reached the input limit"},
      TurnInterrupted{TurnHeader(), TurnInterruptReason::kInterrupted},
      LoopHistoryContinued{LoopHeader(), {User("more")}},
      LoopRequestChanged{LoopHeader(), "be brief"},
      MessagePinned{LoopHeader(), kPinnedMessageId},
      MessageUnpinned{LoopHeader(), kPinnedMessageId},
      HistoryReverted{LoopHeader(), kPinnedMessageId, ContextBasis{3, kThrough},
                      Measurement(ContextBasis{4, kEventId})},
      ValidProposed(),
      ToolOutputsMasked{LoopHeader(),
                        ContextBasis{3, kThrough},
                        {kPinnedMessageId},
                        Measurement(ContextBasis{4, kEventId})},
      ToolOutputsUnmasked{LoopHeader(),
                          ContextBasis{4, kThrough},
                          {kPinnedMessageId},
                          Measurement(ContextBasis{5, kEventId})},
      ValidChunk(),
  };
}

// "valid", or "<Field> <rule>".
inline std::string Verdict(const Status<InvalidEventError>& status) {
  if (status.ok())
    return "valid";
  std::string out(status.error().field);
  out.push_back(' ');
  out.append(FieldRuleText(status.error().rule));
  return out;
}

}  // namespace harness::event_testing
