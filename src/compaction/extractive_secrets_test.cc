// What the extractive compactor never writes (compaction/extractive_secrets.h): credential
// assignments, token shapes, passwords in URLs, PEM blocks; a mention of a secret is no secret.
#include "compaction/extractive_secrets.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace harness::extractive_detail {
namespace {

TEST(ExtractiveSecrets, CredentialsAreSecretAndMentionsAreNot) {
  struct Case {
    const char* text;
    bool secret;
  };
  const Case cases[] = {
      {"export API_KEY=abc123", true},
      {"Password: hunter2", true},
      {"session_id: 42", true},
      {"curl --token abc123 https://example.com", true},
      {"git clone https://user:pass@example.com/repo.git", true},
      {"OPENAI=sk-abcdefghijklmnopqrstuv", true},
      {"Authorization: Bearer abcdefghijklmnopqrstuv", true},
      {"-----BEGIN RSA PRIVATE KEY-----", true},
      {"never log the API key", false},
      {"keyboard=us", false},
      {"session-share=on", false},
      {"https://example.com/a:b", false},
      {"sk-short", false},
  };
  for (const Case& c : cases)
    EXPECT_EQ(LooksSecret(c.text), c.secret) << c.text;
}

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
