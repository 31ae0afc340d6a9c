// Env (core/env.h) and the test Envs (support/env.h).
#include "harness/core/env.h"

#include <gtest/gtest.h>

#include <set>

#include "support/env.h"

namespace harness {
namespace {

using std::chrono::milliseconds;

WallTime At(std::int64_t ms) {
  return WallTime(std::chrono::duration_cast<std::chrono::nanoseconds>(milliseconds(ms)));
}

std::uint64_t UnixMsOf(const Uuid& id) {
  std::uint64_t ms = 0;
  for (int i = 0; i < 6; ++i)
    ms = ms << 8 | id.bytes()[i];
  return ms;
}

TEST(SystemEnv, IdsAreDistinctVersion7AndCarryTheWallClock) {
  SystemEnv env;
  const auto before = std::chrono::duration_cast<milliseconds>(env.WallNow().time_since_epoch());
  std::set<Uuid> ids;
  for (int i = 0; i < 1000; ++i) {
    auto id = env.NewId();
    ASSERT_TRUE(id.ok());
    EXPECT_EQ(id->version(), 7);
    EXPECT_EQ(id->bytes()[8] & 0xC0, 0x80);  // the RFC 4122 variant
    EXPECT_GE(UnixMsOf(*id), static_cast<std::uint64_t>(before.count()));
    ids.insert(*id);
  }
  EXPECT_EQ(ids.size(), 1000u);
}

TEST(SystemEnv, RandomBytesFillsAnySize) {
  SystemEnv env;
  std::vector<std::uint8_t> empty;
  EXPECT_TRUE(env.RandomBytes(empty).ok());
  std::vector<std::uint8_t> bytes(4096, 0);
  ASSERT_TRUE(env.RandomBytes(bytes).ok());
  EXPECT_NE(std::count(bytes.begin(), bytes.end(), 0), 4096);
  EXPECT_TRUE(env.RandomU64().ok());
}

TEST(SystemEnv, MonotonicNowNeverGoesBack) {
  SystemEnv env;
  auto last = env.MonotonicNow();
  for (int i = 0; i < 100; ++i) {
    const auto now = env.MonotonicNow();
    EXPECT_GE(now, last);
    last = now;
  }
}

TEST(Uuid, V7FromPutsTheMillisecondsFirstAndSetsVersionAndVariant) {
  Uuid::Bytes random;
  random.fill(0xFF);
  const Uuid id = Uuid::V7From(0x0123456789AB, random);
  EXPECT_EQ(id.ToString(), "01234567-89ab-7fff-bfff-ffffffffffff");
  EXPECT_EQ(Uuid::V4From(random).ToString(), "ffffffff-ffff-4fff-bfff-ffffffffffff");
}

TEST(ManualEnv, TimeMovesOnlyWhenToldOrPerTick) {
  ManualEnv env(At(1000));
  EXPECT_EQ(env.WallNow(), At(1000));
  EXPECT_EQ(env.WallNow(), At(1000));
  const auto m0 = env.MonotonicNow();
  env.Advance(milliseconds(5));
  EXPECT_EQ(env.WallNow(), At(1005));
  EXPECT_EQ(env.MonotonicNow() - m0, milliseconds(5));
  env.set_tick(milliseconds(1));
  EXPECT_EQ(env.WallNow(), At(1005));
  EXPECT_EQ(env.WallNow(), At(1006));
}

TEST(ManualEnv, IdsAreSequentialAndTheSameOnEveryRun) {
  ManualEnv a(At(0x0123456789AB), 7);
  ManualEnv b(At(0x0123456789AB), 7);
  EXPECT_EQ(a.NewId()->ToString(), "01234567-89ab-7000-8000-000700000001");
  EXPECT_EQ(a.NewId()->ToString(), "01234567-89ab-7000-8000-000700000002");
  EXPECT_EQ(b.NewId()->ToString(), "01234567-89ab-7000-8000-000700000001");
  std::array<std::uint8_t, 16> ra{}, rb{};
  ASSERT_TRUE(a.RandomBytes(ra).ok());
  ASSERT_TRUE(b.RandomBytes(rb).ok());
  EXPECT_EQ(ra, rb);
  ManualEnv other_seed(At(0x0123456789AB), 8);
  EXPECT_NE(other_seed.NewId()->ToString(), "01234567-89ab-7000-8000-000700000001");
}

TEST(ManualEnv, FailAfterLetsTheNextDrawsThroughThenFailsTyped) {
  ManualEnv env(At(0));
  env.FailAfter(2);
  EXPECT_TRUE(env.NewId().ok());
  std::array<std::uint8_t, 4> bytes{};
  EXPECT_TRUE(env.RandomBytes(bytes).ok());
  auto id = env.NewId();
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.error().kind, EnvError::Kind::kEntropyUnavailable);
  EXPECT_EQ(DescribeEnvError(id.error()).rfind("entropy_unavailable: ", 0), 0u);
  EXPECT_FALSE(env.RandomU64().ok());
  env.Heal();
  EXPECT_TRUE(env.NewId().ok());
  EXPECT_EQ(env.draws(), 5u);
}

TEST(FailingEnv, EveryDrawFails) {
  FailingEnv env(At(0));
  EXPECT_FALSE(env.NewId().ok());
  std::array<std::uint8_t, 1> byte{};
  EXPECT_FALSE(env.RandomBytes(byte).ok());
  EXPECT_EQ(env.WallNow(), At(0));
}

}  // namespace
}  // namespace harness
