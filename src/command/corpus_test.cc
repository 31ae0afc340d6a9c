// The fuzz seeds of fuzz/corpus/command are also regression cases: each file's name starts with
// the verdict DecodeCommand must give it ("accept_", or the error kind followed by "_").
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "harness/command/codec.h"

namespace harness {
namespace {

std::filesystem::path CorpusDir() {
  const char* root = std::getenv("HARNESS_SOURCE_DIR");
  return root == nullptr ? std::filesystem::path()
                         : std::filesystem::path(root) / "fuzz/corpus/command";
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

TEST(FuzzCorpus, CommandSeedsGetTheVerdictTheirNameSays) {
  const auto dir = CorpusDir();
  if (dir.empty())
    GTEST_SKIP() << "HARNESS_SOURCE_DIR is not set (ctest sets it)";
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const std::string bytes = ReadFile(entry.path());
    const auto decoded = DecodeCommand(bytes);
    const std::string verdict =
        decoded.ok() ? "accept" : std::string(CommandErrorKindName(decoded.error()));
    EXPECT_EQ(name.rfind(verdict + "_", 0), 0u)
        << name << " got " << verdict << ": "
        << (decoded.ok() ? std::string() : DescribeCommandError(decoded.error()));
    if (decoded.ok()) {
      const auto encoded = EncodeCommand(*decoded);
      ASSERT_TRUE(encoded.ok()) << name;
      EXPECT_EQ(*encoded, bytes) << name;
    }
    ++seen;
  }
  EXPECT_GE(seen, 15);
}

}  // namespace
}  // namespace harness
