// The artifact ledger (compaction/extractive_ledger.h): how touches combine, how a later clean
// run supersedes failures of the same step, what a commit report records.
#include "compaction/extractive_ledger.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace harness::extractive_detail {
namespace {

ToolOutput Output(std::vector<std::string> lines) {
  return ToolOutput{std::move(lines), std::nullopt};
}

TEST(ExtractiveLedger, WritingAFileReadBeforeIsEditingItAndTheLatestTouchComesFirst) {
  Ledger ledger;
  ledger.Touch("a.cc", FileTouch::kRead);
  ledger.Touch("b.cc", FileTouch::kCreated);
  ledger.Touch("a.cc", FileTouch::kCreated);
  ledger.Touch("c.cc", FileTouch::kDeleted);
  ledger.Touch("c.cc", FileTouch::kEdited);
  EXPECT_EQ(ledger.Files([](const FileEntry& f) { return f.edited; }),
            (std::vector<std::string>{"c.cc", "a.cc"}));
  EXPECT_EQ(ledger.Files([](const FileEntry& f) { return f.created; }),
            (std::vector<std::string>{"b.cc"}));
  EXPECT_TRUE(ledger.Files([](const FileEntry& f) { return f.deleted; }).empty());
}

TEST(ExtractiveLedger, ACleanRunOfTheSameStepSupersedesItsFailures) {
  Ledger ledger;
  ledger.RecordCommand("git push", Output({"error: failed to push some refs"}), true);
  ledger.RecordCommand("npm run lint", Output({"6 files would be reformatted"}), true);
  ASSERT_EQ(ledger.Commands(true).size(), 2U);
  EXPECT_EQ(ledger.Commands(true)[0].second->last_error, "6 files would be reformatted");

  ledger.RecordCommand("git push -u origin main", Output({"done"}), false);
  const auto failed = ledger.Commands(true);
  ASSERT_EQ(failed.size(), 1U);
  EXPECT_EQ(failed[0].first, "npm run lint");
  const auto succeeded = ledger.Commands(false);
  ASSERT_EQ(succeeded.size(), 1U);
  EXPECT_EQ(succeeded[0].first, "git push -u origin main");
  EXPECT_EQ(succeeded[0].second->fixed_error, "error: failed to push some refs");
  EXPECT_EQ(succeeded[0].second->output, "done");
}

// A failure whose output names no error is told by its last line that says something, never by
// a separator a script printed.
TEST(ExtractiveLedger, AFailureIsToldByALineThatSaysSomething) {
  Ledger ledger;
  ledger.RecordCommand("ls .git/gc.log; echo ---", Output({"ls: gc.log: No such file", "---"}),
                       true);
  ledger.RecordCommand("./check.sh", Output({"checked 3 files", "---", ""}), true);
  const auto failed = ledger.Commands(true);
  ASSERT_EQ(failed.size(), 2U);
  EXPECT_EQ(failed[1].second->last_error, "ls: gc.log: No such file");
  EXPECT_EQ(failed[0].second->last_error, "checked 3 files");
}

TEST(ExtractiveLedger, CommitsEditsAndErrorsAreToldOnceAtTheirLatestPlace) {
  Ledger ledger;
  ledger.RecordCommits({"[main abc1234] Add the cache", "[main] not a commit", "[x zz] no hash"});
  EXPECT_EQ(ledger.commits(),
            (std::vector<std::string>{"Committed abc1234 on main: Add the cache"}));

  ledger.RecordEdit("a.cc", "`x` -> `y`");
  ledger.RecordEdit("b.cc", "`p` -> `q`");
  ledger.RecordEdit("a.cc", "`x` -> `y`");
  ledger.RecordEdit("a.cc", "");
  ASSERT_EQ(ledger.edits().size(), 2U);
  EXPECT_EQ(ledger.edits()[0].path, "b.cc");
  EXPECT_EQ(ledger.edits()[1].path, "a.cc");

  ledger.RecordToolError("Read", Output({"File does not exist."}));
  ledger.RecordToolError("Edit", Output({"error: no match"}));
  ledger.RecordToolError("Read", Output({"File does not exist."}));
  EXPECT_EQ(ledger.tool_errors(),
            (std::vector<std::string>{"Error from Edit: error: no match",
                                      "Error from Read: File does not exist."}));
}

// A retried edit keeps the reason given for it first when the retry is made without words,
// and takes the newer one when it says why again.
TEST(ExtractiveLedger, AnEditKeepsItsReasonThroughARetry) {
  Ledger ledger;
  ledger.RecordEdit("a.cc", "`i < n` -> `i <= n`", "The loop misses the last item.");
  ledger.RecordEdit("b.cc", "`p` -> `q`");
  ledger.RecordEdit("a.cc", "`i < n` -> `i <= n`");
  ASSERT_EQ(ledger.edits().size(), 2U);
  EXPECT_EQ(ledger.edits()[1].path, "a.cc");
  EXPECT_EQ(ledger.edits()[1].reason, "The loop misses the last item.");
  EXPECT_EQ(ledger.edits()[0].reason, "");
  ledger.RecordEdit("a.cc", "`i < n` -> `i <= n`", "Off by one.");
  ASSERT_EQ(ledger.edits().size(), 2U);
  EXPECT_EQ(ledger.edits()[1].reason, "Off by one.");
}

TEST(ExtractiveLedger, ACommandThatOnlyLooksListsPrintsOrSearches) {
  EXPECT_TRUE(Ledger::OnlyLooks("ls ~/Library/LaunchAgents/*git* 2>&1"));
  EXPECT_TRUE(Ledger::OnlyLooks("cd /repo && LC_ALL=C /usr/bin/grep -rn foo src"));
  EXPECT_TRUE(Ledger::OnlyLooks("cat .git/gc.log"));
  EXPECT_FALSE(Ledger::OnlyLooks("make test"));
  EXPECT_FALSE(Ledger::OnlyLooks("git cat-file -t e53647ba"));
  EXPECT_FALSE(Ledger::OnlyLooks("cd /repo &&"));
  EXPECT_FALSE(Ledger::OnlyLooks(""));
}

}  // namespace
}  // namespace harness::extractive_detail
