// SalienceLedger and IsNameShaped (compaction/salience.h): which tokens are names, and which
// names a run keeps coming back to.
#include "compaction/salience.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace harness {
namespace {

TEST(Salience, NameShapes) {
  for (const char* name :
       {"snake_case_name", "camelCase", "PascalCase", "UPLOAD_MAX_BYTES", "config.max_retries",
        "pkg.module", "std::vector", "/api/v1/users", "_private_thing", "HTTPServer2"}) {
    EXPECT_TRUE(IsNameShaped(name)) << name;
  }
  for (const char* word :
       {"upload", "Upload", "HTTP", "ab", "README.md", "src/main.py", "e.g", "3.14", "v1.2.3",
        "deadbeefcafe", "123e4567-e89b-12d3-a456-426614174000", "https://example.com/a_b",
        "--dry-run", "well-known", "/home/user/a_b", "/usr/lib", "/api/schema.json", "/v1"}) {
    EXPECT_FALSE(IsNameShaped(word)) << word;
  }
  EXPECT_FALSE(IsNameShaped(std::string(65, 'a') + "_b"));
}

TEST(Salience, RecurrenceAndWhereANameWasWrittenDecide) {
  SalienceLedger ledger;
  ledger.Observe("we add `RateLimiter` and RATE_LIMIT_RPS", 2);
  ledger.Observe("RateLimiter, RateLimiter again", 2);  // once a message
  ledger.Observe("read once: some_helper_fn", 1);
  ledger.Observe("the user named user_quota_table", 3);
  const std::vector<std::string> top = ledger.Top(10);
  EXPECT_EQ(top, (std::vector<std::string>{"RateLimiter", "user_quota_table"}));
  EXPECT_EQ(ledger.Top(1), (std::vector<std::string>{"RateLimiter"}));
}

TEST(Salience, TheTableIsBounded) {
  SalienceLedger ledger;
  std::string text;
  for (std::size_t i = 0; i < kMaxTrackedNames + 500; ++i)
    text += "name_" + std::to_string(i) + " ";
  ledger.Observe(text, 3);
  ledger.Observe("late_name_x", 3);
  const std::vector<std::string> top = ledger.Top(kMaxTrackedNames + 10);
  EXPECT_EQ(top.size(), kMaxTrackedNames);
  EXPECT_EQ(top.front(), "name_0");
}

}  // namespace
}  // namespace harness
