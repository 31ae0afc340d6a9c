// ExtractAnchors, CheckCoverage and CoverageShort (compaction/anchors.h).
#include "harness/compaction/anchors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace harness {
namespace {

using ::testing::Contains;
using ::testing::Not;

Message User(std::string text) {
  return UserMessage{{TextBlock{std::move(text)}}};
}
Message Assistant(std::string text) {
  return AssistantMessage{{TextBlock{std::move(text)}}, std::nullopt};
}
Message Call(std::string name, std::string input) {
  return AssistantMessage{{ToolUseBlock{"call-1", std::move(name), std::move(input), {}, {}}},
                          std::nullopt};
}
Message Output(std::string text) {
  ToolResultMessage tool;
  tool.blocks.emplace_back(TextBlock{std::move(text)});
  tool.tool_use_id = "call-1";
  return tool;
}

Anchor A(AnchorClass c, std::string text) {
  return Anchor{c, std::move(text)};
}

std::vector<std::string> TextsOf(const std::vector<Anchor>& anchors, AnchorClass c) {
  std::vector<std::string> out;
  for (const Anchor& a : anchors) {
    if (a.anchor_class == c)
      out.push_back(a.text);
  }
  return out;
}

TEST(ExtractAnchors, EachClassFromItsSource) {
  const std::vector<Message> head = {
      User("Fix the parser in src/compaction/tail.cc. You must not change the public API. "
           "See https://example.com/issues/15 and keep latency under 100 ms."),
      Assistant("I will edit `SelectRetainedTail` and run `make check`.\n$ ctest -R tail"),
      Call("bash", R"({"command":"pytest tests/test_tail.py -x"})"),
      Output("FAILED tests/test_tail.py::test_cut_inside - AssertionError: 3 != 4\n"
             "test_ok PASSED\n"
             "ValueError: bad cut\n"),
      Call("str_replace_editor", R"({"command":"view","path":"/repo/include/harness/tail.h"})"),
  };
  const auto anchors = ExtractAnchors(head, false);
  EXPECT_THAT(TextsOf(anchors, AnchorClass::kPath), Contains("src/compaction/tail.cc"));
  EXPECT_THAT(TextsOf(anchors, AnchorClass::kPath), Contains("/repo/include/harness/tail.h"));
  EXPECT_THAT(TextsOf(anchors, AnchorClass::kConstraint),
              Contains("You must not change the public API."));
  EXPECT_THAT(TextsOf(anchors, AnchorClass::kConstraint),
              Contains("See https://example.com/issues/15 and keep latency under 100 ms."));
  EXPECT_THAT(TextsOf(anchors, AnchorClass::kUrl), Contains("https://example.com/issues/15"));
  EXPECT_THAT(TextsOf(anchors, AnchorClass::kQuantity), Contains("100 ms"));
  EXPECT_THAT(TextsOf(anchors, AnchorClass::kIdentifier), Contains("SelectRetainedTail"));
  EXPECT_THAT(TextsOf(anchors, AnchorClass::kCommand), Contains("make check"));
  EXPECT_THAT(TextsOf(anchors, AnchorClass::kCommand), Contains("ctest -R tail"));
  EXPECT_THAT(TextsOf(anchors, AnchorClass::kCommand), Contains("pytest tests/test_tail.py -x"));
  // An editor's "command" is not a shell command.
  EXPECT_THAT(TextsOf(anchors, AnchorClass::kCommand), Not(Contains("view")));
  EXPECT_THAT(TextsOf(anchors, AnchorClass::kTest),
              Contains("tests/test_tail.py::test_cut_inside"));
  // A passing test in tool output is not an anchor; a failing one is.
  EXPECT_THAT(TextsOf(anchors, AnchorClass::kTest), Not(Contains("test_ok")));
  EXPECT_THAT(TextsOf(anchors, AnchorClass::kError), Contains("ValueError: bad cut"));
  // No request unless the caller says the head holds the current one.
  EXPECT_TRUE(TextsOf(anchors, AnchorClass::kRequest).empty());
}

TEST(ExtractAnchors, ConstraintsComeOnlyFromUserProse) {
  const std::vector<Message> head = {
      User("Never push to main. Thanks!"),
      Assistant("We must refactor this."),
      Output("# you must always call init() first\n"),
  };
  const auto constraints = TextsOf(ExtractAnchors(head, false), AnchorClass::kConstraint);
  EXPECT_EQ(constraints, std::vector<std::string>{"Never push to main."});
}

// A rule listed in a carried summary is the rule, without its list marker: a summary that tells
// it as a section's only item (no marker) keeps it.
TEST(ExtractAnchors, AListItemsMarkerIsNotPartOfTheRule) {
  const std::vector<Message> head = {
      User("<constraints>\n- Never touch vendor/.\n* Only use "
           "the standard library.\n</constraints>")};
  const auto constraints = TextsOf(ExtractAnchors(head, false), AnchorClass::kConstraint);
  EXPECT_THAT(constraints, Contains("Never touch vendor/."));
  EXPECT_THAT(constraints, Contains("Only use the standard library."));
}

TEST(ExtractAnchors, TheRequestIsTheLastUserProseWhenTheHeadHoldsIt) {
  const std::vector<Message> head = {User("first ask"), Assistant("ok"),
                                     User("now port it to Rust"), Call("bash", R"({"cmd":"ls"})"),
                                     Output("a b")};
  EXPECT_EQ(TextsOf(ExtractAnchors(head, true), AnchorClass::kRequest),
            std::vector<std::string>{"now port it to Rust"});
}

TEST(ExtractAnchors, GtestFailuresAndCompilerErrors) {
  const std::vector<Message> head = {
      Output("[  FAILED  ] TailTest.CutsInsideASegment (3 ms)\n"
             "src/foo.cc:12:3: error: use of undeclared identifier 'x'\n"
             "Traceback (most recent call last):\n"),
  };
  const auto anchors = ExtractAnchors(head, false);
  EXPECT_THAT(TextsOf(anchors, AnchorClass::kTest), Contains("TailTest.CutsInsideASegment"));
  EXPECT_EQ(TextsOf(anchors, AnchorClass::kError),
            std::vector<std::string>{"src/foo.cc:12:3: error: use of undeclared identifier 'x'"});
}

TEST(ExtractAnchors, SecretsAreNeverAnchors) {
  const std::vector<Message> head = {
      User("Use the key sk-proj-abcdefghijklmnop1234 for this. Don't log it.\n"
           "Clone https://alice:hunter2@git.example.com/repo.git please.\n"
           "Never push to main.\n"
           "`ghp_abcdefghijklmnopqrstuvwxyz0123`"),
      Call("bash", R"({"command":"mysql --password=hunter2 -u root"})"),
      Call("bash",
           R"({"command":"curl -H 'Authorization: Bearer abcdefgh12345678' https://x.io"})"),
      Assistant("Set `API_KEY=abc123def` then run."),
  };
  const auto anchors = ExtractAnchors(head, true);
  for (const Anchor& a : anchors) {
    EXPECT_EQ(a.text.find("sk-proj"), std::string::npos) << a.text;
    EXPECT_EQ(a.text.find("hunter2"), std::string::npos) << a.text;
    EXPECT_EQ(a.text.find("ghp_"), std::string::npos) << a.text;
    EXPECT_EQ(a.text.find("Bearer"), std::string::npos) << a.text;
    EXPECT_EQ(a.text.find("abc123def"), std::string::npos) << a.text;
  }
  // A constraint on a line of its own survives; one on the key's line does not (the extractive
  // compactor leaves that line out whole), nor does the request holding the key.
  EXPECT_THAT(TextsOf(anchors, AnchorClass::kConstraint), Contains("Never push to main."));
  EXPECT_THAT(TextsOf(anchors, AnchorClass::kConstraint), Not(Contains("Don't log it.")));
  EXPECT_TRUE(TextsOf(anchors, AnchorClass::kRequest).empty());
}

TEST(ExtractAnchors, BoundedPerClassAndInLength) {
  std::string text;
  for (int i = 0; i < 500; ++i)
    text += "file_" + std::to_string(i) + ".cc ";
  text += "\n$ " + std::string(5000, 'a');
  const auto anchors = ExtractAnchors({User(text)}, true);
  const auto paths = TextsOf(anchors, AnchorClass::kPath);
  ASSERT_EQ(paths.size(), kMaxAnchorsPerClass[static_cast<int>(AnchorClass::kPath)]);
  // Within one message the first are kept, in order.
  EXPECT_EQ(paths.front(), "file_0.cc");
  EXPECT_EQ(paths.back(), "file_47.cc");
  for (const Anchor& a : anchors) {
    const std::size_t max = a.anchor_class == AnchorClass::kRequest      ? kMaxRequestAnchorBytes
                            : a.anchor_class == AnchorClass::kConstraint ? kMaxConstraintAnchorBytes
                                                                         : kMaxAnchorBytes;
    EXPECT_LE(a.text.size(), max);
  }
  std::size_t sum = 0;
  for (const std::size_t n : kMaxAnchorsPerClass)
    sum += n;
  EXPECT_EQ(sum, 256u);
}

TEST(ExtractAnchors, TheNewestMessagesWinAndComeOutOldestFirst) {
  std::vector<Message> head;
  for (int i = 0; i < 100; ++i)
    head.push_back(
        User("see `name_" + std::to_string(i) + "` and `other_" + std::to_string(i) + "`"));
  const auto ids = TextsOf(ExtractAnchors(head, false), AnchorClass::kIdentifier);
  ASSERT_EQ(ids.size(), kMaxAnchorsPerClass[static_cast<int>(AnchorClass::kIdentifier)]);
  EXPECT_EQ(ids.front(), "name_84");
  EXPECT_EQ(ids[1], "other_84");
  EXPECT_EQ(ids.back(), "other_99");
}

TEST(ExtractAnchors, CutsAtACharacterAndDeduplicates) {
  std::string utf8 = "$ echo ";
  for (std::size_t i = 0; i < kMaxAnchorBytes; ++i)
    utf8 += "\xc3\xa9";
  const auto anchors =
      ExtractAnchors({User(utf8), User("see README.md"), User("see readme.md")}, false);
  const auto commands = TextsOf(anchors, AnchorClass::kCommand);
  ASSERT_EQ(commands.size(), 1u);
  // "echo " is 5 bytes; 200 would end inside an é, so the cut keeps 97 whole ones.
  EXPECT_EQ(commands[0].size(), 5u + 2 * 97);
  EXPECT_EQ(TextsOf(anchors, AnchorClass::kPath).size(), 1u);
}

TEST(ExtractAnchors, DeepToolResultNestingUsesNoRecursion) {
  Block inner = TextBlock{"KeyError: 'x'"};
  // Deep enough to matter for a recursive walk; shallow enough for Block's own destructor.
  for (int i = 0; i < 2'000; ++i) {
    ToolResultBlock result{"id", {}, false};
    result.content.push_back(std::move(inner));  // an initializer list would copy the chain
    inner = std::move(result);
  }
  UserMessage user;
  user.blocks.push_back(std::move(inner));
  const auto anchors = ExtractAnchors({Message(std::move(user))}, false);
  EXPECT_EQ(TextsOf(anchors, AnchorClass::kError), std::vector<std::string>{"KeyError: 'x'"});
}

TEST(CheckCoverage, MatchingRule) {
  const std::vector<Anchor> anchors = {
      A(AnchorClass::kPath, "src/compaction/tail.cc"),
      A(AnchorClass::kPath, "docs/runtime.md"),
      A(AnchorClass::kConstraint, "You must  not change\nthe API."),
      A(AnchorClass::kQuantity, "100 ms"),
      A(AnchorClass::kIdentifier, "a<b"),
      A(AnchorClass::kCommand, "make check"),
      A(AnchorClass::kTest, "test_cut"),
  };
  const std::string summary =
      "<conversation_summary><goal>g</goal><constraints>you MUST not change the api."
      "</constraints><decisions></decisions><state>edited tail.cc in 100ms; a&lt;b"
      "</state><open_items></open_items></conversation_summary>";
  const std::vector<Message> retained = {User("please run make\n  check"), Assistant("done")};
  const CoverageReport report = CheckCoverage(anchors, summary, retained, 0);
  EXPECT_EQ(report.found(), 5u);
  EXPECT_EQ(report.total(), 7u);
  ASSERT_EQ(report.missing.size(), 2u);
  EXPECT_EQ(report.missing[0], (MissingAnchor{AnchorClass::kPath, "docs/runtime.md"}));
  EXPECT_EQ(report.missing[1], (MissingAnchor{AnchorClass::kTest, "test_cut"}));
  EXPECT_TRUE(IsValid(report));
}

TEST(CheckCoverage, NoMatchAcrossTwoParts) {
  const std::vector<Anchor> anchors = {A(AnchorClass::kCommand, "make check")};
  const auto report = CheckCoverage(anchors, "make", {User("check")}, 0);
  EXPECT_EQ(report.found(), 0u);
}

TEST(CheckCoverage, RequiredClassesAreListedFirstAndBounded) {
  std::vector<Anchor> anchors;
  for (int i = 0; i < 20; ++i)
    anchors.push_back(A(AnchorClass::kPath, "p" + std::to_string(i) + ".cc"));
  anchors.push_back(A(AnchorClass::kConstraint, "never do X"));
  const AnchorClassSet required = AnchorClassBit(AnchorClass::kConstraint);
  const auto report = CheckCoverage(anchors, "", {}, required);
  ASSERT_EQ(report.missing.size(), kMaxReportedMissing);
  EXPECT_EQ(report.missing[0].anchor_class, AnchorClass::kConstraint);
  EXPECT_TRUE(IsValid(report));
  EXPECT_TRUE(CoverageShort(report, 0, required));
}

TEST(CoverageShort, RatioAndRequiredClasses) {
  CoverageReport report;
  report.classes = {{AnchorClass::kConstraint, 2, 2}, {AnchorClass::kPath, 7, 8}};
  EXPECT_FALSE(CoverageShort(report, 9000, AnchorClassBit(AnchorClass::kConstraint)));
  EXPECT_TRUE(CoverageShort(report, 9001, 0));
  EXPECT_TRUE(CoverageShort(report, 0, AnchorClassBit(AnchorClass::kPath)));
  EXPECT_FALSE(CoverageShort(CoverageReport{}, 10'000, kAllAnchorClasses));
}

}  // namespace
}  // namespace harness
