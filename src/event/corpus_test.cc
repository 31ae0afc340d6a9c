// The fuzz seeds of fuzz/corpus/event are also regression cases: each file's name starts with
// the verdict DecodeEvent must give it ("accept_", or the error kind followed by "_"), and an
// accepted seed is in canonical form: it re-encodes byte for byte (support/record_corpus.h).
#include <gtest/gtest.h>

#include "harness/event/codec.h"
#include "support/record_corpus.h"

namespace harness {
namespace {

TEST(FuzzCorpus, EventSeedsGetTheVerdictTheirNameSays) {
  ExpectSeedsGetTheVerdictTheirNameSays(
      "event", [](const std::string& bytes) { return DecodeEvent(bytes); },
      [](const Event& event) { return EncodeEvent(event); }, &EventErrorKindName,
      &DescribeEventError);
}

}  // namespace
}  // namespace harness
