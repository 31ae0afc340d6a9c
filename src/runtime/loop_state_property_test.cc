// The loop reducer's property: a live loop's durable state is, after every command, the fold of
// its journal so far (runtime/loop_reducer.h). Random command sequences (turns with and without
// tool calls, manual and automatic compactions that commit or are rejected, chunked ones,
// previews approved or discarded, pins and unpins, undo, masking and unmasking, request changes,
// inputs of each origin withdrawn queued or cancelled running)
// drive a live loop over an in-memory journal; after each command settles (synchronized on its
// reply or its loop's events, never on time) the journal's new records are folded and the folded
// LoopState must equal the live one (runtime/session_probe.h), and the live pressure must be the
// one restore derives.
//
// Seeded and deterministic: sequence i draws from std::mt19937_64(seed + i). The default is
// kDefaultSequences sequences from seed 1 (1 000; 100 under ThreadSanitizer);
// HARNESS_LOOP_STATE_SEQUENCES and HARNESS_LOOP_STATE_SEED change both for a long run.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "harness/compaction/masking.h"
#include "harness/compaction/tail.h"
#include "harness/event/codec.h"
#include "harness/journal/memory_journal.h"
#include "harness/runtime/fold.h"
#include "harness/runtime/session.h"
#include "harness/runtime/snapshot.h"
#include "harness/runtime/tool.h"
#include "runtime/measure.h"
#include "runtime/session_probe.h"
#include "runtime/snapshot_bytes.h"
#include "support/test_model.h"

namespace harness {
namespace {

using namespace std::chrono_literals;

// ThreadSanitizer runs the same sequences for their races, not their breadth: a tenth of them.
#if defined(__SANITIZE_THREAD__)
constexpr std::uint64_t kDefaultSequences = 100;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr std::uint64_t kDefaultSequences = 100;
#else
constexpr std::uint64_t kDefaultSequences = 1'000;
#endif
#else
constexpr std::uint64_t kDefaultSequences = 1'000;
#endif
constexpr int kStepsPerSequence = 6;

constexpr std::string_view kSummary =
    "<conversation_summary><goal>ship it</goal><constraints></constraints>"
    "<decisions></decisions><state>done</state><open_items></open_items>"
    "</conversation_summary>";

std::uint64_t FromEnv(const char* name, std::uint64_t fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0')
    return fallback;
  return std::strtoull(value, nullptr, 10);
}

// Counts a request as the estimate of its messages: masking and compaction make it smaller,
// big inputs and tool outputs larger, so the pressure moves.
class EstimatingCounter final : public ContextCounter {
 public:
  CountQuality quality() const override { return CountQuality::kExactLocal; }
  Result<ContextCount, CountError> Count(const InferenceRequest& request,
                                         std::stop_token) override {
    TokenCount n = static_cast<TokenCount>(request.system.size() / 4);
    for (const Message& m : request.messages)
      n += EstimateMessageTokens(m);
    return ContextCount{request.model, n, CountQuality::kExactLocal};
  }
};

// Answers a user message that asks for it with a call of the "bash" tool, anything else with
// text.
class ScriptedClient final : public ModelClient {
 public:
  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest& request,
                                                     std::stop_token) override {
    InferenceResponse response;
    response.message.usage = Usage{1, 1, 0, 0, 0};
    const Message* last = request.messages.empty() ? nullptr : &request.messages.back();
    const auto* user = last != nullptr ? last->as<UserMessage>() : nullptr;
    const auto* text =
        user != nullptr && !user->blocks.empty() ? user->blocks[0].as<TextBlock>() : nullptr;
    if (text != nullptr && text->text.starts_with("run:")) {
      response.message.blocks.push_back(
          ToolUseBlock{"call-" + std::to_string(++calls_), "bash", "{}", {}, {}});
      response.stop = StopReason::kToolUse;
    } else {
      response.message.blocks.push_back(TextBlock{"answer"});
    }
    return response;
  }

