// The fuzz seeds of fuzz/corpus/command are also regression cases: each file's name starts with
// the verdict DecodeCommand must give it ("accept_", or the error kind followed by "_"), and an
// accepted seed re-encodes byte for byte (support/record_corpus.h).
#include <gtest/gtest.h>

#include "harness/command/codec.h"
#include "support/record_corpus.h"

namespace harness {
namespace {

TEST(FuzzCorpus, CommandSeedsGetTheVerdictTheirNameSays) {
  ExpectSeedsGetTheVerdictTheirNameSays(
      "command", [](const std::string& bytes) { return DecodeCommand(bytes); },
      [](const Command& command) { return EncodeCommand(command); }, &CommandErrorKindName,
      &DescribeCommandError);
}

}  // namespace
}  // namespace harness
