// LooksLikeSecret (core/secrets.h): the one rule the extractive compactor and the coverage check
// share. A table of credentials of every shape the contract names, the boundaries of each (15
// and 16 bytes, 31 and 32), and mentions of secrets that are not secrets.
#include "harness/core/secrets.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace harness {
namespace {

struct Case {
  std::string text;
  bool secret;
};

TEST(LooksLikeSecret, EveryShapeOfCredentialAndNoMention) {
  const std::vector<Case> cases = {
      // Nothing.
      {"", false},
      {" ", false},
      // Credential-like names with a value.
      {"export API_KEY=abc123", true},
      {"Password: hunter2", true},
      {"password=hunter2", true},
      {"token: 'abc'", true},
      {"session_id: 42", true},
      {"x-auth-token: 1", true},
      {"\"client_secret\": \"s\"", true},
      {"AWS_CREDENTIALS=a", true},
      {"curl --token abc123 https://example.com", true},
      {"--password hunter2", true},
      {"--password --verbose", false},  // the value is another flag
      {"token:", false},                // no value
      {"{\"token\":,}", false},
      {"\"token\": {}", true},
      // Names that only begin or contain such a word.
      {"keyboard=us", false},
      {"session-share=on", false},
      {"tokens: 500", false},
      {"max_tokens=100", false},
      {"author: Ada", false},
      {"cwd=/tmp", false},
      {"test_token_refresh_handles_expiry", false},
      // Known prefixes: 16 bytes with the word after them, at a word's start.
      {"sk-ant-api03-abcdefghijklmnop", true},
      {"OPENAI=sk-abcdefghijklmnopqrstuv", true},
      {"export OPENAI_API_KEY=sk-abcdefghijklmnopqrs", true},
      {"sk-abcdefghijklm", true},  // 16 bytes
      {"sk-abcdefghijkl", false},  // 15
      {"sk-learn", false},
      {"task-abcdefghijklmnop", false},  // not at a word's start
      {"ghp_abcdefghijklmnopqrstuvwxyz0123", true},
      {"github_pat_11ABCDEFG0123456789", true},
      {"xoxb-1234567890-abcdef", true},
      {"glpat-abcdefghijklmnopqrst", true},
      {"hf_abcdefghijklmnopqrs", true},
      {"AKIAIOSFODNN7EXAMPLE", true},
      {"akiaiosfodnn7example", false},  // AWS key ids are upper case
      {"AIzaSyA1234567890abcdefghijk", true},
      {"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", true},
      // Long tokens mixing cases and digits; a path is judged a component at a time.
      {"aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF", true},       // 32 bytes
      {"aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1d", false},       // 31
      {"abcdefghijklmnopqrstuvwxyz0123456789", false},  // no upper case
      {"src/SomeModule42/AnotherDirectory7/x.py", false},
      {"API=aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF", true},  // the value alone
      {"root=UUID=dccb368a-ae08-48db-9563-9415e327bb90 rw rootflags=subvol=@", false},
      {"0f3a9c2e7b1d4a6f8e0c5b3a9d7f1e2c4b6a8d0f", false},  // a commit id
      // Bearer and basic values.
      {"Authorization: Bearer 0123456789abcdef", true},
      {"bearer abcdefgh", true},  // 8 bytes
      {"bearer abcdefg", false},  // 7
      {"Basic dXNlcjpwYXNzd29yZA==", true},
      {"basic auth is off", false},
      // Passwords in URLs.
      {"git clone https://user:pass@example.com/repo.git", true},
      {"postgres://user:pa55@db:5432/app", true},
      {"https://user@example.com/a", false},
      {"https://example.com/a:b@c", false},
      {"https://example.com/a/b", false},
      // PEM markers.
      {"-----BEGIN RSA PRIVATE KEY-----", true},
      {"-----BEGIN OPENSSH PRIVATE KEY-----", true},
      {"-----END PRIVATE KEY-----", true},
      {"the private key is in the vault", false},
      // Mentions.
      {"never log the API key", false},
      {"the password must be rotated", false},
      {"Never commit secrets or tokens.", false},
      {"src/compaction/anchors.cc", false},
  };
  for (const Case& c : cases)
    EXPECT_EQ(LooksLikeSecret(c.text), c.secret) << "\"" << c.text << "\"";
}

// Bytes outside ASCII, NULs and long runs are read, never misread as a shape.
TEST(LooksLikeSecret, AnyBytesAreRead) {
  EXPECT_FALSE(LooksLikeSecret(std::string(100'000, 'a')));
  EXPECT_FALSE(LooksLikeSecret(std::string("pass\0word=1", 11)));
  EXPECT_TRUE(LooksLikeSecret(std::string("\xff\xfe password=1")));
  EXPECT_FALSE(LooksLikeSecret("mot de passe: « secret » n’est pas écrit"));
}

}  // namespace
}  // namespace harness
