// A program outside the harness tree that embeds it: it opens a session on a SQLite journal,
// creates a loop whose history is a short transcript, compacts it with the offline extractive
// compactor (no model, no network) and prints what the compaction kept. Built against an
// installed harness with find_package(harness) (CMakeLists.txt beside it; docs/install.md).
//
// Usage: embed JOURNAL_DIR. Exit 0 when the compaction committed, 1 otherwise.
#include <harness/compaction/extractive.h>
#include <harness/inference/counter.h>
#include <harness/journal/sqlite_journal.h>
#include <harness/runtime/session.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <variant>

namespace {

// A manual compaction runs no turn: the loop's model is never called.
class NoTurns final : public harness::ModelClient {
 public:
  harness::Result<harness::InferenceResponse, harness::InferenceError> Complete(
      const harness::InferenceRequest&, std::stop_token) override {
    return harness::Fail(
        harness::InferenceError{harness::InferenceErrorKind::kRefused, "no turns here"});
  }
};

harness::Message User(std::string text) {
  return harness::UserMessage{{harness::TextBlock{std::move(text)}}};
}

harness::Message Assistant(std::string text) {
  return harness::AssistantMessage{{harness::TextBlock{std::move(text)}}, std::nullopt};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: embed JOURNAL_DIR\n");
    return 2;
  }
  auto journal = harness::SqliteJournal::Open(argv[1]);
  if (!journal.ok()) {
    std::fprintf(stderr, "embed: cannot open the journal: %s\n",
                 journal.error().Describe().c_str());
    return 1;
  }
  harness::SessionOptions options;
  options.journal = journal->get();
  auto session = harness::Session::Open(std::move(options));
  if (!session.ok()) {
    std::fprintf(stderr, "embed: %s\n", session.error().Message().c_str());
    return 1;
  }
  harness::Subscription events = (*session)->Subscribe();

  harness::LoopDefinition loop;
  loop.model = harness::ModelKey{"example", "offline"};
  loop.limits = harness::ModelLimits{32'000, 0, 4'000};
  loop.client = std::make_shared<NoTurns>();
  loop.counter = std::make_shared<harness::EstimateCounter>();
  loop.compactor = std::make_shared<harness::ExtractiveCompactor>();
  harness::CompactionPolicy policy;
  policy.keep_recent_segments = 1;
  policy.keep_recent_tokens = 1'000;
  policy.reserved_output = 4'000;
  policy.safety_margin = 1'000;  // the estimate counter may undercount: a margin is required
  policy.max_summary_tokens = 2'000;
  policy.count_timeout = std::chrono::seconds(5);
  loop.compaction = policy;
  loop.history = {
      User("Fix the failing test in parser_test.cc. Never change the public API."),
      Assistant("The test fails because Parse() drops a trailing comma. I will fix Parse()."),
      User("Good. Keep the fix small."),
      Assistant("Done: Parse() now accepts the trailing comma; parser_test.cc passes."),
      User("Now update the changelog."),
      Assistant("The changelog has a new entry under Fixed."),
  };
  auto created = (*session)->CreateLoop(std::move(loop));
  if (!created.ok()) {
    std::fprintf(stderr, "embed: %s\n", created.error().Message().c_str());
    return 1;
  }
  auto command = (*session)->CompactToLoop(*created);
  if (!command.ok()) {
    std::fprintf(stderr, "embed: %s\n", command.error().Message().c_str());
    return 1;
  }

  // The compaction answers its command with one reply event; the events before it say what
  // happened.
  int exit = 1;
  for (;;) {
    auto next = events.Next(std::stop_token{});
    if (!next.ok()) {
      std::fprintf(stderr, "embed: the events ended before the reply\n");
      break;
    }
    const harness::Event& event = *next->event;
    if (const auto* committed = std::get_if<harness::CompactionCommitted>(&event)) {
      std::printf("compaction committed: %zu messages kept after the summary\n",
                  committed->retained.size());
    } else if (const auto* rejected = std::get_if<harness::CompactWaiterRejected>(&event)) {
      if (rejected->header.cause.command_id == *command) {
        std::printf("compaction rejected: %s\n",
                    std::string(harness::CompactRejectReasonName(rejected->reason)).c_str());
        break;
      }
    } else if (const auto* resolved = std::get_if<harness::CompactWaiterResolved>(&event)) {
      if (resolved->header.cause.command_id == *command) {
        exit = 0;
        break;
      }
    }
  }
  if (exit == 0) {
    auto snapshot = (*session)->Snapshot(*created);
    if (snapshot.ok())
      std::printf("history: %zu messages, the first a summary: %s\n", snapshot->history.size(),
                  snapshot->derived_prefix == 1 ? "yes" : "no");
  }
  (*session)->Suspend();
  return exit;
}
