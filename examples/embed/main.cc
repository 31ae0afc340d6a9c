// A program outside the harness tree that embeds it: it compacts a short conversation with the
// offline extractive compactor (no model, no network) in one call, stores the compaction as a
// session of a SQLite journal (which `harness sessions ls JOURNAL_DIR` lists and
// `harness compact --session ID --data-dir JOURNAL_DIR` goes on with), and prints the
// replacement messages. Built against an installed harness with find_package(harness)
// (CMakeLists.txt beside it; docs/embedding.md).
//
// Usage: embed JOURNAL_DIR. Exit 0 when the compaction committed, 1 otherwise.
#include <harness/journal/sqlite_journal.h>
#include <harness/runtime/compact.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace {

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

  harness::CompactRequest request;
  request.messages = {
      User("Fix the failing test in parser_test.cc. Never change the public API."),
      Assistant("The test fails because Parse() drops a trailing comma. I will fix Parse()."),
      User("Good. Keep the fix small."),
      Assistant("Done: Parse() now accepts the trailing comma; parser_test.cc passes."),
      User("Now update the changelog."),
      Assistant("The changelog has a new entry under Fixed."),
  };
  request.model = harness::ModelKey{"example", "offline"};
  request.limits = harness::ModelLimits{32'000, 0, 4'000};
  request.policy.keep_recent_segments = 1;
  request.policy.keep_recent_tokens = 1'000;
  request.policy.reserved_output = 4'000;
  request.policy.safety_margin = 1'000;  // the estimate counter may undercount: a margin is needed
  request.policy.max_summary_tokens = 2'000;
  request.policy.count_timeout = std::chrono::seconds(5);
  request.journal = journal->get();  // without it, nothing is stored

  auto compacted = harness::CompactConversation(std::move(request));
  if (!compacted.ok()) {
    std::fprintf(stderr, "embed: %s\n", compacted.error().message.c_str());
    return 1;
  }
  std::printf("compaction committed: %zu messages kept after the summary\n",
              compacted->report.retained);
  std::printf(
      "history: %zu messages, the first a summary: %s\n", compacted->messages.size(),
      compacted->messages[0] == harness::Message(compacted->committed.summary) ? "yes" : "no");
  std::printf("session %s\n", compacted->stored->session.ToString().c_str());
  return 0;
}
