// BlockingPool's idle workers retire (runtime/executor.h): the threads fall back to the calls in
// flight, no task is lost to a retirement, and destruction joins busy and retiring workers.
// A blocked call never delaying another: BlockingPool.ABlockedCallNeverDelaysAnother
// (session_test.cc).
#include "runtime/executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

#include "support/threads.h"

namespace harness::runtime_detail {
namespace {

using namespace std::chrono_literals;

// Waits (polling, with a deadline) until `done` holds; false if it never did. The condition is
// the synchronization: the poll only bounds how long a failing test takes.
bool Eventually(const std::function<bool()>& done, std::chrono::seconds limit = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// The threads before a test starts any: one is started and joined first, since ThreadSanitizer
// starts a thread of its own with the process's first one.
std::size_t ThreadsBefore() {
  std::thread([] {}).join();
  return ThreadCount();
}

TEST(BlockingPool, IdleWorkersRetireAndTheThreadsFall) {
  constexpr std::size_t kCalls = 6;
  // Declared before the pool: its destructor joins workers that may still use them.
  std::latch entered(kCalls);
  std::latch release(1);
  const std::size_t before = ThreadsBefore();
  BlockingPool pool(20ms);
  for (std::size_t i = 0; i < kCalls; ++i) {
    pool.Submit([&] {
      entered.count_down();
      release.wait();
    });
  }
  entered.wait();
  // Every call blocked at once: a worker each, however long they have been busy.
  EXPECT_EQ(pool.workers(), kCalls);
  // At least the main thread and a worker each. Not `before + kCalls`: a thread counted in
  // `before` (ThreadSanitizer's own, or one an earlier test is still ending) may have ended
  // since, which under load made that comparison fail without any worker missing.
  EXPECT_GE(ThreadCount(), kCalls + 1);
  release.count_down();
  EXPECT_TRUE(Eventually([&] { return pool.workers() == 0; })) << pool.workers() << " workers";
  // Each retired thread is joined by the next to retire; the last one ends on its own (it is
  // joined by the destructor), so none is left running.
  EXPECT_TRUE(ThreadCountFallsTo(before)) << ThreadCount() << " threads, " << before << " before";

  // The pool grows again for the next calls.
  std::promise<void> ran;
  pool.Submit([&] { ran.set_value(); });
  EXPECT_EQ(ran.get_future().wait_for(20s), std::future_status::ready);
}

TEST(BlockingPool, ABusyWorkerDoesNotRetireAndAnIdleOneDoes) {
  std::latch release(1);
  std::promise<void> quick_ran;
  BlockingPool pool(10ms);
  pool.Submit([&] { release.wait(); });
  pool.Submit([&] { quick_ran.set_value(); });
  quick_ran.get_future().wait();
  // The idle worker retires while the other is busy far longer than the idle time.
  EXPECT_TRUE(Eventually([&] { return pool.workers() == 1; })) << pool.workers() << " workers";
  release.count_down();
  EXPECT_TRUE(Eventually([&] { return pool.workers() == 0; })) << pool.workers() << " workers";
}

// A call submitted while the last idle worker decides to retire either finds it still waiting
// (it takes the call) or finds none (a new worker starts): it runs either way, at once. Each
// round submits its call at a different point of the worker's idle time, across the moment it
// retires; a call that was lost would never run.
TEST(BlockingPool, ACallSubmittedAsTheLastWorkerRetiresRunsPromptly) {
  for (const auto idle : {0ns, std::chrono::nanoseconds(50us), std::chrono::nanoseconds(200us)}) {
    BlockingPool pool(idle);
    std::chrono::nanoseconds pause{0};
    for (int round = 0; round < 400; ++round) {
      std::promise<void> ran;
      pool.Submit([&] { ran.set_value(); });
      ASSERT_EQ(ran.get_future().wait_for(10s), std::future_status::ready)
          << "idle " << idle.count() << " ns, round " << round;
      // The pause places the next call before, at or after the retirement (0 to 2 idle times,
      // in steps); it is not a synchronization.
      pause = idle == 0ns ? std::chrono::nanoseconds(round % 20 * 1000) : idle * (round % 21) / 10;
      std::this_thread::sleep_for(pause);
    }
    // A call may come before the previous call's worker is back to idle and start another:
    // whatever was started ends once idle.
    EXPECT_TRUE(Eventually([&] { return pool.workers() == 0; })) << pool.workers() << " workers";
  }
}

TEST(BlockingPool, ZeroIdleTimeEndsEachWorkerOnceTheQueueIsEmpty) {
  BlockingPool pool(0ns);
  std::promise<void> ran;
  pool.Submit([&] { ran.set_value(); });
  ran.get_future().wait();
  EXPECT_TRUE(Eventually([&] { return pool.workers() == 0; }));
}

TEST(BlockingPool, TheLargestIdleTimeKeepsWorkersWithoutOverflow) {
  std::atomic<int> ran{0};
  std::latch done(2);
  BlockingPool pool(std::chrono::nanoseconds::max());
  for (int i = 0; i < 2; ++i) {
    pool.Submit([&] {
      ran.fetch_add(1);
      done.count_down();
    });
  }
  done.wait();
  EXPECT_EQ(ran.load(), 2);
  EXPECT_GE(pool.workers(), 1u);
}

// The destructor with workers in every state: busy (it waits for their task), idle, retiring
// and retired unjoined. Every queued call runs and every thread is joined.
TEST(BlockingPool, DestructionJoinsBusyIdleAndRetiringWorkers) {
  constexpr int kBusy = 3;
  constexpr int kQuick = 8;
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> ran{0};
    std::latch busy_entered(kBusy);
    std::latch release(1);
    std::latch quick_done(kQuick);
    const std::size_t before = ThreadsBefore();
    auto pool = std::make_unique<BlockingPool>(std::chrono::microseconds(round * 50));
    for (int i = 0; i < kBusy; ++i) {
      pool->Submit([&] {
        busy_entered.count_down();
        release.wait();
        ran.fetch_add(1);
      });
    }
    busy_entered.wait();
    for (int i = 0; i < kQuick; ++i) {
      pool->Submit([&] {
        ran.fetch_add(1);
        quick_done.count_down();
      });
    }
    quick_done.wait();
    // The quick workers are idle, retiring or retired now, as the round's idle time has it;
    // the busy ones wait for `release`, which comes while the destructor is joining them.
    std::thread destroy([&] { pool.reset(); });
    release.count_down();
    destroy.join();
    EXPECT_EQ(ran.load(), kBusy + kQuick);
    EXPECT_TRUE(ThreadCountFallsTo(before))
        << ThreadCount() << " threads, " << before << " before, round " << round;
  }
}

// A task that submits another while the pool is being destroyed has it run, and the worker
// started for it joined: the destructor joins whatever starts while it joins.
TEST(BlockingPool, ACallSubmittedByATaskDuringDestructionRuns) {
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> ran{0};
    std::latch entered(1);
    std::latch release(1);
    const std::size_t before = ThreadsBefore();
    auto pool = std::make_unique<BlockingPool>(1ms);
    // reset() clears the pointer before the destructor runs: the task keeps its own.
    BlockingPool* const raw = pool.get();
    raw->Submit([&, raw] {
      entered.count_down();
      release.wait();
      raw->Submit([&] { ran.fetch_add(1); });
      ran.fetch_add(1);
    });
    entered.wait();
    std::thread destroy([&] { pool.reset(); });
    release.count_down();
    destroy.join();
    EXPECT_EQ(ran.load(), 2);
    EXPECT_TRUE(ThreadCountFallsTo(before)) << "round " << round;
  }
}

}  // namespace
}  // namespace harness::runtime_detail
