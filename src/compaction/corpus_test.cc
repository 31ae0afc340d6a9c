// The fuzz seeds are also regression cases: each file's name starts with the verdict it must
// get ("accept_", or the reason / field name followed by "_").
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>

#include "harness/compaction/response.h"
#include "harness/compaction/wire.h"
#include "support/compaction_inputs.h"

namespace harness {
namespace {

std::filesystem::path CorpusDir(const char* name) {
  const char* root = std::getenv("HARNESS_SOURCE_DIR");
  return root == nullptr ? std::filesystem::path()
                         : std::filesystem::path(root) / "fuzz/corpus" / name;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

bool HasVerdictPrefix(const std::string& file, const std::string& verdict) {
  return file.rfind(verdict + "_", 0) == 0;
}

TEST(FuzzCorpus, EnvelopeSeedsGetTheVerdictTheirNameSays) {
  const auto dir = CorpusDir("envelope");
  if (dir.empty())
    GTEST_SKIP() << "HARNESS_SOURCE_DIR is not set (ctest sets it)";
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const auto result =
        ValidateCompactionResponse(CompactorResponse{ReadFile(entry.path()), Usage{0, 1, 0, 0, 0}},
                                   testing::StandardInput(), 65536);
    const std::string verdict =
        result.ok() ? "accept" : std::string(InvalidSummaryReasonName(result.error().reason));
    EXPECT_TRUE(HasVerdictPrefix(name, verdict)) << name << " got " << verdict;
    ++seen;
  }
  EXPECT_GE(seen, 15);
}

TEST(FuzzCorpus, CompactionInputSeedsGetTheVerdictTheirNameSays) {
  const auto dir = CorpusDir("compaction_input");
  if (dir.empty())
    GTEST_SKIP() << "HARNESS_SOURCE_DIR is not set (ctest sets it)";
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const auto decoded = DecodeCompactionInput(ReadFile(entry.path()));
    std::string verdict = "accept";
    if (!decoded.ok()) {
      verdict = std::visit(
          [](const auto& e) -> std::string {
            if constexpr (std::is_same_v<std::decay_t<decltype(e)>, CompactionInputError>) {
              return std::string(CompactionInputFieldName(e.field));
            } else {
              return "wire";
            }
          },
          decoded.error());
    }
    EXPECT_TRUE(HasVerdictPrefix(name, verdict)) << name << " got " << verdict;
    ++seen;
  }
  EXPECT_GE(seen, 10);
}

}  // namespace
}  // namespace harness
