// Test support shared by the journal's unit tests: a temporary directory, record builders, and
// the conformance fixture every Journal backend is instantiated against (conformance_test.cc).
// A new backend joins the suite with one INSTANTIATE_TEST_SUITE_P(Name, JournalConformance,
// ::testing::Values(JournalBackend{...})).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "harness/journal/journal.h"
#include "support/env.h"

namespace harness::journal_testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "harness-journal-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr)
      ADD_FAILURE() << "mkdtemp failed";
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline JournalTime T0() {
  return JournalTime(std::chrono::seconds(1'800'000'000));
}

inline NewRecord MakeRecord(std::string payload = "{\"n\":1}", std::string type = "TestEvent",
                            RecordKind kind = RecordKind::kEvent) {
  NewRecord r;
  r.record_id = Uuid::V7();
  r.kind = kind;
  r.type = std::move(type);
  r.v = 1;
  r.created_at = T0() + std::chrono::nanoseconds(123456789);
  r.payload = std::move(payload);
  return r;
}

// Opens a journal of one backend in `dir` (unused by backends that need none). Shared, so that
// a backend can keep what the journal lives in (a scratch schema) until the journal is gone.
struct JournalBackend {
  std::string name;
  std::function<std::shared_ptr<Journal>(const std::filesystem::path& dir, JournalOptions)> open;
  // Why the backend cannot run here (a server that is not configured), or nullopt; unset means
  // always available. An unavailable backend's tests are skipped.
  std::function<std::optional<std::string>()> unavailable;
};

// gtest prints a failing parameter by this instead of its bytes.
inline void PrintTo(const JournalBackend& backend, std::ostream* os) {
  *os << backend.name;
}

inline std::string BackendName(const ::testing::TestParamInfo<JournalBackend>& info) {
  return info.param.name;
}

class JournalConformance : public ::testing::TestWithParam<JournalBackend> {
 protected:
  void SetUp() override {
    if (GetParam().unavailable) {
      if (const auto why = GetParam().unavailable())
        GTEST_SKIP() << *why;
    }
    JournalOptions options;
    options.env = &env_;
    journal_ = GetParam().open(dir_.path(), options);
    ASSERT_NE(journal_, nullptr);
  }

  // Acquires a fresh lease on `session` for a fixed owner.
  Lease LeaseFor(const Uuid& session, std::chrono::nanoseconds ttl = std::chrono::minutes(1)) {
    auto lease = journal_->AcquireLease(session, Uuid::V4(), ttl);
    EXPECT_TRUE(lease.ok()) << lease.error().Describe();
    return lease.ok() ? *lease : Lease{};
  }

  AppendRequest Request(const Lease& lease, std::vector<NewRecord> records,
                        std::optional<std::uint64_t> expected = std::nullopt) {
    AppendRequest request;
    request.session = lease.session;
    request.fencing_token = lease.token;
    request.expected_next_seq = expected;
    request.records = std::move(records);
    return request;
  }

  TempDir dir_;
  ManualEnv env_{T0()};  // lease expiry; declared before the journal, which it outlives
  std::shared_ptr<Journal> journal_;
};

}  // namespace harness::journal_testing
