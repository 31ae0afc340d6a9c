// The CLI forms other checks drive: `harness validate-summary` and `harness validate-transcript`,
// their exit codes (0 valid, 1 invalid, 2 usage or unreadable input) and exact first lines.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cli_support.h"
#include "support/build_paths.h"

namespace {

using harness::e2e::CliRun;
using harness::e2e::Shell;
using harness::e2e::TempFile;

// Runs the harness binary with `args` (already shell-quoted where needed); stderr is dropped
// unless `with_stderr`.
CliRun Harness(const std::string& args, bool with_stderr = false) {
  const std::string command = std::string("'") + ::harness::build_paths::HarnessBinary() + "' " +
                              args + (with_stderr ? " 2>&1" : " 2>/dev/null");
  return Shell(command);
}

std::string Example(const std::string& relative) {
  std::string quoted = "'";
  quoted.append(::harness::build_paths::SourceDir())
      .append("/examples/")
      .append(relative)
      .append("'");
  return quoted;
}

std::string FirstLine(const std::string& s) {
  return s.substr(0, s.find('\n'));
}

// `harness --version` prints the project's version, the one CMakeLists.txt declares (and the
// installed package carries, docs/install.md).
TEST(CliVersion, PrintsTheProjectVersion) {
  std::ifstream lists(std::string(::harness::build_paths::SourceDir()) + "/CMakeLists.txt");
  const std::string text((std::istreambuf_iterator<char>(lists)), std::istreambuf_iterator<char>());
  const std::string declared = "project(harness VERSION ";
  const auto at = text.find(declared);
  ASSERT_NE(at, std::string::npos);
  const auto begin = at + declared.size();
  const std::string version = text.substr(begin, text.find(' ', begin) - begin);
  const CliRun run = Harness("--version");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.out, "harness " + version + "\n");
}

TEST(CliValidateSummary, ValidFilePrintsValid) {
  const CliRun r = Harness("validate-summary " + Example("summaries/valid-coding-task.xml"));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "valid\n");
}

TEST(CliValidateSummary, ReadsStandardInputForDashAndByDefault) {
  EXPECT_EQ(Harness("validate-summary - < " + Example("summaries/valid-minimal.xml")).out,
            "valid\n");
  EXPECT_EQ(Harness("validate-summary < " + Example("summaries/valid-minimal.xml")).out, "valid\n");
}

TEST(CliValidateSummary, EachInvalidExampleReportsItsReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"summaries/invalid-trailing-newline.xml", "invalid xml_structure"},
      {"summaries/invalid-wrong-root.xml", "invalid xml_root"},
      {"summaries/invalid-section-order.xml", "invalid xml_structure"},
      {"summaries/invalid-blank-goal.xml", "invalid xml_content"},
      {"summaries/invalid-unescaped-lt.xml", "invalid xml_syntax"},
      {"summaries/invalid-cdata.xml", "invalid xml_structure"},
  };
  for (const auto& [file, first_line] : cases) {
    const CliRun r = Harness("validate-summary " + Example(file));
    EXPECT_EQ(r.exit_code, 1) << file;
    EXPECT_EQ(FirstLine(r.out), first_line) << file;
    const std::string second = r.out.substr(r.out.find('\n') + 1);
    EXPECT_NE(second.find("at byte "), std::string::npos) << file << ": " << second;
  }
}

TEST(CliValidateSummary, NeverEchoesMoreThanEightyBytesOfInput) {
  const std::string secret(200, 'S');
  TempFile file("<conversation_summary><goal>" + secret + "<b/></goal>");
  const CliRun r = Harness("validate-summary " + file.quoted());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.find(std::string(81, 'S')), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(std::string(20, 'S')), std::string::npos) << r.out;
}

TEST(CliValidateSummary, EmptyInputIsXmlRoot) {
  TempFile file("");
  const CliRun r = Harness("validate-summary " + file.quoted());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(FirstLine(r.out), "invalid xml_root");
}

TEST(CliValidateSummary, UnreadableFileIsUsageErrorOnStderr) {
  const CliRun r = Harness("validate-summary /nonexistent/summary.xml", /*with_stderr=*/false);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  const CliRun with_err = Harness("validate-summary /nonexistent/summary.xml", true);
  EXPECT_NE(with_err.out.find("cannot open"), std::string::npos);
}

TEST(CliValidateTranscript, ValidExample) {
  const CliRun r = Harness("validate-transcript " + Example("transcripts/coding-agent.json"));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "valid\n");
}

TEST(CliValidateTranscript, InvalidExamplesNameThePathAndRule) {
  const std::pair<const char*, const char*> cases[] = {
      {"transcripts/invalid-unknown-block.json", "invalid transcript $[1].blocks[0]"},
      {"transcripts/invalid-null-block.json", "invalid transcript $[0].blocks[0]"},
      {"transcripts/invalid-duplicate-member.json", "invalid transcript $[0].blocks[0]"},
      {"transcripts/invalid-empty.json", "invalid transcript $"},
  };
  for (const auto& [file, prefix] : cases) {
    const CliRun r = Harness("validate-transcript " + Example(file));
    EXPECT_EQ(r.exit_code, 1) << file;
    EXPECT_EQ(FirstLine(r.out).rfind(prefix, 0), 0u) << file << ": " << r.out;
  }
}

