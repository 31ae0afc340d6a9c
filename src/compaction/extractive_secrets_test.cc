// What the extractive compactor never writes (compaction/extractive_secrets.h): PEM blocks, and
// the lines core's LooksLikeSecret judges secret (its table is src/core/secrets_test.cc).
#include "compaction/extractive_secrets.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace harness::extractive_detail {
namespace {

TEST(ExtractiveSecrets, APemBlockCoversItsMarkersAndBody) {
  PemBlock pem;
  EXPECT_FALSE(pem.Covers("before"));
  EXPECT_TRUE(pem.Covers("-----BEGIN CERTIFICATE-----"));
  EXPECT_TRUE(pem.Covers("MIIBszCCAVmgAwIBAgI"));
  EXPECT_TRUE(pem.Covers("-----END CERTIFICATE-----"));
  EXPECT_FALSE(pem.Covers("after"));
}

TEST(ExtractiveSecrets, SafeLinesAreCleanNonBlankAndSecretFree) {
  EXPECT_EQ(SafeLines("a\napi_key=1\n\n  b \t c \n-----BEGIN X-----\nbody\n-----END X-----\nd"),
            (std::vector<std::string>{"a", "b c", "d"}));
  EXPECT_EQ(SafeName(""), "tool");
  EXPECT_EQ(SafeName("token=abc"), "tool");
  EXPECT_EQ(SafeName(" Bash "), "Bash");
}

}  // namespace
}  // namespace harness::extractive_detail
