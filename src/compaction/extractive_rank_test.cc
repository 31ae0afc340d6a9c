// The extractive compactor's ranking (compaction/extractive_rank.h): what comes first when the
// budget cannot hold everything.
#include "compaction/extractive_rank.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace harness::extractive_detail {
namespace {

ToolOutput Output(std::vector<std::string> lines) {
  return ToolOutput{std::move(lines), std::nullopt};
}

// The place of the first item holding `text`, or the number of items when none does.
std::size_t PlaceOf(const std::vector<Item>& items, const std::string& text) {
  for (std::size_t k = 0; k < items.size(); ++k) {
    if (items[k].text.find(text) != std::string::npos)
      return k;
  }
  return items.size();
}

// A long run: what its older steps came to is the history a continuation needs, so it comes
// before the choices made along the way, the errors already fixed and the looks that found
// nothing, which a tight budget drops first.
TEST(ExtractiveRank, OlderStepsComeBeforeChoicesFixedErrorsAndFailedLooks) {
  Extract extract;
  extract.first_request = Dated{"Find why the index breaks.", 0};
  for (std::size_t k = 0; k < 14; ++k) {
    Step step;
    step.request = "Look at part " + std::to_string(k) + ".";
    step.at = 2 * k + 1;
    step.answers = {"Part " + std::to_string(k) + " found: the cache-tree points at 082c2c44."};
    step.answered_at = 2 * k + 2;
    extract.steps.push_back(std::move(step));
  }
  extract.decisions = {Dated{"I'll rebuild the index rather than clone again.", 5}};
  extract.ledger.RecordCommand("git status", Output({"fatal: unable to read e53647ba"}), true);
  extract.ledger.RecordCommand("git status", Output({"clean"}), false);
  extract.ledger.RecordCommand("ls .git/gc.log", Output({"ls: .git/gc.log: No such file"}), true);
  extract.ledger.RecordCommand("go build ./...", Output({"undefined: worktree"}), true);

  const std::vector<Item> items = Prioritize(extract);
  const std::size_t oldest = PlaceOf(items, "Part 0 found");
  ASSERT_LT(oldest, items.size());
  EXPECT_LT(oldest, PlaceOf(items, "I'll rebuild the index")) << "a choice came first";
  EXPECT_LT(oldest, PlaceOf(items, "failed earlier")) << "a fixed error came first";
  // A look that found nothing comes after the history too; a build that fails, before it.
  EXPECT_LT(oldest, PlaceOf(items, "Failed: ls .git/gc.log")) << "a failed look came first";
  EXPECT_LT(PlaceOf(items, "Failed: go build"), oldest);
  EXPECT_LT(PlaceOf(items, "Failed: ls .git/gc.log"), items.size());
  EXPECT_LT(PlaceOf(items, "failed earlier"), items.size());
  EXPECT_LT(PlaceOf(items, "I'll rebuild the index"), items.size());
}

// An older step told in fewer bytes than its answer: when the answer was a list, every point
// of it is named (its lead), not the first point whole and the rest cut away.
TEST(ExtractiveRank, AnOlderStepWhoseAnswerIsAListIsToldByTheLeadOfEachPoint) {
  Extract extract;
  extract.first_request = Dated{"Find why the index breaks.", 0};
  const std::string list_answer =
      "go-git's SetEncodedObject creates loose objects — every checkpoint save creates blobs, "
      "trees and commits as loose objects in .git/objects, thousands of them a day, and none "
      "of them is ever packed by go-git itself. Loose object count exceeds the gc.auto "
      "threshold — the default is 6700. VS Code triggers gc --auto on its periodic fetch.";
  for (std::size_t k = 0; k < 14; ++k) {
    Step step;
    step.request = "Look at part " + std::to_string(k) + ".";
    step.at = 2 * k + 1;
    if (k == 0) {
      step.answers = {list_answer};
      step.points = {
          "go-git's SetEncodedObject creates loose objects — every checkpoint save creates "
          "blobs, trees and commits as loose objects in .git/objects, thousands of them a day",
          "Loose object count exceeds the gc.auto threshold — the default is 6700",
          "VS Code triggers gc --auto on its periodic fetch"};
    } else {
      step.answers = {"Part " + std::to_string(k) + " found: the cache-tree points at 082c2c44."};
    }
    step.answered_at = 2 * k + 2;
    extract.steps.push_back(std::move(step));
  }

  const std::vector<Item> items = Prioritize(extract);
  const std::size_t at = PlaceOf(items, "Step (Look at part 0.)");
  ASSERT_LT(at, items.size());
  const std::string& told = items[at].text;
  ASSERT_LE(told.size(), items[at].cap) << told;
  EXPECT_NE(told.find("SetEncodedObject"), std::string::npos) << told;
  EXPECT_NE(told.find("the default is 6700"), std::string::npos) << told;
  // A step among the newest is told in full, its answer as written.
  const std::size_t newest = PlaceOf(items, "Step (Look at part 13.)");
  ASSERT_LT(newest, items.size());
  EXPECT_NE(items[newest].text.find("Part 13 found: the cache-tree points at 082c2c44."),
            std::string::npos);
}

}  // namespace
}  // namespace harness::extractive_detail