TEST(CliValidateTranscript, MalformedJsonIsInvalidNotUsage) {
  TempFile file("[{\"role\":\"user\",\"blocks\":[");
  const CliRun r = Harness("validate-transcript " + file.quoted());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(FirstLine(r.out).rfind("invalid transcript", 0), 0u) << r.out;
}

TEST(CliModels, ListsTheCatalogOneModelALine) {
  const CliRun r = Harness("models");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(FirstLine(r.out), "provider\tmodel\twindow\tmax_input\tmax_output\tencoding");
  EXPECT_NE(r.out.find("\nopenai\tgpt-4o\t128000\t-\t16384\to200k_base\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\nopenai\tgpt-5\t400000\t272000\t128000\to200k_base\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\nanthropic\tclaude-sonnet-4-5\t200000\t-\t64000\t-\n"), std::string::npos)
      << r.out;
  EXPECT_EQ(Harness("models extra").exit_code, 2);
}

TEST(CliUsage, HelpAndBadUsage) {
  const CliRun help = Harness("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("validate-summary"), std::string::npos);
  EXPECT_NE(help.out.find("validate-transcript"), std::string::npos);
  for (const char* sub : {"validate-summary --help", "validate-transcript --help"}) {
    const CliRun r = Harness(sub);
    EXPECT_EQ(r.exit_code, 0) << sub;
    EXPECT_NE(r.out.find("FILE"), std::string::npos) << sub;
  }
  EXPECT_EQ(Harness("").exit_code, 2);
  EXPECT_EQ(Harness("no-such-command").exit_code, 2);
  EXPECT_EQ(Harness("validate-summary a b").exit_code, 2);
  EXPECT_EQ(Harness("validate-summary --bogus").exit_code, 2);
}

// help, version, a bare `harness`: the conventions people try first (docs/cli.md, "Rules every
// command shares").
TEST(CliUsage, HelpVersionAndABareCommandFollowTheConventions) {
  const CliRun help = Harness("help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out, Harness("--help").out);
  // The main commands come first, in their own group, before the others.
  const auto main_group = help.out.find("Main commands:");
  const auto other_group = help.out.find("Other commands:");
  ASSERT_NE(main_group, std::string::npos) << help.out;
  ASSERT_NE(other_group, std::string::npos) << help.out;
  EXPECT_LT(main_group, other_group) << help.out;
  std::size_t previous = main_group;
  for (const char* name : {"  chat", "  compact", "  serve", "  eval", "  import"}) {
    const auto at = help.out.find(name, main_group);
    EXPECT_GT(at, previous) << name << "\n" << help.out;
    EXPECT_LT(at, other_group) << name << "\n" << help.out;
    previous = at;
  }
  EXPECT_GT(help.out.find("  validate-summary"), other_group) << help.out;

  const CliRun help_compact = Harness("help compact");
  EXPECT_EQ(help_compact.exit_code, 0);
  EXPECT_EQ(help_compact.out, Harness("compact --help").out);
  EXPECT_EQ(Harness("help sessions ls").out, Harness("sessions ls --help").out);

  const CliRun version = Harness("--version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(Harness("-V").out, version.out);
  EXPECT_EQ(Harness("version").out, version.out);

  // Nothing at all: the short help on stderr, exit 2, nothing on stdout.
  const CliRun bare = Harness("");
  EXPECT_EQ(bare.exit_code, 2);
  EXPECT_EQ(bare.out, "");
  const CliRun bare_err = Harness("", true);
  EXPECT_EQ(bare_err.out.rfind("usage: harness COMMAND [OPTIONS]\n", 0), 0u) << bare_err.out;
  EXPECT_NE(bare_err.out.find("\n  compact   "), std::string::npos) << bare_err.out;

  // A default that means "not given" reads as what it means, not as a value to pass.
  const CliRun compact_help = Harness("compact --help");
  EXPECT_EQ(compact_help.out.find("N=0"), std::string::npos) << compact_help.out;
  EXPECT_NE(compact_help.out.find("without it, no limit"), std::string::npos) << compact_help.out;
}

TEST(CliUsage, ATypoSuggestsTheNearestCommand) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"compat", "compact"}, {"chta", "chat"},       {"sesions", "sessions"},
      {"modles", "models"},  {"serv", "serve"},      {"validate", "validate-summary"},
      {"imprt", "import"},   {"jounral", "journal"},
  };
  for (const auto& [typo, meant] : cases) {
    const CliRun r = Harness(typo, true);
    EXPECT_EQ(r.exit_code, 2) << typo;
    EXPECT_EQ(r.out, "harness: unknown command `" + typo + "`; did you mean `" + meant +
                         "`?\nRun `harness help` for the commands.\n")
        << typo;
  }
  // Nothing near: no suggestion; a word that is not printable is not named back.
  EXPECT_EQ(Harness("frobnicate", true).out,
            "harness: unknown command `frobnicate`\nRun `harness help` for the commands.\n");
  EXPECT_EQ(Harness("\"$(printf '\\033[2J')\"", true).out,
            "harness: unknown command\nRun `harness help` for the commands.\n");
  EXPECT_EQ(Harness("help compat", true).out,
            "harness: unknown command `compat`; did you mean `compact`?\nRun `harness help` for "
            "the commands.\n");
}

