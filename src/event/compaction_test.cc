// The compaction events: body validation orders (docs/spec/contracts.md §5.2-§5.5), the
// retained-history rule (§2.4(b)), the §5.9 fixtures, the deterministic waiter reply ids and
// their stamp rules (§5.5, docs/spec/runtime.md §2.14), and the reject reasons (§5.6,
// docs/spec/decisions.md D4).
#include "harness/event/compaction.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/compaction/reasons.h"
#include "harness/event/event.h"
#include "test_events.h"

namespace harness {
namespace {

using namespace event_testing;

template <class E>
struct BodyCase {
  const char* name;
  void (*mutate)(E&);
  const char* expected;
};

template <class E>
void ExpectBodyCases(E (*valid)(), const std::vector<BodyCase<E>>& cases) {
  for (const auto& c : cases) {
    E event = valid();
    c.mutate(event);
    const auto status = Validate(Event(event));
    EXPECT_EQ(Verdict(status), c.expected) << E::kType << "/" << c.name;
    if (!status.ok()) {
      EXPECT_EQ(status.error().event, E::kType) << c.name;
    }
  }
}

template <class E>
void Internal(E& e) {
  e.header.visibility = Visibility::kInternal;
}

TEST(CompactionStarted, BodyOrder) {
  using E = CompactionStarted;
  ExpectBodyCases<E>(
      ValidStarted,
      {
          {"valid", [](E&) {}, "valid"},
          {"internal", Internal<E>, "Visibility is invalid"},
          {"internal_before_attempt",
           [](E& e) {
             Internal(e);
             e.attempt_id = Uuid();
           },
           "Visibility is invalid"},
          {"attempt_zero", [](E& e) { e.attempt_id = Uuid(); }, "AttemptID is invalid"},
          {"attempt_before_reason",
           [](E& e) {
             e.attempt_id = Uuid();
             e.reason = CompactionReason::kUnspecified;
           },
           "AttemptID is invalid"},
          // §5.9: started reason 0.
          {"reason_0", [](E& e) { e.reason = CompactionReason::kUnspecified; },
           "Reason is invalid"},
          {"reason_3", [](E& e) { e.reason = static_cast<CompactionReason>(3); },
           "Reason is invalid"},
          {"reason_before_basis",
           [](E& e) {
             e.reason = CompactionReason::kUnspecified;
             e.basis = {};
           },
           "Reason is invalid"},
          {"basis_revision_zero", [](E& e) { e.basis.revision = 0; }, "Basis is invalid"},
          {"basis_event_zero", [](E& e) { e.basis.through_event_id = Uuid(); }, "Basis is invalid"},
          {"automatic", [](E& e) { e.reason = CompactionReason::kAutomatic; }, "valid"},
      });
}

TEST(CompactionCommitted, BodyOrder) {
  using E = CompactionCommitted;
  ExpectBodyCases<E>(
      ValidCommitted,
      {
          {"valid", [](E&) {}, "valid"},
          {"internal", Internal<E>, "Visibility is invalid"},
          {"attempt_zero", [](E& e) { e.attempt_id = Uuid(); }, "AttemptID is invalid"},
          {"attempt_before_waiters",
           [](E& e) {
             e.attempt_id = Uuid();
             e.waiter_command_ids.clear();
           },
           "AttemptID is invalid"},
          {"waiters_empty", [](E& e) { e.waiter_command_ids.clear(); },
           "WaiterCommandIDs is invalid"},
          {"waiters_zero_id", [](E& e) { e.waiter_command_ids.push_back(Uuid()); },
           "WaiterCommandIDs is invalid"},
          // §5.9: committed duplicate waiter.
          {"waiters_duplicate", [](E& e) { e.waiter_command_ids.push_back(kWaiter1); },
           "WaiterCommandIDs is invalid"},
          {"waiters_any_order",
           [](E& e) { std::swap(e.waiter_command_ids[0], e.waiter_command_ids[1]); }, "valid"},
          {"waiters_before_reason",
           [](E& e) {
             e.waiter_command_ids.clear();
             e.reason = CompactionReason::kUnspecified;
           },
           "WaiterCommandIDs is invalid"},
          // §5.9: committed reason 0 and reason 3.
          {"reason_0", [](E& e) { e.reason = CompactionReason::kUnspecified; },
           "Reason is invalid"},
          {"reason_3", [](E& e) { e.reason = static_cast<CompactionReason>(3); },
           "Reason is invalid"},
          {"reason_before_basis",
           [](E& e) {
             e.reason = CompactionReason::kUnspecified;
             e.basis = {};
           },
           "Reason is invalid"},
          {"basis_zero", [](E& e) { e.basis.revision = 0; }, "Basis is invalid"},
          {"basis_before_summary",
           [](E& e) {
             e.basis.through_event_id = Uuid();
             e.summary.blocks.clear();
           },
           "Basis is invalid"},
          // §5.9: committed nil summary (no null in memory: zero blocks is the nearest).
          {"summary_no_blocks", [](E& e) { e.summary.blocks.clear(); }, "Summary is invalid"},
          {"summary_two_blocks", [](E& e) { e.summary.blocks.push_back(Text("more")); },
           "Summary is invalid"},
          {"summary_not_text", [](E& e) { e.summary.blocks = {RefusalBlock{"no"}}; },
           "Summary is invalid"},
          {"summary_empty_text", [](E& e) { e.summary = User(""); }, "Summary is invalid"},
          {"summary_blank_text", [](E& e) { e.summary = User(" \t\n\r\v\f"); },
           "Summary is invalid"},
          {"summary_unicode_blank", [](E& e) { e.summary = User("\u00a0\u3000\u2028\u0085"); },
           "Summary is invalid"},
          {"summary_one_visible_char", [](E& e) { e.summary = User(" x "); }, "valid"},
          {"summary_before_retained",
           [](E& e) {
             e.summary = User(" ");
             e.retained = {AssistantMessage{}};
           },
           "Summary is invalid"},
          {"retained_empty", [](E& e) { e.retained.clear(); }, "valid"},
          {"retained_assistant_anchor", [](E& e) { e.retained = {AssistantMessage{}}; },
           "Retained is invalid"},
          {"retained_bad_raw_json",
           [](E& e) {
             e.retained = {User("u"),
                           AssistantMessage{{ToolUseBlock{"c", "n", "{bad", {}, ""}}, {}},
                           ToolResultMessage{{}, "c", false}};
           },
           "Retained is invalid"},
          {"retained_before_post_context",
           [](E& e) {
             e.retained = {AssistantMessage{}};
             e.post_context.input_limit = 0;
           },
           "Retained is invalid"},
          {"post_context_invalid", [](E& e) { e.post_context.input_limit = 0; },
           "PostContext is invalid"},
          {"post_context_basis_not_next_revision", [](E& e) { e.post_context.basis.revision = 3; },
           "PostContext is invalid"},
          {"post_context_basis_not_this_event",
           [](E& e) { e.post_context.basis.through_event_id = kThrough; },
           "PostContext is invalid"},
          {"post_context_before_duration",
           [](E& e) {
             e.post_context.quality = CountQuality::kUnknown;
             e.duration = std::chrono::nanoseconds(-1);
           },
           "PostContext is invalid"},
          // §5.9: committed duration -1.
          {"duration_negative", [](E& e) { e.duration = std::chrono::nanoseconds(-1); },
           "Duration is invalid"},
          {"duration_zero", [](E& e) { e.duration = std::chrono::nanoseconds(0); }, "valid"},
      });
}

TEST(CompactionCommitted, PostContextFailureCarriesTheMeasurementError) {
  CompactionCommitted e = ValidCommitted();
  e.post_context.model.provider.clear();
  const auto status = Validate(e);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().field, "PostContext");
  ASSERT_TRUE(status.error().context.has_value());
  EXPECT_EQ(status.error().context->field, ContextField::kModel);
}

TEST(CompactionCommitted, ABasisAtTheLastRevisionHasNoSuccessor) {
  CompactionCommitted e = ValidCommitted();
  e.basis.revision = UINT64_MAX;
  e.post_context.basis.revision = 0;  // what revision + 1 wraps to
  EXPECT_EQ(Verdict(Validate(e)), "PostContext is invalid");
}

TEST(CompactionRejected, BodyOrder) {
  using E = CompactionRejected;
  ExpectBodyCases<E>(
      ValidRejected,
      {
          {"valid", [](E&) {}, "valid"},
          {"internal", Internal<E>, "Visibility is invalid"},
          {"attempt_zero", [](E& e) { e.attempt_id = Uuid(); }, "AttemptID is invalid"},
          {"waiters_empty", [](E& e) { e.waiter_command_ids.clear(); },
           "WaiterCommandIDs is invalid"},
          {"waiters_duplicate", [](E& e) { e.waiter_command_ids.push_back(kWaiter1); },
           "WaiterCommandIDs is invalid"},
          // §5.9: rejected reason 0.
          {"reason_0", [](E& e) { e.reason = CompactionReason::kUnspecified; },
           "Reason is invalid"},
          {"reason_before_basis",
           [](E& e) {
             e.reason = static_cast<CompactionReason>(3);
             e.basis = {};
           },
           "Reason is invalid"},
          // §5.9: rejected zero basis.
          {"basis_zero", [](E& e) { e.basis = {}; }, "Basis is invalid"},
          {"basis_before_reject_reason",
           [](E& e) {
             e.basis = {};
             e.reject_reason = CompactRejectReason::kUnspecified;
           },
           "Basis is invalid"},
          {"reject_reason_0", [](E& e) { e.reject_reason = CompactRejectReason::kUnspecified; },
           "RejectReason is invalid"},
          // §5.9 rejects reject-reason 15; ours are CoverageInsufficient and PinnedTooLarge
          // (docs/decisions.md P13, P16), so the first invalid value is one past the last.
          {"reject_reason_past_the_last",
           [](E& e) {
             e.reject_reason = static_cast<CompactRejectReason>(kMaxCompactRejectReason + 1);
           },
           "RejectReason is invalid"},
          {"reject_reason_16", [](E& e) { e.reject_reason = CompactRejectReason::kPinnedTooLarge; },
           "valid"},
          {"reject_reason_15",
           [](E& e) { e.reject_reason = CompactRejectReason::kCoverageInsufficient; }, "valid"},
          {"reject_reason_14",
           [](E& e) { e.reject_reason = CompactRejectReason::kRetainedTailTooLarge; }, "valid"},
          {"reject_reason_before_duration",
           [](E& e) {
             e.reject_reason = CompactRejectReason::kUnspecified;
             e.duration = std::chrono::nanoseconds(-5);
           },
           "RejectReason is invalid"},
          {"duration_negative", [](E& e) { e.duration = std::chrono::nanoseconds(-1); },
           "Duration is invalid"},
      });
}

TEST(CompactWaiterResolved, BodyOrder) {
  using E = CompactWaiterResolved;
  ExpectBodyCases<E>(
      ValidResolved,
      {
          {"valid", [](E&) {}, "valid"},
          {"internal", Internal<E>, "Visibility is invalid"},
          {"attempt_zero", [](E& e) { e.attempt_id = Uuid(); }, "AttemptID is invalid"},
          {"attempt_before_command",
           [](E& e) {
             e.attempt_id = Uuid();
             e.header.cause.command_id = Uuid();
           },
           "AttemptID is invalid"},
          {"command_zero", [](E& e) { e.header.cause.command_id = Uuid(); },
           "CommandID is invalid"},
          {"command_before_committed",
           [](E& e) {
             e.header.cause.command_id = Uuid();
             e.committed_event_id = Uuid();
           },
           "CommandID is invalid"},
          {"committed_zero", [](E& e) { e.committed_event_id = Uuid(); },
           "CommittedEventID is invalid"},
          {"committed_before_event_id",
           [](E& e) {
             e.committed_event_id = Uuid();
             e.header.event_id = Id(0xff);
           },
           "CommittedEventID is invalid"},
          // §5.9: resolved with EventID ff000…
          {"event_id_random",
           [](E& e) {
             e.header.event_id = Uuid::Parse("ff000000-0000-0000-0000-000000000000").value();
           },
           "EventID is invalid"},
          {"event_id_of_the_rejected_outcome",
           [](E& e) { e.header.event_id = CompactWaiterReplyId(kAttempt, kWaiter1, false); },
           "EventID is invalid"},
          {"event_id_of_another_command",
           [](E& e) { e.header.event_id = CompactWaiterReplyId(kAttempt, kWaiter2, true); },
           "EventID is invalid"},
      });
}

TEST(CompactWaiterRejected, BodyOrder) {
  using E = CompactWaiterRejected;
  ExpectBodyCases<E>(
      ValidWaiterRejected,
      {
          {"valid", [](E&) {}, "valid"},
          {"internal", Internal<E>, "Visibility is invalid"},
          {"attempt_zero", [](E& e) { e.attempt_id = Uuid(); }, "AttemptID is invalid"},
          // §5.9: waiter-rejected with zero command cause.
          {"command_zero", [](E& e) { e.header.cause.command_id = Uuid(); },
           "CommandID is invalid"},
          {"command_before_reason",
           [](E& e) {
             e.header.cause.command_id = Uuid();
             e.reason = CompactRejectReason::kUnspecified;
           },
           "CommandID is invalid"},
          // The member is `reason`, the field RejectReason (§8 point 18).
          {"reason_0", [](E& e) { e.reason = CompactRejectReason::kUnspecified; },
           "RejectReason is invalid"},
          {"reason_past_the_last",
           [](E& e) { e.reason = static_cast<CompactRejectReason>(kMaxCompactRejectReason + 1); },
           "RejectReason is invalid"},
          {"reason_before_event_id",
           [](E& e) {
             e.reason = CompactRejectReason::kUnspecified;
             e.header.event_id = Id(0xff);
           },
           "RejectReason is invalid"},
          {"event_id_random", [](E& e) { e.header.event_id = Id(0xff); }, "EventID is invalid"},
          {"event_id_of_the_resolved_outcome",
           [](E& e) { e.header.event_id = CompactWaiterReplyId(kAttempt, kWaiter1, true); },
           "EventID is invalid"},
          {"lane_full", [](E& e) { e.reason = CompactRejectReason::kControlLaneFull; }, "valid"},
      });
}

// ---------------------------------------------------------------------------------------------
// The retained-history rule (§2.4(b), §5.9)

Message Assistant(std::vector<std::string> call_ids) {
  AssistantMessage m;
  m.blocks.push_back(Text("calling"));
  for (auto& id : call_ids)
    m.blocks.push_back(ToolUseBlock{std::move(id), "tool", "{}", {}, ""});
  return m;
}

Message Result(std::string id) {
  return ToolResultMessage{{Text("out")}, std::move(id), false};
}

struct RetainedCase {
  const char* name;
  std::vector<Message> retained;
  bool valid;
};

std::vector<RetainedCase> RetainedCases() {
  const Message u = User("u");
  const Message s = SystemMessage{{Text("s")}};
  return {
      // §5.9 rejected.
      {"assistant_anchor", {Assistant({})}, false},
      {"result_missing_call", {u, Result("missing")}, false},
      {"call_with_empty_id", {u, Assistant({""})}, false},
      {"duplicate_calls", {u, Assistant({"dup", "dup"}), Result("dup"), Result("dup")}, false},
      {"unmatched_call", {u, Assistant({"unmatched"})}, false},
      {"unknown_result", {u, Result("unknown")}, false},
      {"result_twice", {u, Assistant({"once"}), Result("once"), Result("once")}, false},
      // Derived rejected.
      {"system_anchor", {s}, false},
      {"tool_anchor", {Result("x")}, false},
      {"assistant_while_outstanding", {u, Assistant({"a"}), Assistant({}), Result("a")}, false},
      {"system_while_outstanding", {u, Assistant({"a"}), s, Result("a")}, false},
      {"result_with_empty_id", {u, Assistant({"a"}), Result("")}, false},
      {"call_outstanding_across_turns",
       {u, Assistant({"a"}), u, Assistant({"b"}), Result("b")},
       false},
      // §5.9 accepted.
      {"user_assistant", {u, Assistant({})}, true},
      {"sequential_pairs", {u, Assistant({"a"}), Result("a"), Assistant({"b"}), Result("b")}, true},
      {"reuse_after_completion",
       {u, Assistant({"a"}), Result("a"), Assistant({"a"}), Result("a")},
       true},
      {"parallel_reverse_order", {u, Assistant({"a", "b"}), Result("b"), Result("a")}, true},
      {"assistant_and_user_after_pairs",
       {u, Assistant({"a"}), Result("a"), Assistant({}), u, Assistant({})},
       true},
      {"folded_user_between_call_and_result", {u, Assistant({"a"}), u, Result("a")}, true},
      {"empty", {}, true},
      // Derived accepted.
      {"system_after_anchor", {u, s, Assistant({})}, true},
      {"only_user", {u}, true},
      {"tool_use_nested_in_tool_result_is_not_a_call",
       {u,
        AssistantMessage{{ToolResultBlock{"x", {ToolUseBlock{"", "n", {}, {}, ""}}, false}}, {}}},
       true},
  };
}

// The version 1 rule; version 2 differs only where calls are outstanding at the end.
TEST(RetainedHistory, RuleCases) {
  for (const auto& c : RetainedCases()) {
    EXPECT_EQ(IsValidRetainedHistory(c.retained, 1), c.valid) << c.name;
    CompactionCommitted e = ValidCommitted();
    e.payload_version = 1;
    e.retained = c.retained;
    EXPECT_EQ(Verdict(Validate(e)), c.valid ? "valid" : "Retained is invalid") << c.name;
    const bool open_at_end = std::string_view(c.name) == "unmatched_call";
    EXPECT_EQ(IsValidRetainedHistory(c.retained, 2), c.valid || open_at_end) << c.name;
  }
}

// Version 2: the step whose calls were open when the compaction ran is retained as it was, with
// the results already present and folded user input; nothing may follow it but those.
TEST(RetainedHistory, VersionTwoAcceptsAnOpenStepAtTheEnd) {
  const Message u = User("u");
  const std::vector<std::pair<std::vector<Message>, bool>> cases = {
      {{u, Assistant({"a", "b"})}, true},
      {{u, Assistant({"a", "b"}), Result("b")}, true},
      {{u, Assistant({"x"}), Result("x"), Assistant({"a"}), u}, true},
      {{u, Assistant({"a"}), Assistant({})}, false},
      {{u, Assistant({"a"}), SystemMessage{{Text("s")}}}, false},
      {{u, Assistant({"a"}), Result("b")}, false},
  };
  for (const auto& [retained, valid] : cases) {
    EXPECT_EQ(IsValidRetainedHistory(retained, 2), valid);
    EXPECT_FALSE(IsValidRetainedHistory(retained, 1));
    CompactionCommitted e = ValidCommitted();
    e.retained = retained;
    EXPECT_EQ(Verdict(Validate(e)), valid ? "valid" : "Retained is invalid");
  }
}

TEST(RejectDetail, KindsNamesNumbersAndReasons) {
  using K = RejectDetailKind;
  const std::pair<K, std::string_view> names[] = {
      {K::kNoHistory, "no_history"},
      {K::kHistoryFitsTailTarget, "history_fits_tail_target"},
      {K::kNothingBeforeTail, "nothing_before_tail"},
      {K::kOpenToolCall, "open_tool_call"},
      {K::kInvalidTranscript, "invalid_transcript"},
      {K::kInvalidPolicy, "invalid_policy"},
      {K::kTailTooLarge, "tail_too_large"},
      {K::kPinnedTooLarge, "pinned_too_large"},
      {K::kAllPinned, "all_pinned"},
      {K::kWouldNotShrink, "would_not_shrink"},
      {K::kVetoed, "vetoed"},
      {K::kCompactorFailed, "compactor_failed"},
  };
  for (const auto& [kind, name] : names) {
    EXPECT_EQ(RejectDetailKindName(kind), name);
    EXPECT_EQ(RejectDetailKindFromName(name), kind);
    EXPECT_EQ(DetailBelongsTo(kind, CompactRejectReason::kRetainedTailTooLarge),
              kind == K::kTailTooLarge);
    EXPECT_EQ(DetailBelongsTo(kind, CompactRejectReason::kPinnedTooLarge),
              kind == K::kPinnedTooLarge);
    EXPECT_EQ(DetailBelongsTo(kind, CompactRejectReason::kIneffective), kind == K::kWouldNotShrink);
    EXPECT_EQ(DetailBelongsTo(kind, CompactRejectReason::kUnavailable),
              kind != K::kTailTooLarge && kind != K::kPinnedTooLarge &&
                  kind != K::kWouldNotShrink && kind != K::kCompactorFailed);
    EXPECT_EQ(DetailBelongsTo(kind, CompactRejectReason::kExecutionFailed),
              kind == K::kCompactorFailed);
    EXPECT_EQ(DetailBelongsTo(kind, CompactRejectReason::kCanceled), kind == K::kCompactorFailed);
  }
  EXPECT_EQ(RejectDetailKindName(K::kUnspecified), "");
  EXPECT_EQ(RejectDetailKindName(static_cast<K>(13)), "");
  EXPECT_FALSE(RejectDetailKindFromName("").has_value());
  EXPECT_FALSE(IsValid(CompactRejectDetail{}));
  EXPECT_FALSE(IsValid(CompactRejectDetail{static_cast<K>(13), {}, {}, {}, {}}));
  EXPECT_TRUE(IsValid(CompactRejectDetail{K::kPinnedTooLarge, {}, 10, 20, 5}));
  EXPECT_FALSE(IsValid(CompactRejectDetail{K::kPinnedTooLarge, 1, 10, 20, 5}));
  EXPECT_TRUE(IsValid(CompactRejectDetail{K::kAllPinned, {}, {}, {}, {}}));
  EXPECT_FALSE(IsValid(CompactRejectDetail{K::kAllPinned, {}, 10, {}, {}}));
  // A compactor's failure carries what it failed with as its note, and nothing else.
  EXPECT_TRUE(IsValid(
      CompactRejectDetail{K::kCompactorFailed, {}, {}, {}, {}, {}, {}, "model refused: HTTP 401"}));
  EXPECT_FALSE(IsValid(CompactRejectDetail{K::kCompactorFailed, {}, {}, {}, {}}));
  EXPECT_FALSE(
      IsValid(CompactRejectDetail{K::kCompactorFailed, {}, 1, {}, {}, {}, {}, "model refused"}));
  // A veto carries the hook's reason as its note, and so does a compactor's failure only.
  EXPECT_TRUE(IsValid(CompactRejectDetail{K::kVetoed, {}, {}, {}, {}, {}, {}, "release freeze"}));
  EXPECT_FALSE(IsValid(CompactRejectDetail{K::kVetoed, {}, {}, {}, {}}));
  EXPECT_FALSE(IsValid(CompactRejectDetail{K::kVetoed, 1, {}, {}, {}, {}, {}, "release freeze"}));
  EXPECT_FALSE(IsValid(CompactRejectDetail{K::kNoHistory, {}, {}, {}, {}, {}, {}, "a note"}));
  for (const std::string& bad :
       {std::string(), std::string("  "), std::string("bell\a"), std::string("c1 \xc2\x9b"),
        std::string("\xff"), std::string(kMaxDetailNoteBytes + 1, 'a')}) {
    EXPECT_FALSE(IsValidDetailNote(bad)) << bad;
  }
  EXPECT_TRUE(IsValidDetailNote(std::string(kMaxDetailNoteBytes, 'a')));
  EXPECT_TRUE(
      IsValidDetailNote("gel\xc3\xa9"
                        "e: no compaction before 18:00"));
  EXPECT_TRUE(DetailBelongsTo(K::kVetoed, CompactRejectReason::kUnavailable));
  EXPECT_TRUE(IsValid(CompactRejectDetail{K::kNoHistory, {}, {}, {}, {}}));
  EXPECT_FALSE(IsValid(CompactRejectDetail{K::kNoHistory, 1, {}, {}, {}}));
  EXPECT_TRUE(IsValid(CompactRejectDetail{K::kOpenToolCall, 3, {}, {}, {}}));
  EXPECT_FALSE(IsValid(CompactRejectDetail{K::kOpenToolCall, {}, {}, {}, {}}));
  EXPECT_TRUE(IsValid(CompactRejectDetail{K::kHistoryFitsTailTarget, {}, 10, 20, {}}));
  EXPECT_FALSE(IsValid(CompactRejectDetail{K::kHistoryFitsTailTarget, {}, 10, 20, 5}));
  EXPECT_TRUE(IsValid(CompactRejectDetail{K::kTailTooLarge, {}, 10, 20, 5}));
  EXPECT_FALSE(IsValid(CompactRejectDetail{K::kTailTooLarge, {}, 10, {}, 5}));
  // would_not_shrink: the tail_too_large numbers plus the estimate and the context now.
  CompactRejectDetail shrink{K::kWouldNotShrink, {}, 10, 20, 5};
  EXPECT_FALSE(IsValid(shrink)) << "without its two numbers";
  shrink.estimate = 15;
  EXPECT_FALSE(IsValid(shrink)) << "without context_tokens";
  shrink.context_tokens = 12;
  EXPECT_TRUE(IsValid(shrink));
  shrink.message = 1;
  EXPECT_FALSE(IsValid(shrink)) << "a number it does not name";
  CompactRejectDetail tail{K::kTailTooLarge, {}, 10, 20, 5};
  tail.estimate = 15;
  EXPECT_FALSE(IsValid(tail)) << "an estimate on another kind";
}

TEST(RejectDetail, DescriptionsAreNumbersAndAdvice) {
  EXPECT_EQ(DescribeRejectDetail({RejectDetailKind::kTailTooLarge, {}, 9000, 8000, 1024}),
            "the retained tail (9000 tokens) plus the summary budget (1024) reach the input limit "
            "(8000); lower keep_recent_tokens or max_summary_tokens, or use a larger window");
  EXPECT_EQ(DescribeRejectDetail({RejectDetailKind::kOpenToolCall, 4, {}, {}, {}}),
            "the tool calls of message 4 have no results yet and stay retained, and no complete "
            "step comes before them; compact again once the calls are answered");
  EXPECT_EQ(DescribeRejectDetail({RejectDetailKind::kHistoryFitsTailTarget, {}, 300, 20000, {}}),
            "the whole history (about 300 tokens) fits the retained tail (keep_recent_tokens "
            "20000), so there is nothing to summarize; lower keep_recent_tokens to compact anyway");
}

TEST(RejectDetail, WouldNotShrinkSaysItInNumbers) {
  CompactRejectDetail d{RejectDetailKind::kWouldNotShrink, {}, 5200, 8000, 1024};
  d.estimate = 6224;
  d.context_tokens = 6000;
  EXPECT_EQ(DescribeRejectDetail(d),
            "the context after the commit would be about 6224 tokens (retained tail 5200 + "
            "summary budget 1024), not less than the 6000 it holds now (input limit 8000); lower "
            "keep_recent_tokens or max_summary_tokens, or compact later");
}

TEST(RejectDetail, ARejectionCarriesOnlyADetailOfItsReason) {
  CompactionRejected e = ValidRejected();
  e.detail = CompactRejectDetail{RejectDetailKind::kNoHistory, {}, {}, {}, {}};
  EXPECT_EQ(Verdict(Validate(e)), "Detail is invalid");
  e.reject_reason = CompactRejectReason::kUnavailable;
  EXPECT_EQ(Verdict(Validate(e)), "valid");
  CompactWaiterRejected reply = ValidWaiterRejected();
  reply.detail = e.detail;
  EXPECT_EQ(Verdict(Validate(reply)), "Detail is invalid");
  reply = MakeWaiterRejected(reply.header, reply.attempt_id, reply.header.cause.command_id,
                             Agency::kUser, CompactRejectReason::kUnavailable, e.detail);
  reply.header.created_at = T0();
  EXPECT_EQ(Verdict(Validate(reply)), "valid");
}

TEST(RetainedHistory, StructuralRulesApplyToo) {
  CompactionCommitted e = ValidCommitted();
  Block nested = Text("deep");
  for (int i = 0; i < 129; ++i)
    nested = ToolResultBlock{"x", {nested}, false};
  e.retained = {UserMessage{{nested}}};
  EXPECT_EQ(Verdict(Validate(e)), "Retained is invalid");
  nested = Text("deep");
  for (int i = 0; i < 128; ++i)
    nested = ToolResultBlock{"x", {nested}, false};
  e.retained = {UserMessage{{nested}}};
  EXPECT_EQ(Verdict(Validate(e)), "valid");
  e.retained = {User("u"), AssistantMessage{{ToolUseBlock{"a", "n", "", {}, ""}}, {}}, Result("a")};
  EXPECT_EQ(Verdict(Validate(e)), "Retained is invalid");  // present but empty input
  e.retained = {User("u"), AssistantMessage{{ToolUseBlock{"a", "n", {}, {}, ""}}, {}}, Result("a")};
  EXPECT_EQ(Verdict(Validate(e)), "valid");  // absent input
  e.retained = {User("u"), AssistantMessage{{RefusalBlock{"declined"}}, {}}};
  EXPECT_EQ(Verdict(Validate(e)), "valid");  // refusal blocks are ordinary output
}

// ---------------------------------------------------------------------------------------------
// Waiter reply ids and stamping

TEST(CompactWaiterReplyId, MatchesTheReferenceVectors) {
  const auto id = [](const char* text) { return Uuid::Parse(text).value(); };
  const Uuid a1 = id("01000000-0000-0000-0000-000000000000");
  const Uuid c1 = id("02000000-0000-0000-0000-000000000000");
  const Uuid a2 = id("00000000-0000-4000-8000-000000000001");
  const Uuid c2 = id("00000000-0000-4000-8000-000000000002");
  EXPECT_EQ(CompactWaiterReplyId(a1, c1, true).ToString(), "c9a06d26-7c44-879e-a8c0-d4e98c50ba95");
  EXPECT_EQ(CompactWaiterReplyId(a1, c1, false).ToString(), "69d61834-adac-86ef-b60f-3461ac5f84d6");
  EXPECT_EQ(CompactWaiterReplyId(a2, c2, true).ToString(), "9c82abe1-abb0-8acc-961f-b8d1102ef522");
  EXPECT_EQ(CompactWaiterReplyId(a2, c2, false).ToString(), "b8906249-6e2c-82b8-aec7-585a63a1344a");
}

TEST(CompactWaiterReplyId, DiffersByOutcomeAttemptAndCommand) {
  const Uuid base = CompactWaiterReplyId(kAttempt, kWaiter1, true);
  EXPECT_EQ(base, CompactWaiterReplyId(kAttempt, kWaiter1, true));
  EXPECT_NE(base, CompactWaiterReplyId(kAttempt, kWaiter1, false));
  EXPECT_NE(base, CompactWaiterReplyId(Id(0x21), kWaiter1, true));
  EXPECT_NE(base, CompactWaiterReplyId(kAttempt, kWaiter2, true));
  EXPECT_NE(base, CompactWaiterReplyId(kWaiter1, kAttempt, true));  // order matters
  EXPECT_EQ(base.version(), 8);
  EXPECT_EQ(base.bytes()[8] & 0xC0, 0x80);
}

TEST(WaiterReplies, MakeBuildsARepliesInTheTerminalsCoordinates) {
  EventHeader terminal = LoopHeader();
  terminal.event_id = Id(0x77);
  const auto resolved = MakeWaiterResolved(terminal, kAttempt, kWaiter2, Agency::kUser, Id(0x77));
  EXPECT_EQ(resolved.header.session_id, kSession);
  EXPECT_EQ(resolved.header.loop_id, kLoop);
  EXPECT_TRUE(resolved.header.turn_id.IsZero());
  EXPECT_EQ(resolved.header.event_id, CompactWaiterReplyId(kAttempt, kWaiter2, true));
  EXPECT_EQ(resolved.header.cause.command_id, kWaiter2);
  EXPECT_EQ(resolved.header.cause.agency, Agency::kUser);
  EXPECT_EQ(resolved.committed_event_id, Id(0x77));
  EXPECT_EQ(resolved.header.created_at, EventTime());  // not stamped yet
  const auto rejected = MakeWaiterRejected(terminal, kAttempt, kWaiter2, Agency::kMachine,
                                           CompactRejectReason::kStaleBasis);
  EXPECT_EQ(rejected.header.event_id, CompactWaiterReplyId(kAttempt, kWaiter2, false));
  EXPECT_EQ(rejected.reason, CompactRejectReason::kStaleBasis);
}

TEST(WaiterReplies, StampSetsOnlyCreatedAt) {
  auto resolved = MakeWaiterResolved(LoopHeader(), kAttempt, kWaiter1, Agency::kUser, kEventId);
  auto before = resolved;
  ASSERT_TRUE(StampWaiterReply(resolved, T0()).ok());
  before.header.created_at = T0();
  EXPECT_EQ(resolved, before);
  EXPECT_TRUE(Validate(resolved).ok());

  auto rejected = MakeWaiterRejected(LoopHeader(), kAttempt, kWaiter1, Agency::kUser,
                                     CompactRejectReason::kInterrupted);
  ASSERT_TRUE(StampWaiterReply(rejected, T0()).ok());
  EXPECT_EQ(rejected.header.created_at, T0());
  EXPECT_TRUE(Validate(rejected).ok());
}

TEST(WaiterReplies, StampRulesInOrder) {
  const auto stamp = [](CompactWaiterResolved reply) {
    return Verdict(StampWaiterReply(reply, T0()));
  };
  const auto base = MakeWaiterResolved(LoopHeader(), kAttempt, kWaiter1, Agency::kUser, kEventId);
  auto r = base;
  r.attempt_id = Uuid();
  r.header.cause.command_id = Uuid();
  EXPECT_EQ(stamp(r), "AttemptID is invalid");
  r = base;
  r.header.cause.command_id = Uuid();
  r.header.event_id = Uuid();
  EXPECT_EQ(stamp(r), "CommandID is invalid");
  r = base;
  r.header.event_id = Uuid();
  EXPECT_EQ(stamp(r), "EventID must be set");
  r = base;
  r.header.event_id = Id(0x99);
  EXPECT_EQ(stamp(r), "EventID is invalid");
  r = base;
  r.header.event_id = CompactWaiterReplyId(kAttempt, kWaiter1, false);  // the other outcome
  EXPECT_EQ(stamp(r), "EventID is invalid");

  auto rejected = MakeWaiterRejected(LoopHeader(), kAttempt, kWaiter1, Agency::kUser,
                                     CompactRejectReason::kInterrupted);
  rejected.header.event_id = CompactWaiterReplyId(kAttempt, kWaiter1, true);
  const auto status = StampWaiterReply(rejected, T0());
  EXPECT_EQ(Verdict(status), "EventID is invalid");
  EXPECT_EQ(status.error().event, "CompactWaiterRejected");
  EXPECT_EQ(rejected.header.created_at, EventTime());  // a refused stamp changes nothing
}

// ---------------------------------------------------------------------------------------------
// Reasons

TEST(CompactRejectReason, WireValuesAndNamesAreFixed) {
  struct Row {
    CompactRejectReason reason;
    int wire;
    const char* name;
  };
  const Row rows[] = {
      {CompactRejectReason::kControlLaneFull, 1, "control_lane_full"},
      {CompactRejectReason::kShuttingDown, 2, "shutting_down"},
      {CompactRejectReason::kInterrupted, 3, "interrupted"},
      {CompactRejectReason::kCanceled, 4, "canceled"},
      {CompactRejectReason::kStaleBasis, 5, "stale_basis"},
      {CompactRejectReason::kProgressPublication, 6, "progress_publication"},
      {CompactRejectReason::kUnavailable, 7, "unavailable"},
      {CompactRejectReason::kExecutionFailed, 8, "execution_failed"},
      {CompactRejectReason::kInvalidSummary, 9, "invalid_summary"},
      {CompactRejectReason::kContextCountFailed, 10, "context_count_failed"},
      {CompactRejectReason::kSummaryTooLarge, 11, "summary_too_large"},
      {CompactRejectReason::kInternal, 12, "internal"},
      {CompactRejectReason::kContextLimitUnknown, 13, "context_limit_unknown"},
      {CompactRejectReason::kRetainedTailTooLarge, 14, "retained_tail_too_large"},
      {CompactRejectReason::kCoverageInsufficient, 15, "coverage_insufficient"},
      {CompactRejectReason::kPinnedTooLarge, 16, "pinned_too_large"},
      {CompactRejectReason::kIneffective, 17, "ineffective"},
      {CompactRejectReason::kDiscarded, 18, "discarded"},
      {CompactRejectReason::kProposalExpired, 19, "proposal_expired"},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(static_cast<int>(row.reason), row.wire) << row.name;
    EXPECT_TRUE(IsValid(row.reason)) << row.name;
    EXPECT_EQ(CompactRejectReasonName(row.reason), row.name);
    EXPECT_EQ(CompactRejectReasonFromName(row.name), row.reason);
  }
  EXPECT_EQ(kMaxCompactRejectReason, 19);
  EXPECT_FALSE(IsValid(CompactRejectReason::kUnspecified));
  EXPECT_FALSE(IsValid(static_cast<CompactRejectReason>(20)));
  EXPECT_FALSE(IsValid(static_cast<CompactRejectReason>(255)));
  EXPECT_EQ(CompactRejectReasonName(CompactRejectReason::kUnspecified), "");
  EXPECT_EQ(CompactRejectReasonName(static_cast<CompactRejectReason>(20)), "");
  EXPECT_EQ(CompactRejectReasonFromName(""), std::nullopt);
  EXPECT_EQ(CompactRejectReasonFromName("Ineffective"), std::nullopt);
  EXPECT_EQ(CompactRejectReasonFromName("Interrupted"), std::nullopt);
  EXPECT_EQ(CompactRejectReasonFromName("RetainedTailTooLarge"), std::nullopt);
}

TEST(CompactionReason, WireValuesNamesAndAgency) {
  EXPECT_EQ(static_cast<int>(CompactionReason::kManual), 1);
  EXPECT_EQ(static_cast<int>(CompactionReason::kAutomatic), 2);
  EXPECT_EQ(CompactionReasonName(CompactionReason::kManual), "manual");
  EXPECT_EQ(CompactionReasonName(CompactionReason::kAutomatic), "automatic");
  EXPECT_EQ(CompactionReasonName(CompactionReason::kUnspecified), "");
  EXPECT_EQ(CompactionReasonFromName("manual"), CompactionReason::kManual);
  EXPECT_EQ(CompactionReasonFromName("automatic"), CompactionReason::kAutomatic);
  EXPECT_EQ(CompactionReasonFromName("Manual"), std::nullopt);
  EXPECT_FALSE(IsValid(CompactionReason::kUnspecified));
  EXPECT_FALSE(IsValid(static_cast<CompactionReason>(3)));
  // §6 and §8 point 21: the opener's agency decides; Machine (the zero value) is Automatic.
  EXPECT_EQ(CompactionReasonFor(Agency::kUser), CompactionReason::kManual);
  EXPECT_EQ(CompactionReasonFor(Agency::kMachine), CompactionReason::kAutomatic);
}

}  // namespace
}  // namespace harness
