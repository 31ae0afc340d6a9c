// `harness count` end to end: the count it prints for files and standard input in both
// encodings (checked against the library on a real file), and its exit code 2 for bad usage,
// unreadable or oversized input and missing tokenizer data. Needs the tokenizer data
// (HARNESS_TOKENIZER_DIR, as ctest sets it); fails without it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_support.h"
#include "harness/inference/tokenizer.h"
#include "support/build_paths.h"

namespace {

using harness::e2e::CliRun;
using harness::e2e::Shell;
using harness::e2e::TempFile;

// Runs `harness count <args>`; stderr is dropped unless `with_stderr`.
CliRun Count(const std::string& args, bool with_stderr = false) {
  std::string command = "'";
  command.append(::harness::build_paths::HarnessBinary()).append("' count ").append(args);
  command.append(with_stderr ? " 2>&1" : " 2>/dev/null");
  return Shell(command);
}

TEST(CliCount, PrintsTheCountOfAFileInEitherEncoding) {
  const TempFile file("hello world");
  const CliRun o200k = Count(file.quoted());
  EXPECT_EQ(o200k.exit_code, 0);
  EXPECT_EQ(o200k.out, "2\n");  // the default encoding is o200k_base
  const CliRun cl100k = Count(file.quoted() + " --encoding cl100k_base");
  EXPECT_EQ(cl100k.exit_code, 0);
  EXPECT_EQ(cl100k.out, "2\n");
}

TEST(CliCount, ReadsStandardInputForDashAndByDefault) {
  const TempFile file("<|endoftext|>");  // ordinary text: 7 tokens in cl100k_base
  EXPECT_EQ(Count("--encoding cl100k_base - < " + file.quoted()).out, "7\n");
  EXPECT_EQ(Count("--encoding cl100k_base < " + file.quoted()).out, "7\n");
  EXPECT_EQ(Count("< /dev/null").out, "0\n");
}

TEST(CliCount, AgreesWithTheLibraryOnARealFile) {
  const std::string readme = std::string(::harness::build_paths::SourceDir()) + "/README.md";
  std::ifstream in(readme, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(text.empty());
  for (const harness::Encoding encoding :
       {harness::Encoding::kCl100kBase, harness::Encoding::kO200kBase}) {
    auto tokenizer = harness::BpeTokenizer::Load(encoding, harness::TokenizerDirFromEnvironment());
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.error().Message()
                                << "\nrun scripts/fetch-tokenizers (scripts/setup does)";
    auto count = tokenizer->Count(text);
    ASSERT_TRUE(count.ok());
    const CliRun run =
        Count("'" + readme + "' --encoding " + std::string(harness::EncodingName(encoding)));
    EXPECT_EQ(run.exit_code, 0);
    EXPECT_EQ(run.out, std::to_string(*count) + "\n");
  }
}

TEST(CliCount, BadUsageAndUnreadableInputExitTwo) {
  const TempFile file("x");
  EXPECT_EQ(Count(file.quoted() + " --encoding p50k_base").exit_code, 2);
  EXPECT_EQ(Count(file.quoted() + " --encoding").exit_code, 2);
  EXPECT_EQ(Count(file.quoted() + " extra").exit_code, 2);
  const CliRun missing = Count("/nonexistent/harness-count-input", true);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.out.find("cannot open /nonexistent/harness-count-input"), std::string::npos);
}

TEST(CliCount, RefusesInputOverSixtyFourMebibytes) {
  const CliRun over = Shell(std::string("head -c 67108865 /dev/zero | '") +
                            ::harness::build_paths::HarnessBinary() + "' count 2>&1");
  EXPECT_EQ(over.exit_code, 2);
  EXPECT_NE(over.out.find("larger than the limit of 67108864 bytes (64 MiB)"), std::string::npos)
      << over.out;
}

TEST(CliCount, MissingTokenizerDataExitsTwoAndSaysWhereToGetIt) {
  const std::filesystem::path empty = std::filesystem::temp_directory_path() /
                                      ("harness-count-empty-" + std::to_string(::getpid()));
  std::filesystem::create_directories(empty);
  const CliRun run = Shell("echo hi | HARNESS_TOKENIZER_DIR='" + empty.string() + "' '" +
                           ::harness::build_paths::HarnessBinary() + "' count 2>&1");
  std::filesystem::remove_all(empty);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.out.find("tokenizer: unreadable"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("scripts/fetch-tokenizers"), std::string::npos) << run.out;
}

TEST(CliCount, ModelPicksItsEncodingFromTheCatalog) {
  std::string readme = "'";
  readme.append(::harness::build_paths::SourceDir()).append("/README.md' ");
  const auto with = [&readme](const std::string& flags) {
    std::string args = readme;
    args.append(flags);
    return args;
  };
  const CliRun o200k = Count(with("--encoding o200k_base"));
  const CliRun cl100k = Count(with("--encoding cl100k_base"));
  ASSERT_EQ(o200k.exit_code, 0);
  ASSERT_EQ(cl100k.exit_code, 0);
  ASSERT_NE(o200k.out, cl100k.out);  // the comparisons below can tell the encodings apart
  for (const char* model : {"openai:gpt-4o", "openai:gpt-4o-mini-2024-07-18", "openai:gpt-4.1",
                            "openai:o3", "openai:gpt-5"}) {
    const CliRun run = Count(with(std::string("--model ").append(model)));
    EXPECT_EQ(run.exit_code, 0) << model;
    EXPECT_EQ(run.out, o200k.out) << model;
  }
  for (const char* model :
       {"openai:gpt-4", "openai:gpt-4-turbo-2024-04-09", "openai:gpt-3.5-turbo"}) {
    const CliRun run = Count(with(std::string("--model ").append(model)));
    EXPECT_EQ(run.exit_code, 0) << model;
    EXPECT_EQ(run.out, cl100k.out) << model;
  }
}

TEST(CliCount, ModelOutsideTheOpenAiCatalogOrWithAnEncodingIsUsage) {
  const TempFile file("x");
  const CliRun anthropic = Count(file.quoted() + " --model anthropic:claude-sonnet-4-5", true);
  EXPECT_EQ(anthropic.exit_code, 2);
  EXPECT_NE(anthropic.out.find("anthropic:claude-sonnet-4-5 has no local tokenizer"),
            std::string::npos)
      << anthropic.out;
  const CliRun unknown = Count(file.quoted() + " --model openai:gpt-9", true);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.out.find("openai:gpt-9 is not in the model catalog"), std::string::npos)
      << unknown.out;
  const CliRun malformed = Count(file.quoted() + " --model gpt-4o", true);
  EXPECT_EQ(malformed.exit_code, 2);
  EXPECT_NE(malformed.out.find("invalid model no_separator"), std::string::npos) << malformed.out;
  EXPECT_EQ(Count(file.quoted() + " --model openai:gpt-4o --encoding o200k_base").exit_code, 2);
  EXPECT_EQ(Count(file.quoted() + " --model").exit_code, 2);
}

}  // namespace