// Every command that prints data can print it as JSON.
TEST(CliJson, ModelsAndCountPrintJson) {
  const CliRun models = Harness("models --json");
  EXPECT_EQ(models.exit_code, 0);
  EXPECT_EQ(FirstLine(models.out).rfind("{\"provider\":", 0), 0u) << models.out;
  EXPECT_NE(models.out.find(R"({"provider":"openai","model":"gpt-4o","window":128000,)"
                            R"("max_input":null,"max_output":16384,"encoding":"o200k_base"})"
                            "\n"),
            std::string::npos)
      << models.out;
  EXPECT_NE(
      models.out.find(R"({"provider":"anthropic","model":"claude-sonnet-4-5","window":200000,)"
                      R"("max_input":null,"max_output":64000,"encoding":null})"
                      "\n"),
      std::string::npos)
      << models.out;
  // One line per catalog entry, as the table has (without its header).
  const CliRun table = Harness("models");
  std::size_t lines = 0;
  for (const char c : models.out)
    lines += c == '\n' ? 1 : 0;
  std::size_t table_lines = 0;
  for (const char c : table.out)
    table_lines += c == '\n' ? 1 : 0;
  EXPECT_EQ(lines + 1, table_lines);

  const CliRun count = Harness(
      "count --json --encoding cl100k_base " + Example("summaries/valid-coding-task.xml"), true);
  if (count.exit_code == 2 && count.out.find("scripts/fetch-tokenizers") != std::string::npos)
    GTEST_SKIP() << "no tokenizer data: " << count.out;
  EXPECT_EQ(count.exit_code, 0) << count.out;
  const CliRun plain =
      Harness("count --encoding cl100k_base " + Example("summaries/valid-coding-task.xml"));
  const std::string tokens = FirstLine(plain.out);
  const auto bytes = std::filesystem::file_size(std::string(::harness::build_paths::SourceDir()) +
                                                "/examples/summaries/valid-coding-task.xml");
  EXPECT_EQ(count.out, "{\"tokens\":" + tokens + ",\"encoding\":\"cl100k_base\",\"bytes\":" +
                           std::to_string(bytes) + "}\n");
}

// Every numeric flag of every command: digits only, within its bounds, else exit 2 with one
// message naming the flag and its real bounds; nothing is wrapped, saturated or rounded.
TEST(CliNumbers, EveryNumericFlagRefusesWhatIsNotAWholeNumberInItsBounds) {
  struct Flag {
    const char* command;  // the subcommand with what its parsing needs besides the flag
    const char* flag;
    std::uint64_t min;
    std::uint64_t max;
  };
  const Flag flags[] = {
      {"compact - --data-dir /dev/null/harness", "--keep-recent-segments", 1, 1000000},
      {"compact - --data-dir /dev/null/harness", "--keep-recent-tokens", 1, 100000000},
      {"compact - --data-dir /dev/null/harness", "--max-summary-tokens", 1, 100000000},
      {"compact - --data-dir /dev/null/harness", "--context-window", 1024, 100000000},
      {"compact - --data-dir /dev/null/harness", "--max-output-tokens", 1, 100000000},
      {"chat", "--context-window", 1024, 100000000},
      {"chat", "--keep-recent-segments", 1, 1000000},
      {"chat", "--lease-ttl", 1, 3600},
      {"chat", "--max-steps", 1, 1000000},
      {"chat", "--snapshot-interval", 0, 1000000},
      {"journal show /dev/null/harness", "--from", 1, 9223372036854775807u},
      {"journal bench /dev/null/harness", "--appenders", 1, 256},
      {"journal bench /dev/null/harness", "--records", 1, 10000000},
      {"journal bench /dev/null/harness", "--batch", 1, 10000},
      {"journal bench /dev/null/harness", "--payload-bytes", 0, 16777216},
  };
  for (const Flag& f : flags) {
    std::vector<std::string> bad = {"-1", "18446744073709551616",     "1e24", "+5", "1.5", "0x10",
                                    "",   std::to_string(f.max) + "0"};
    bad.push_back(std::to_string(f.max + 1));
    if (f.min > 0)
      bad.push_back(std::to_string(f.min - 1));
    const std::string expected = std::string("harness: ") + f.flag +
                                 ": must be a whole number from " + std::to_string(f.min) + " to " +
                                 std::to_string(f.max) + "\nRun `harness --help` for usage.\n";
    for (const std::string& value : bad) {
      const CliRun r =
          Harness(std::string(f.command) + " " + f.flag + " '" + value + "' < /dev/null", true);
      EXPECT_EQ(r.exit_code, 2) << f.command << " " << f.flag << " " << value;
      EXPECT_EQ(r.out, expected) << f.command << " " << f.flag << " " << value;
    }
  }
}

}  // namespace
