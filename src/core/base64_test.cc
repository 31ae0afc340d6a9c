// Base64 (harness/core/base64.h): canonical encoding, and only canonical text decodes.
#include "harness/core/base64.h"

#include <gtest/gtest.h>

#include <string>

namespace harness {
namespace {

TEST(Base64, EncodesCanonically) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64Encode(std::string("\xff\xfe\xfd\x00", 4)), "//79AA==");
}

TEST(Base64, DecodesOnlyCanonicalText) {
  EXPECT_EQ(Base64Decode(""), std::string());
  EXPECT_EQ(Base64Decode("Zg=="), std::string("f"));
  EXPECT_EQ(Base64Decode("Zm8="), std::string("fo"));
  EXPECT_EQ(Base64Decode("Zm9vYmFy"), std::string("foobar"));
  EXPECT_EQ(Base64Decode("//79AA=="), std::string("\xff\xfe\xfd\x00", 4));
  for (const char* bad :
       {"Zg", "Zg=", "Zm8", "Zh==", "Zm9=", "Z===", "====", "Zg==Zg==", "Zg=a", "Z=g=", "Zm 9v",
        "Zm9v\n", " Zm9v", "Zm9-", "Zm9_", "Zm9v=", "Zm9v====", "Zg\x00=", "\xc3\xa9\xc3\xa9"}) {
    EXPECT_FALSE(Base64Decode(bad).has_value()) << bad;
  }
  EXPECT_FALSE(Base64Decode(std::string("Zg\0=", 4)).has_value());
}

TEST(Base64, EveryLengthRoundTrips) {
  std::string bytes;
  for (int n = 0; n < 64; ++n) {
    auto decoded = Base64Decode(Base64Encode(bytes));
    ASSERT_TRUE(decoded.has_value()) << n;
    EXPECT_EQ(*decoded, bytes);
    bytes.push_back(static_cast<char>(n * 37 + 11));
  }
}

}  // namespace
}  // namespace harness