 private:
  std::atomic<int> calls_{0};
};

class BigOutputTool final : public Tool {
 public:
  const ToolDefinition& definition() const override { return definition_; }
  ToolOutput Run(const ToolCall&, std::stop_token) override {
    ToolOutput output;
    output.text = std::string(kMinMaskedOutputBytes + 200, 'o');
    return output;
  }

 private:
  ToolDefinition definition_{"bash", "runs a command", "{\"type\":\"object\"}"};
};

// Echoes a valid summary, or fails when told to; with a budget, the attempt goes in chunks.
class ScriptedCompactor final : public Compactor {
 public:
  explicit ScriptedCompactor(std::optional<TokenCount> budget) : budget_(budget) {}
  Result<CompactionOutput, CompactorError> Compact(const CompactionInput& input,
                                                   std::stop_token) override {
    if (fail.load())
      return Fail(CompactorError{CompactorErrorKind::kFailed, {}, {}, "scripted failure"});
    return runtime_testing::EchoOutput(input, kSummary);
  }
  std::optional<TokenCount> InputBudget() const override { return budget_; }
  std::atomic<bool> fail{false};

 private:
  std::optional<TokenCount> budget_;
};

UserMessage User(std::string text) {
  UserMessage m;
  m.blocks.push_back(TextBlock{std::move(text)});
  return m;
}

// A history with tool output to mask: exchanges of a question, a tool call, its big result and
// an answer.
std::vector<Message> InitialHistory(std::mt19937_64& random) {
  std::vector<Message> history;
  const int exchanges = static_cast<int>(random() % 4);
  for (int i = 0; i < exchanges; ++i) {
    const std::string id = "c" + std::to_string(i);
    history.emplace_back(User("question " + std::to_string(i)));
    history.emplace_back(AssistantMessage{{ToolUseBlock{id, "bash", "{}", {}, {}}}, std::nullopt});
    history.emplace_back(ToolResultMessage{
        {TextBlock{std::string(kMinMaskedOutputBytes + 100 * (i + 1), 'r')}}, id, false});
    history.emplace_back(AssistantMessage{{TextBlock{"answer " + std::to_string(i)}}, {}});
  }
  return history;
}

// One session for every sequence: each sequence is a loop of its own, shut down at its end.
struct World {
  std::unique_ptr<Journal> journal = NewMemoryJournal();
  std::unique_ptr<Session> session;
  std::mutex failures_mu;
  std::vector<std::string> failures;  // InfrastructureFailure details, for the report
  std::optional<SessionFolder> folder;
  std::uint64_t folded_through = 0;

  World() {
    SessionOptions options;
    options.journal = journal.get();
    options.on_failure = [this](const InfrastructureFailure& failure) {
      std::lock_guard lock(failures_mu);
      failures.push_back(std::string(InfrastructureFailureKindName(failure.kind)) + ": " +
                         failure.detail);
    };
    session = std::move(Session::Open(std::move(options)).value());
    folder.emplace(session->id());
  }
  std::string FirstFailure() {
    std::lock_guard lock(failures_mu);
    return failures.empty() ? std::string() : failures.front();
  }
};

struct Sequence {
  World& world;
  Session* session;
  std::mt19937_64 random;
  std::shared_ptr<ScriptedCompactor> compactor;
  CompactionPolicy policy;
  Uuid loop;
  std::string log;  // the commands so far, for the report

  Sequence(World& w, std::uint64_t seed) : world(w), session(w.session.get()), random(seed) {}

  void Open() {
    policy = runtime_testing::TestPolicy();
    policy.automatic = random() % 2 == 0;
    policy.counter_policy = CounterPolicy::kRequireExact;
    policy.compact_at = 6'000;
    policy.rearm_below = 4'000;
    policy.keep_recent_tokens = 200;
    policy.max_summary_tokens = 100;
    policy.masking = random() % 2 == 0 ? CompactionMasking::kFirst : CompactionMasking::kOff;
    compactor = std::make_shared<ScriptedCompactor>(
        random() % 3 == 0 ? std::optional<TokenCount>(300) : std::nullopt);
    LoopDefinition definition;
    definition.model = runtime_testing::TestModel();
    definition.limits = ModelLimits{8'000, 3'000, 20};
    definition.client = std::make_shared<ScriptedClient>();
    definition.counter = std::make_shared<EstimatingCounter>();
    definition.compaction = policy;
    definition.compactor = compactor;
    definition.tools.push_back(std::make_shared<BigOutputTool>());
    definition.history = InitialHistory(random);
    definition.system_prompt = "be brief";
    loop = session->CreateLoop(std::move(definition)).value();
  }

