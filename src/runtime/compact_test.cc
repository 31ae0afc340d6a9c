// CompactConversation: committed, rejected for several reasons, refused requests, pins, stored
// and in-memory sessions, and two calls at once (run under TSan with the runtime's tests).
#include "harness/runtime/compact.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <latch>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "harness/compaction/extractive.h"
#include "harness/journal/memory_journal.h"

namespace harness {
namespace {

Message User(std::string text) {
  return UserMessage{{TextBlock{std::move(text)}}};
}

Message Assistant(std::string text) {
  return AssistantMessage{{TextBlock{std::move(text)}}, std::nullopt};
}

std::vector<Message> Conversation() {
  return {
      User("The lexer drops the last token of a file without a newline. Do not touch lexer.h."),
      Assistant(
          "Next() returns early at end of input before it emits the token. I will fix Next()."),
      User("Go ahead, and add a test."),
      Assistant("Done: Next() emits the last token; lexer_test.cc has a case without a newline."),
      User("Now run the whole suite."),
      Assistant("All 214 tests pass."),
  };
}

CompactRequest Request() {
  CompactRequest request;
  request.messages = Conversation();
  request.system_prompt = "You are a careful coding agent.";
  request.model = ModelKey{"example", "offline"};
  request.limits = ModelLimits{32'000, 0, 4'000};
  request.policy.keep_recent_segments = 1;
  request.policy.keep_recent_tokens = 1'000;
  request.policy.reserved_output = 4'000;
  request.policy.safety_margin = 1'000;  // the estimate counter needs one
  request.policy.max_summary_tokens = 2'000;
  request.policy.count_timeout = std::chrono::seconds(5);
  return request;
}

// Answers with a summary that is not one (no <conversation_summary> root).
class ProseCompactor final : public Compactor {
 public:
  Result<CompactionOutput, CompactorError> Compact(const CompactionInput& input,
                                                   std::stop_token) override {
    CompactionOutput output;
    output.basis = input.basis;
    output.model = input.model;
    output.request_fingerprint = input.request_fingerprint;
    output.summary.blocks.push_back(TextBlock{"<notes>the user fixed a lexer</notes>"});
    return output;
  }
};

class FailingCompactor final : public Compactor {
 public:
  Result<CompactionOutput, CompactorError> Compact(const CompactionInput&,
                                                   std::stop_token) override {
    return Fail(CompactorError{CompactorErrorKind::kFailed, std::nullopt, std::nullopt, "down"});
  }
};

// The stored session as a restore sees it: its one loop's history.
std::vector<Message> RestoredHistory(Journal& journal, const StoredCompaction& stored,
                                     const CompactRequest& like) {
  SessionOptions options;
  options.journal = &journal;
  options.session_id = stored.session;
  RestoreOptions restore;
  restore.start_queued = false;
  restore.resolve = [&](const RestoredLoopInfo& info) -> Result<LoopDefinition, SessionError> {
    LoopDefinition definition;
    definition.model = info.model;
    definition.limits = like.limits;
    definition.system_prompt = info.system_prompt;
    definition.client = std::make_shared<CompactOnlyModelClient>();
    definition.counter = std::make_shared<EstimateCounter>();
    definition.compaction = like.policy;
    definition.compactor = std::make_shared<ExtractiveCompactor>();
    return definition;
  };
  auto session = Session::Restore(std::move(options), std::move(restore));
  EXPECT_TRUE(session.ok()) << (session.ok() ? "" : session.error().Message());
  if (!session.ok())
    return {};
  auto snapshot = (*session)->Snapshot(stored.loop);
  EXPECT_TRUE(snapshot.ok());
  (*session)->Suspend();
  return snapshot.ok() ? snapshot->history : std::vector<Message>{};
}

TEST(CompactConversation, CommitsAndReturnsTheSummaryThenTheRetainedTail) {
  const std::vector<Message> input = Conversation();
  auto done = CompactConversation(Request());
  ASSERT_TRUE(done.ok()) << done.error().message;
  ASSERT_GE(done->messages.size(), 2u);
  const auto* summary = done->messages[0].as<UserMessage>();
  ASSERT_NE(summary, nullptr);
  EXPECT_EQ(summary->blocks, done->committed.summary.blocks);
  EXPECT_NE(done->summary.find("<conversation_summary>"), std::string::npos);
  // The tail is the input's own last messages, unchanged.
  const std::size_t retained = done->report.retained;
  ASSERT_GT(retained, 0u);
  ASSERT_EQ(done->messages.size(), 1 + retained);
  for (std::size_t i = 0; i < retained; ++i)
    EXPECT_EQ(done->messages[1 + i], input[input.size() - retained + i]) << i;
  EXPECT_EQ(done->report.messages_before, input.size());
  ASSERT_TRUE(done->report.before.has_value());
  EXPECT_GT(done->report.after.input_tokens, 0u);
  EXPECT_TRUE(done->report.coverage.has_value());  // the policy's default: report
  EXPECT_TRUE(done->report.summarizer_input_tokens.has_value());
  EXPECT_FALSE(done->stored.has_value());  // nothing left behind: no ids to give
}

TEST(CompactConversation, EventsAreSeenInOrderOnTheCallingThread) {
  CompactRequest request = Request();
  std::vector<std::string> kinds;
  const auto caller = std::this_thread::get_id();
  bool same_thread = true;
  request.on_event = [&](const Event& event) {
    kinds.emplace_back(EventTypeName(event));
    same_thread = same_thread && std::this_thread::get_id() == caller;
  };
  auto done = CompactConversation(std::move(request));
  ASSERT_TRUE(done.ok()) << done.error().message;
  EXPECT_TRUE(same_thread);
  ASSERT_FALSE(kinds.empty());
  EXPECT_EQ(kinds.front(), "LoopCreated");  // with on_event, the creation events too
  const auto committed = std::find(kinds.begin(), kinds.end(), "CompactionCommitted");
  const auto resolved = std::find(kinds.begin(), kinds.end(), "CompactWaiterResolved");
  ASSERT_NE(committed, kinds.end());
  ASSERT_NE(resolved, kinds.end());
  EXPECT_LT(committed, resolved);
}

TEST(CompactConversation, APinnedMessageIsKeptVerbatimAfterTheSummary) {
  const std::vector<Message> input = Conversation();
  CompactRequest request = Request();
  request.pins = {0};  // the first request would be summarized without its pin
  auto done = CompactConversation(std::move(request));
  ASSERT_TRUE(done.ok()) << done.error().message;
  ASSERT_EQ(done->report.pinned, 1u);
  ASSERT_GE(done->messages.size(), 3u);
  EXPECT_EQ(done->messages[1], input[0]);
  EXPECT_EQ(done->messages.size(), 2 + done->report.retained);

  auto unpinned = CompactConversation(Request());
  ASSERT_TRUE(unpinned.ok());
  EXPECT_EQ(unpinned->report.pinned, 0u);
  EXPECT_NE(unpinned->messages[1], input[0]);
}

TEST(CompactConversation, StoredItIsASessionARestoreReadsWithTheReplacement) {
  auto journal = NewMemoryJournal();
  CompactRequest request = Request();
  request.journal = journal.get();
  const CompactRequest like = request;
  auto done = CompactConversation(std::move(request));
  ASSERT_TRUE(done.ok()) << done.error().message;
  ASSERT_TRUE(done->stored.has_value());
  EXPECT_FALSE(done->stored->command.IsZero());
  auto sessions = journal->ListSessions();
  ASSERT_TRUE(sessions.ok());
  ASSERT_EQ(*sessions, std::vector<Uuid>{done->stored->session});
  EXPECT_EQ(RestoredHistory(*journal, *done->stored, like), done->messages);
}

TEST(CompactConversation, ARejectionInstallsNothingInTheStoredSession) {
  auto journal = NewMemoryJournal();
  CompactRequest request = Request();
  request.journal = journal.get();
  request.compactor = std::make_shared<ProseCompactor>();
  const CompactRequest like = request;
  auto done = CompactConversation(std::move(request));
  ASSERT_FALSE(done.ok());
  ASSERT_TRUE(done.error().stored.has_value());
  EXPECT_EQ(RestoredHistory(*journal, *done.error().stored, like), Conversation());
}

TEST(CompactConversation, AnInvalidSummaryIsRejectedWithTheRuleItBroke) {
  CompactRequest request = Request();
  request.compactor = std::make_shared<ProseCompactor>();
  auto done = CompactConversation(std::move(request));
  ASSERT_FALSE(done.ok());
  const CompactFailure& failure = done.error();
  EXPECT_EQ(failure.kind, CompactFailureKind::kRejected);
  EXPECT_EQ(failure.reason, CompactRejectReason::kInvalidSummary);
  ASSERT_TRUE(failure.invalid_summary.has_value());
  EXPECT_EQ(*failure.invalid_summary, InvalidSummaryReason::kXmlRoot);
  EXPECT_NE(failure.message.find("invalid_summary xml_root"), std::string::npos) << failure.message;
  EXPECT_EQ(failure.message.find("lexer"), std::string::npos);  // never the model's text
}

TEST(CompactConversation, AFailingCompactorIsExecutionFailed) {
  CompactRequest request = Request();
  request.compactor = std::make_shared<FailingCompactor>();
  auto done = CompactConversation(std::move(request));
  ASSERT_FALSE(done.ok());
  EXPECT_EQ(done.error().kind, CompactFailureKind::kRejected);
  EXPECT_EQ(done.error().reason, CompactRejectReason::kExecutionFailed);
  ASSERT_TRUE(done.error().compactor_error.has_value());
  EXPECT_EQ(done.error().compactor_error->kind, CompactorErrorKind::kFailed);
}

TEST(CompactConversation, NothingBeforeTheTailIsUnavailable) {
  CompactRequest request = Request();
  request.messages = {User("Only one request so far.")};
  auto done = CompactConversation(std::move(request));
  ASSERT_FALSE(done.ok());
  EXPECT_EQ(done.error().kind, CompactFailureKind::kRejected);
  EXPECT_EQ(done.error().reason, CompactRejectReason::kUnavailable);
  EXPECT_NE(done.error().message.find("compaction rejected: unavailable"), std::string::npos)
      << done.error().message;
}

TEST(CompactConversation, ASystemMessageInTheHistoryIsUnavailable) {
  CompactRequest request = Request();
  request.messages.insert(request.messages.begin(),
                          SystemMessage{{TextBlock{"You are a careful coding agent."}}});
  auto done = CompactConversation(std::move(request));
  ASSERT_FALSE(done.ok());
  EXPECT_EQ(done.error().reason, CompactRejectReason::kUnavailable) << done.error().message;
}

TEST(CompactConversation, ATailThatCannotFitIsRetainedTailTooLarge) {
  CompactRequest request = Request();
  request.limits = ModelLimits{8'000, 0, 1'000};
  request.policy.reserved_output = 1'000;
  request.policy.safety_margin = 800;
  request.policy.max_summary_tokens = 2'000;
  request.messages.push_back(User(std::string(24'000, 'x')));  // about 6,000 tokens, kept whole
  auto done = CompactConversation(std::move(request));
  ASSERT_FALSE(done.ok());
  EXPECT_EQ(done.error().reason, CompactRejectReason::kRetainedTailTooLarge)
      << done.error().message;
  EXPECT_NE(done.error().message.find("keep_recent_tokens"), std::string::npos);
}

TEST(CompactConversation, AStopRequestedInterruptsIt) {
  CompactRequest request = Request();
  std::stop_source stop;
  stop.request_stop();
  request.stop = stop.get_token();
  auto done = CompactConversation(std::move(request));
  ASSERT_FALSE(done.ok());
  EXPECT_EQ(done.error().reason, CompactRejectReason::kInterrupted);
}

TEST(CompactConversation, RequestsThatCannotRunAreRefusedBeforeAnythingIsStored) {
  auto journal = NewMemoryJournal();
  const auto refused = [&](CompactRequest request) {
    request.journal = journal.get();
    auto done = CompactConversation(std::move(request));
    EXPECT_FALSE(done.ok());
    return done.ok() ? CompactFailure{} : done.error();
  };
  CompactRequest pin = Request();
  pin.pins = {6};
  CompactFailure failure = refused(std::move(pin));
  EXPECT_EQ(failure.kind, CompactFailureKind::kInvalidRequest);
  EXPECT_EQ(failure.message, "pin 6 names no message: there are 6 messages (indexes from 0)");

  CompactRequest focus = Request();
  focus.instructions = "   ";
  failure = refused(std::move(focus));
  EXPECT_EQ(failure.kind, CompactFailureKind::kInvalidRequest);
  EXPECT_EQ(failure.message.rfind("instructions: ", 0), 0u) << failure.message;

  CompactRequest policy = Request();
  policy.policy.keep_recent_segments = 0;
  failure = refused(std::move(policy));
  EXPECT_EQ(failure.kind, CompactFailureKind::kInvalidRequest);
  ASSERT_TRUE(failure.session.has_value());
  EXPECT_EQ(failure.session->kind, SessionErrorKind::kInvalidDefinition);

  CompactRequest margin = Request();
  margin.policy.safety_margin = 0;  // the estimate counter needs one
  failure = refused(std::move(margin));
  EXPECT_EQ(failure.kind, CompactFailureKind::kInvalidRequest);

  auto sessions = journal->ListSessions();
  ASSERT_TRUE(sessions.ok());
  EXPECT_TRUE(sessions->empty());
}

TEST(CompactConversation, TwoCallsAtOnceAreIndependent) {
  auto journal = NewMemoryJournal();
  std::latch start(2);
  Result<CompactedConversation, CompactFailure> results[2] = {Fail(CompactFailure{}),
                                                              Fail(CompactFailure{})};
  std::vector<std::jthread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      CompactRequest request = Request();
      request.journal = journal.get();  // one journal, two sessions
      request.pins = {static_cast<std::size_t>(i)};
      start.arrive_and_wait();
      results[i] = CompactConversation(std::move(request));
    });
  }
  threads.clear();  // joins
  ASSERT_TRUE(results[0].ok()) << results[0].error().message;
  ASSERT_TRUE(results[1].ok()) << results[1].error().message;
  EXPECT_NE(results[0]->stored->session, results[1]->stored->session);
  EXPECT_EQ(results[0]->messages[1], Conversation()[0]);
  EXPECT_EQ(results[1]->messages[1], Conversation()[1]);
  auto sessions = journal->ListSessions();
  ASSERT_TRUE(sessions.ok());
  EXPECT_EQ(sessions->size(), 2u);
}

}  // namespace
}  // namespace harness
