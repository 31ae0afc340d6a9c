#include "harness/http/secrets.h"

#include <gtest/gtest.h>

#include <string>

namespace harness {
namespace {

TEST(Secrets, RedactsEveryFormOfEveryCredential) {
  Secrets secrets;
  secrets.Add("sk/a+b");
  secrets.Add("");  // ignored
  EXPECT_EQ(secrets.Redact("k=sk/a+b u=sk%2Fa%2Bb l=sk%2fa%2bb"),
            "k=[redacted] u=[redacted] l=[redacted]");
  EXPECT_EQ(secrets.Redact("nothing here"), "nothing here");
  EXPECT_EQ(secrets.Redact(""), "");
  EXPECT_EQ(Secrets().Redact("sk/a+b"), "sk/a+b");
}

TEST(Secrets, ALongerCredentialIsReplacedWhole) {
  Secrets secrets;
  secrets.Add("abc");
  secrets.Add("abcdef");
  EXPECT_EQ(secrets.Redact("xabcdefx abc"), "x[redacted]x [redacted]");
}

TEST(Secrets, TheMarkerCannotSpellACredentialAnew) {
  Secrets secrets;
  secrets.Add("d]x");
  EXPECT_EQ(secrets.Redact("d]d]xx").find("d]x"), std::string::npos);
}

TEST(Secrets, ACutTextLosesAnEndThatBeginsACredential) {
  Secrets secrets;
  secrets.Add("sk-live-123");
  EXPECT_EQ(secrets.RedactCut("error: sk-li"), "error: ");
  EXPECT_EQ(secrets.RedactCut("error: sk-live-123"), "error: [redacted]");
  EXPECT_EQ(secrets.RedactCut("error: fine"), "error: fine");
}

}  // namespace
}  // namespace harness