  // Reads the loop's events until `done` says stop; false after 10 s without one.
  bool ReadUntil(Subscription& events, const std::function<bool(const Event&)>& done) {
    for (;;) {
      auto delivery = events.Next(std::chrono::steady_clock::now() + 10s);
      if (!delivery)
        return false;
      if (done(*delivery->event))
        return true;
    }
  }

  static bool Answers(const Event& event, const Uuid& command) {
    const std::optional<Uuid> answered = ReplyTo(event);
    return answered && *answered == command;
  }

  // One random command, settled: true when the loop is quiescent again.
  bool Step() {
    Subscription events = session->Subscribe(EventFilter::Loops({loop}));
    auto state = runtime_detail::SessionProbe::DurableState(*session, loop);
    if (!state)
      return false;
    switch (random() % 12) {
      case 0:
      case 1: {  // a turn: text, a tool call, or a big input
        const auto kind = random() % 3;
        std::string text = kind == 0   ? "run: ls"
                           : kind == 1 ? "hello"
                                       : "long " + std::string(4'000 + random() % 6'000, 'x');
        log += kind == 0 ? "turn(tool) " : kind == 1 ? "turn " : "turn(big) ";
        if (!session->SubmitInputToLoop(loop, User(std::move(text))).ok())
          return false;
        return ReadUntil(events,
                         [](const Event& e) { return std::holds_alternative<LoopIdle>(e); });
      }
      case 2: {  // a manual compaction that commits or is rejected
        const bool fail = random() % 3 == 0;
        log += fail ? "compact(fail) " : "compact ";
        compactor->fail.store(fail);
        auto command = session->CompactToLoop(loop);
        if (!command.ok())
          return false;
        const bool answered =
            ReadUntil(events, [&](const Event& e) { return Answers(e, *command); });
        compactor->fail.store(false);
        return answered;
      }
      case 3: {  // a preview, approved or discarded
        const bool approve = random() % 2 == 0;
        log += approve ? "preview(approve) " : "preview(discard) ";
        auto command = session->PreviewCompaction(loop);
        if (!command.ok())
          return false;
        std::optional<Uuid> attempt;
        const bool seen = ReadUntil(events, [&](const Event& e) {
          if (const auto* proposed = std::get_if<CompactionProposed>(&e))
            attempt = proposed->attempt_id;
          return attempt.has_value() || Answers(e, *command);
        });
        if (!seen)
          return false;
        if (attempt)
          (void)session->DecideProposal(loop, *attempt, approve);
        return true;
      }
      case 4:
      case 5: {  // a pin or an unpin of a random message
        if (state->history_ids.empty())
          return true;
        const Uuid message = state->history_ids[random() % state->history_ids.size()];
        const bool pin = !state->pinned.contains(message);
        log += pin ? "pin " : "unpin ";
        (void)session->PinMessage(loop, message, pin);
        return true;
      }
      case 6:
        log += "undo ";
        (void)session->Undo(loop);
        return true;
      case 7:
        log += "mask ";
        (void)session->MaskToolOutputs(loop);
        return true;
      case 8:
        log += "unmask ";
        (void)session->UnmaskToolOutputs(loop);
        return true;
      case 10:
      case 11: {  // two inputs of random origins, then a cancel of either
        constexpr InputOrigin kOrigins[] = {InputOrigin::kDirect, InputOrigin::kDelegateRequest,
                                            InputOrigin::kSubagentResult};
        const InputOrigin first_origin = kOrigins[random() % 3];
        const InputOrigin second_origin = kOrigins[random() % 3];
        auto first = session->SubmitInputToLoop(loop, User("run: ls"), Agency::kUser, first_origin);
        auto second = session->SubmitInputToLoop(loop, User("hello"), Agency::kUser, second_origin);
        if (!first.ok() || !second.ok())
          return false;
        const auto how = random() % 3;
        log += how == 0 ? "cancel(queued) " : how == 1 ? "cancel(delegate) " : "cancel(running) ";
        // Refused or not, the state must stay the fold of the journal.
        if (how == 0)
          (void)session->CancelQueuedInput(loop, *second);
        else
          (void)session->CancelDelegateRequest(loop, how == 1 ? *second : *first);
        // Settled once the loop is idle with nothing queued.
        for (;;) {
          if (!ReadUntil(events,
                         [](const Event& e) { return std::holds_alternative<LoopIdle>(e); }))
            return false;
          auto snapshot = session->Snapshot(loop);
          if (!snapshot.ok())
            return false;
          if (snapshot->status == LoopStatus::kIdle && snapshot->queued_inputs == 0)
            return true;
        }
      }
      default: {
        log += "request ";
        LoopRequestChange change;
        change.system_prompt = "prompt " + std::to_string(random() % 100);
        return session->ChangeLoopRequest(loop, std::move(change)).ok();
      }
    }
  }

