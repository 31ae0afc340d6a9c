// What a tool's result says (compaction/extractive_tool_output.h): wrappers stripped, the exit
// status read, the last error found, and the test runs of common runners read from their own
// report lines.
#include "compaction/extractive_tool_output.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace harness::extractive_detail {
namespace {

TEST(ExtractiveToolOutput, WrappersEscapesAndSecretsAreStrippedAndTheExitStatusRead) {
  const ToolOutput output = ReadToolOutput(
      "\x1b[31mError: boom\x1b[0m\n"
      "[The command completed with exit code 2.]\n"
      "OBSERVATION: hello<system-reminder>not the tool's</system-reminder>\n"
      "web-1  | listening on 8080\n"
      "api_key=abcd1234\n"
      "\n");
  EXPECT_EQ(output.lines, (std::vector<std::string>{"Error: boom", "hello", "listening on 8080"}));
  EXPECT_EQ(output.exit_code, 2);
}

TEST(ExtractiveToolOutput, CodexAndPlainExitStatuses) {
  EXPECT_EQ(ReadToolOutput("Process exited with code 127").exit_code, 127);
  EXPECT_EQ(ReadToolOutput(R"({"exit_code": 1})").exit_code, 1);
  EXPECT_EQ(ReadToolOutput("all good").exit_code, std::nullopt);
}

TEST(ExtractiveToolOutput, TheLastErrorIsATracebacksFinalLineNotEchoedSource) {
  EXPECT_EQ(LastErrorLine({"Traceback (most recent call last):", "File \"a.py\", line 1, in <m>",
                           "KeyError: 'x'"}),
            "KeyError: 'x'");
  EXPECT_EQ(LastErrorLine({"error: build failed", "return Fail(result.error());"}),
            "error: build failed");
  EXPECT_EQ(LastErrorLine({"compiling", "done"}), "");
}

// Gemini CLI ends every shell result with "Error: (none)" and "Exit Code: 0": no error.
TEST(ExtractiveToolOutput, AReportOfNoErrorIsNoError) {
  EXPECT_EQ(LastErrorLine({"listening on 8080", "Error: (none)", "Exit Code: 0"}), "");
  EXPECT_EQ(LastErrorLine({"errors: 0"}), "");
  EXPECT_EQ(LastErrorLine({"AssertionError: expected 1, got: 0"}),
            "AssertionError: expected 1, got: 0");
  EXPECT_EQ(LastErrorLine({"Error: (none)", "fatal: not a git repository"}),
            "fatal: not a git repository");
}

TEST(ExtractiveTestRun, PytestSummaryAndShortSummary) {
  const auto run = ReadTestRun({"FAILED tests/test_a.py::test_x - AssertionError: boom",
                                "==== 1 failed, 10 passed, 1 error in 0.50s ===="});
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->passed, 10);
  EXPECT_EQ(run->failed, 2);  // an error counts as a failure
  EXPECT_EQ(run->failing, (std::vector<std::string>{"tests/test_a.py::test_x"}));
  EXPECT_EQ(run->command, "");

  const auto quiet = ReadTestRun({"3 passed in 0.12s"});
  ASSERT_TRUE(quiet.has_value());
  EXPECT_EQ(quiet->passed, 3);
  EXPECT_EQ(quiet->failed, std::nullopt);
}

TEST(ExtractiveTestRun, NoneIsNoFailingTest) {
  const auto run = ReadTestRun({"FAILED (none)", "==== 1 failed, 2 passed in 0.20s ===="});
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->failed, 1);
  EXPECT_TRUE(run->failing.empty());
}

TEST(ExtractiveTestRun, JestCountsAndFailingNames) {
  const auto run =
      ReadTestRun({"\xE2\x9C\x95 adds numbers (5 ms)", "Tests: 1 failed, 4 passed, 5 total"});
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->failed, 1);
  EXPECT_EQ(run->passed, 4);
  EXPECT_EQ(run->failing, (std::vector<std::string>{"adds numbers"}));
}

TEST(ExtractiveTestRun, CargoResultsAddUp) {
  const auto run =
      ReadTestRun({"test tests::it_parses ... FAILED",
                   "test result: FAILED. 3 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out",
                   "test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out"});
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->passed, 5);
  EXPECT_EQ(run->failed, 1);
  EXPECT_EQ(run->failing, (std::vector<std::string>{"tests::it_parses"}));
}

TEST(ExtractiveTestRun, GoGoogleTestCtestAndUnittest) {
  const auto go = ReadTestRun({"--- FAIL: TestParse (0.00s)", "--- FAIL: TestParse (0.00s)"});
  ASSERT_TRUE(go.has_value());
  EXPECT_EQ(go->failed, 1);  // one name, seen twice
  EXPECT_EQ(go->failing, (std::vector<std::string>{"TestParse"}));

  const auto gtest =
      ReadTestRun({"[ PASSED ] 3 tests.",
                   "[ FAILED ] 1 test, listed below:", "[ FAILED ] CacheTest.Evicts (0 ms)"});
  ASSERT_TRUE(gtest.has_value());
  EXPECT_EQ(gtest->passed, 3);
  EXPECT_EQ(gtest->failed, 1);
  EXPECT_EQ(gtest->failing, (std::vector<std::string>{"CacheTest.Evicts"}));

  const auto ctest = ReadTestRun(
      {"95% tests passed, 1 tests failed out of 19", "7 - ThumbsCacheTest.Evicts (Failed)"});
  ASSERT_TRUE(ctest.has_value());
  EXPECT_EQ(ctest->failed, 1);
  EXPECT_EQ(ctest->passed, 18);
  EXPECT_EQ(ctest->failing, (std::vector<std::string>{"ThumbsCacheTest.Evicts"}));

  const auto unittest = ReadTestRun({"FAIL: test_add (tests.test_math.MathTest)",
                                     "Ran 5 tests in 0.01s", "FAILED (failures=1, errors=1)"});
  ASSERT_TRUE(unittest.has_value());
  EXPECT_EQ(unittest->passed, 3);
  EXPECT_EQ(unittest->failed, 2);
  EXPECT_EQ(unittest->failing, (std::vector<std::string>{"test_add"}));
}

TEST(ExtractiveTestRun, OutputWithoutAReportIsNoTestRun) {
  EXPECT_EQ(ReadTestRun({"compiling harness", "done in 3 s"}), std::nullopt);
  EXPECT_EQ(ReadTestRun({}), std::nullopt);
}

}  // namespace
}  // namespace harness::extractive_detail