  // Folds the records appended since the last check; the loop's fold, or a failure.
  ::testing::AssertionResult FoldNew(LoopFold& out) {
    auto records = world.journal->Read(session->id(), world.folded_through + 1, 1'000'000);
    if (!records.ok())
      return ::testing::AssertionFailure() << "read: " << records.error().Describe();
    for (const JournalRecord& record : *records) {
      if (auto added = world.folder->Add(record); !added.ok())
        return ::testing::AssertionFailure() << "fold: " << added.error().Message();
      world.folded_through = record.seq;
    }
    const LoopFold* loop_fold = world.folder->fold().FindLoop(loop);
    if (loop_fold == nullptr)
      return ::testing::AssertionFailure() << "the fold has no loop";
    out = *loop_fold;
    return ::testing::AssertionSuccess();
  }
};

// Which members of two states differ (the report of a failed comparison).
std::string Differences(const LoopState& live, const LoopState& folded) {
  std::string out;
  auto check = [&out](bool same, std::string_view name) {
    if (!same) {
      out.append(name);
      out.push_back(' ');
    }
  };
  check(live.loop == folded.loop && live.created == folded.created, "ids");
  check(live.model == folded.model, "model");
  check(live.system_prompt == folded.system_prompt, "system_prompt");
  check(live.history == folded.history, "history");
  check(live.history_ids == folded.history_ids, "history_ids");
  check(live.pinned == folded.pinned, "pinned");
  check(live.derived_prefix == folded.derived_prefix, "derived_prefix");
  check(live.replaced == folded.replaced, "replaced");
  check(live.masked == folded.masked, "masked");
  check(live.chunks == folded.chunks, "chunks");
  check(live.basis == folded.basis, "basis");
  check(live.measurement == folded.measurement, "measurement");
  check(live.occupancies == folded.occupancies, "occupancies");
  check(live.automatic_latch == folded.automatic_latch, "automatic_latch");
  check(live.committed_post == folded.committed_post, "committed_post");
  check(live.ineffective_hold == folded.ineffective_hold, "ineffective_hold");
  check(live.turn_index == folded.turn_index, "turn_index");
  check(live.open_turn == folded.open_turn, "open_turn");
  check(live.pending == folded.pending, "pending");
  check(live.exited == folded.exited, "exited");
  return out;
}

// The live state equals the fold of the journal so far; the report names the seed and the
// commands.
::testing::AssertionResult SameAsFold(Sequence& s, std::uint64_t seed) {
  const std::string where = "seed " + std::to_string(seed) + " after " + s.log;
  if (s.session->faulted() || !s.world.FirstFailure().empty())
    return ::testing::AssertionFailure() << where << "; failure: " << s.world.FirstFailure();
  LoopFold fold;
  if (auto folded = s.FoldNew(fold); !folded)
    return folded << " (" << where << ")";
  LoopState folded = fold;
  for (PendingInput& input : folded.pending)
    input.seq = 0;  // where the journal put it: only the fold learns it (loop_state.h)
  auto live = runtime_detail::SessionProbe::DurableState(*s.session, s.loop);
  if (!live.ok())
    return ::testing::AssertionFailure() << where << "; no live state";
  if (!(*live == folded))
    return ::testing::AssertionFailure() << where << "; differs in: " << Differences(*live, folded);
  auto snapshot = s.session->Snapshot(s.loop);
  if (!snapshot.ok())
    return ::testing::AssertionFailure() << where << "; no snapshot";
  // An exited loop's pressure is what it was; restore derives it from the same facts.
  if (snapshot->pressure != RestoredPressure(fold, &s.policy))
    return ::testing::AssertionFailure() << where << "; the pressure is not the restored one";
  return ::testing::AssertionSuccess();
}

TEST(LoopStateProperty, TheLiveStateIsTheFoldOfItsJournalAfterEveryCommand) {
  const std::uint64_t sequences = FromEnv("HARNESS_LOOP_STATE_SEQUENCES", kDefaultSequences);
  const std::uint64_t seed = FromEnv("HARNESS_LOOP_STATE_SEED", 1);
  World world;
  for (std::uint64_t i = 0; i < sequences; ++i) {
    Sequence s(world, seed + i);
    s.Open();
    for (int step = 0; step < kStepsPerSequence; ++step) {
      ASSERT_TRUE(s.Step()) << "seed " << seed + i << ": " << s.log << "did not settle";
      ASSERT_TRUE(SameAsFold(s, seed + i));
    }
    // Its end: queued input cancelled, LoopExited.
    s.log += "shutdown ";
    ASSERT_TRUE(world.session->ShutdownLoop(s.loop).ok());
    ASSERT_TRUE(SameAsFold(s, seed + i));
  }
  // The sequences reach every kind of change the reducer applies.
  std::map<std::string, int> seen;
  auto records = world.journal->Read(world.session->id(), 1, 100'000'000);
  ASSERT_TRUE(records.ok());
  for (const JournalRecord& record : *records)
    ++seen[record.type];
  if (sequences < 1'000)
    return;
  for (std::string_view type :
       {"MessageCommitted", "ContextMeasured", "CompactionCommitted", "CompactionRejected",
        "CompactionProposed", "CompactionChunkSummarized", "MessagePinned", "MessageUnpinned",
        "HistoryReverted", "ToolOutputsMasked", "ToolOutputsUnmasked", "LoopRequestChanged",
        "InputAccepted", "InputCancelled", "TurnStarted", "TurnCompleted", "TurnInterrupted",
        "LoopExited"})
    EXPECT_GT(seen[std::string(type)], 0) << type << " never happened";
}

// Snapshots (harness/runtime/snapshot.h): the journal of random sequences, snapshotted after
// EVERY record; each snapshot decodes (and its version-1 encoding decodes to the same state),
// encodes to the same bytes, and the decoded folder fed the
// rest of the journal ends where the fold from the start ends: every LoopState equal, and the
// whole fold (ledger, active loop, through_seq, records) encoding to the same snapshot.
// HARNESS_SNAPSHOT_SEQUENCES changes the number of sequences (default 6, a journal of about 300
// records; 3 under ThreadSanitizer; the check is quadratic in the journal's length).
TEST(SnapshotProperty, RestoreFromASnapshotAtEveryRecordEqualsRestoreFromTheStart) {
  const std::uint64_t sequences =
      FromEnv("HARNESS_SNAPSHOT_SEQUENCES", kDefaultSequences >= 1'000 ? 6 : 3);
  const std::uint64_t seed = FromEnv("HARNESS_LOOP_STATE_SEED", 1);
  World world;
  for (std::uint64_t i = 0; i < sequences; ++i) {
    Sequence s(world, seed + i);
    s.Open();
    for (int step = 0; step < kStepsPerSequence; ++step)
      ASSERT_TRUE(s.Step()) << "seed " << seed + i << ": " << s.log << "did not settle";
    if (i % 2 == 0) {  // some loops stay open, with their state mid-way
      ASSERT_TRUE(world.session->ShutdownLoop(s.loop).ok());
    }
  }
  const Uuid session = world.session->id();
  world.session->Suspend();
  world.session.reset();  // waits for a snapshot being written: the journal is final
  auto records = world.journal->Read(session, 1, 100'000'000);
  ASSERT_TRUE(records.ok());
  // Decoded once; each fold gets a copy.
  std::vector<DecodedPayload> decoded;
  for (const JournalRecord& record : *records)
    decoded.push_back(DecodeRecordPayload(record));
  SessionFolder from_start(session);
  for (std::size_t i = 0; i < records->size(); ++i)
    ASSERT_TRUE(from_start.Add((*records)[i], decoded[i]).ok());
  auto final_encoding = EncodeSnapshot(from_start);
  ASSERT_TRUE(final_encoding.ok()) << final_encoding.error().Message();
  const std::string final_bytes = *final_encoding;
  std::size_t checked = 0;
  SessionFolder prefix(session);
  for (std::size_t at = 0; at < records->size(); ++at) {
    ASSERT_TRUE(prefix.Add((*records)[at], decoded[at]).ok());
    auto bytes = EncodeSnapshot(prefix);
    if (!bytes.ok()) {
      // Inside a LoopCreated's continuation: no snapshot describes it.
      ASSERT_EQ(bytes.error().kind, SnapshotErrorKind::kNotAtABoundary);
      continue;
    }
    auto restored = DecodeSnapshot(*bytes, session);
    ASSERT_TRUE(restored.ok()) << "at " << at + 1 << ": " << restored.error().Message();
    // Codec version 1, which every build still reads, gives the same state.
    auto v1 = runtime_detail::EncodeSnapshotAtVersion(prefix, 1);
    ASSERT_TRUE(v1.ok()) << "at " << at + 1 << ": " << v1.error().Message();
    auto from_v1 = DecodeSnapshot(*v1, session);
    ASSERT_TRUE(from_v1.ok()) << "at " << at + 1 << ": " << from_v1.error().Message();
    auto v1_again = EncodeSnapshot(*from_v1);
    ASSERT_TRUE(v1_again.ok()) << "at " << at + 1;
    ASSERT_EQ(*v1_again, *bytes) << "at " << at + 1;
    auto again = EncodeSnapshot(*restored);
    ASSERT_TRUE(again.ok()) << "at " << at + 1 << ": " << again.error().Message();
    ASSERT_EQ(*again, *bytes) << "at " << at + 1;
    for (std::size_t i = at + 1; i < records->size(); ++i)
      ASSERT_TRUE(restored->Add((*records)[i], decoded[i]).ok()) << "at " << at + 1;
    const SessionFold& want = from_start.fold();
    const SessionFold& got = restored->fold();
    ASSERT_EQ(got.loops.size(), want.loops.size()) << "at " << at + 1;
    for (std::size_t l = 0; l < want.loops.size(); ++l) {
      const LoopState& w = want.loops[l];
      const LoopState& g = got.loops[l];
      ASSERT_TRUE(g == w) << "snapshot after record " << at + 1 << ", loop " << l
                          << " differs in: " << Differences(g, w);
    }
    auto end = EncodeSnapshot(*restored);
    ASSERT_TRUE(end.ok()) << "at " << at + 1 << ": " << end.error().Message();
    ASSERT_EQ(*end, final_bytes) << "at " << at + 1;
    ++checked;
  }
  EXPECT_GT(checked, records->size() / 2);
  RecordProperty("records", static_cast<int>(records->size()));
}

}  // namespace
}  // namespace harness
