// SessionHost: many sessions on one set of threads (include/harness/runtime/host.h).
#include "harness/runtime/host.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <future>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "harness/journal/memory_journal.h"
#include "harness/runtime/session.h"
#include "support/env.h"
#include "support/forwarding_journal.h"
#include "support/threads.h"

namespace harness {
namespace {

using namespace std::chrono_literals;

// Answers "answer"; while `hold` is set, each call waits for it, and the first `waiters` calls
// count `entered` down before they wait.
class HoldingClient final : public ModelClient {
 public:
  explicit HoldingClient(std::ptrdiff_t waiters = 1) : entered(waiters), waiters_(waiters) {}
  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest&,
                                                     std::stop_token) override {
    if (hold != nullptr) {
      if (calls_.fetch_add(1) < waiters_)
        entered.count_down();
      hold->wait();
    }
    InferenceResponse response;
    response.message.blocks.push_back(TextBlock{"answer"});
    response.message.usage = Usage{1, 1, 0, 0, 0};
    return response;
  }
  std::latch* hold = nullptr;
  std::latch entered;

 private:
  const std::ptrdiff_t waiters_;
  std::atomic<std::ptrdiff_t> calls_{0};
};

UserMessage User(std::string text) {
  UserMessage m;
  m.blocks.push_back(TextBlock{std::move(text)});
  return m;
}

struct HostedSession {
  std::unique_ptr<Session> session;
  Uuid loop;
};

HostedSession OpenOn(Journal& journal, SessionHost* host, std::shared_ptr<ModelClient> client,
                     std::chrono::nanoseconds lease_ttl = 5min,
                     std::function<void(const InfrastructureFailure&)> on_failure = {}) {
  SessionOptions options;
  options.journal = &journal;
  options.host = host;
  options.lease_ttl = lease_ttl;
  options.on_failure = std::move(on_failure);
  HostedSession hosted;
  auto opened = Session::Open(std::move(options));
  EXPECT_TRUE(opened.ok()) << opened.error().Message();
  if (!opened.ok())
    return hosted;
  hosted.session = std::move(opened).value();
  LoopDefinition definition;
  definition.model = ModelKey{"provider", "model"};
  definition.limits = ModelLimits{1000, 800, 200};
  definition.client = std::move(client);
  auto loop = hosted.session->CreateLoop(std::move(definition));
  EXPECT_TRUE(loop.ok()) << loop.error().Message();
  if (loop.ok())
    hosted.loop = *loop;
  return hosted;
}

// Submits one input and reads the session's events until its turn completes.
void RunTurn(HostedSession& hosted) {
  auto subscription = hosted.session->Subscribe();
  ASSERT_TRUE(hosted.session->SubmitInputToLoop(hosted.loop, User("hello")).ok());
  for (;;) {
    auto delivery = subscription.Next(std::chrono::steady_clock::now() + 10s);
    ASSERT_TRUE(delivery) << "no TurnCompleted within 10 s";
    if (std::holds_alternative<TurnCompleted>(*delivery->event))
      return;
  }
}

// The point of a host: a session adds no threads of its own. Fifty sessions on one host, each
// with a loop that ran a turn, leave the process with the host's threads (its actor threads, its
// timer, its lease keeper and the blocking workers calls needed); without a host each session
// starts at least four (two actor threads, a timer, a lease renewer).
TEST(SessionHost, SessionsOnAHostStartNoThreadsOfTheirOwn) {
  std::unique_ptr<Journal> journal = NewMemoryJournal();
  auto client = std::make_shared<HoldingClient>();
  // Blocking workers kept for the whole test, so that none retiring lowers the count the
  // sessions without a host are compared with.
  SessionHost host(
      SessionHostOptions{.actor_threads = 2, .blocking_idle = std::chrono::nanoseconds::max()});
  // One turn first, so the blocking pool has the worker a sequential turn needs.
  HostedSession first = OpenOn(*journal, &host, client);
  RunTurn(first);
  const std::size_t before = ThreadCount();
  std::vector<HostedSession> sessions;
  for (int i = 0; i < 50; ++i) {
    sessions.push_back(OpenOn(*journal, &host, client));
    RunTurn(sessions.back());
  }
  // The blocking pool may grow a worker when a call comes before the previous call's worker is
  // back to idle, so a few threads of slack; a session with threads of its own adds four.
  EXPECT_LE(ThreadCount(), before + 3);
  sessions.clear();
  EXPECT_LE(ThreadCount(), before + 3);

  // The same sessions with threads of their own, for the figure the test is about.
  for (int i = 0; i < 5; ++i)
    sessions.push_back(OpenOn(*journal, nullptr, client));
  EXPECT_GE(ThreadCount(), before + 5 * 4);
}

// The host's blocking workers end once idle for SessionHostOptions::blocking_idle: after the
// sessions' turns the process is back to the threads it had before them.
TEST(SessionHost, IdleBlockingWorkersEndAfterTheHostsIdleTime) {
  constexpr int kSessions = 5;
  std::latch hold(1);
  std::unique_ptr<Journal> journal = NewMemoryJournal();
  auto client = std::make_shared<HoldingClient>(kSessions);
  SessionHost host(SessionHostOptions{.actor_threads = 2, .blocking_idle = 20ms});
  // The host's own threads: sessions on it start none.
  const std::size_t before = ThreadCount();
  std::vector<HostedSession> sessions;
  for (int i = 0; i < kSessions; ++i)
    sessions.push_back(OpenOn(*journal, &host, client));
  // Five turns whose model calls all wait at once: five blocking workers.
  client->hold = &hold;
  std::vector<Subscription> subscriptions;
  for (HostedSession& hosted : sessions) {
    subscriptions.push_back(hosted.session->Subscribe());
    ASSERT_TRUE(hosted.session->SubmitInputToLoop(hosted.loop, User("hello")).ok());
  }
  client->entered.wait();
  EXPECT_GE(ThreadCount(), before + kSessions);
  hold.count_down();
  for (Subscription& subscription : subscriptions) {
    for (;;) {
      auto delivery = subscription.Next(std::chrono::steady_clock::now() + 10s);
      ASSERT_TRUE(delivery) << "no TurnCompleted within 10 s";
      if (std::holds_alternative<TurnCompleted>(*delivery->event))
        break;
    }
  }
  EXPECT_TRUE(ThreadCountFallsTo(before)) << ThreadCount() << " threads, " << before << " before";
}

// A session's destruction waits for its own tasks only: closing one session while another
// session's model call is blocked on the same host returns.
TEST(SessionHost, ClosingASessionWaitsForItsOwnWorkOnly) {
  std::latch hold(1);
  std::unique_ptr<Journal> journal = NewMemoryJournal();
  SessionHost host;
  auto blocked_client = std::make_shared<HoldingClient>();
  blocked_client->hold = &hold;
  HostedSession blocked = OpenOn(*journal, &host, blocked_client);
  ASSERT_TRUE(blocked.session->SubmitInputToLoop(blocked.loop, User("wait")).ok());
  blocked_client->entered.wait();

  auto closing = std::async(std::launch::async, [&] {
    HostedSession other = OpenOn(*journal, &host, std::make_shared<HoldingClient>());
    RunTurn(other);
    other.session.reset();
  });
  const bool closed = closing.wait_for(10s) == std::future_status::ready;
  hold.count_down();
  EXPECT_TRUE(closed) << "closing a session waited for another session's call";
  closing.wait();
  blocked.session.reset();
}

// Records how often each lease was renewed; RenewLease fails once `refuse` is set.
class RenewalJournal final : public testing::ForwardingJournal {
 public:
  using ForwardingJournal::ForwardingJournal;
  Result<Lease, JournalError> RenewLease(const Lease& lease,
                                         std::chrono::nanoseconds ttl) override {
    {
      std::lock_guard lock(mutex_);
      if (++renewals_[lease.session] == 3)
        renewed_three_times.count_down();
    }
    if (refuse.load())
      return Fail(JournalError::Make(JournalErrorKind::kStaleFence, "refused by the test"));
    return ForwardingJournal::RenewLease(lease, ttl);
  }

  std::latch renewed_three_times{2};  // counted down when a lease's third renewal comes
  std::atomic<bool> refuse{false};

 private:
  std::mutex mutex_;
  std::map<Uuid, int> renewals_;
};

// A journal whose leases are judged on a clock that does not move by itself: a lease of a few
// milliseconds is renewed every millisecond of real time by the keeper, but never expires
// because the machine is slow (ThreadSanitizer), so the tests below fail only on the keeper.
std::unique_ptr<Journal> JournalOnAFixedClock(Env& env) {
  JournalOptions options;
  options.env = &env;
  return NewMemoryJournal(options);
}

// One keeper thread renews every session's lease on the host; a renewal the journal refuses
// faults that session and reports it, as a session's own renewer did.
TEST(SessionHost, OneThreadRenewsEverySessionsLeaseAndARefusalFaultsTheSession) {
  ManualEnv env(WallTime(std::chrono::hours(1)));
  RenewalJournal journal(JournalOnAFixedClock(env));
  SessionHost host;
  std::latch failed(2);
  std::mutex mutex;
  std::vector<std::string> details;
  auto on_failure = [&](const InfrastructureFailure& failure) {
    {
      std::lock_guard lock(mutex);
      details.push_back(failure.detail);
    }
    failed.count_down();
  };
  HostedSession a = OpenOn(journal, &host, std::make_shared<HoldingClient>(), 6ms, on_failure);
  HostedSession b = OpenOn(journal, &host, std::make_shared<HoldingClient>(), 6ms, on_failure);
  journal.renewed_three_times.wait();
  EXPECT_FALSE(a.session->faulted());
  EXPECT_FALSE(b.session->faulted());

  journal.refuse = true;
  failed.wait();
  EXPECT_TRUE(a.session->faulted());
  EXPECT_TRUE(b.session->faulted());
  std::lock_guard lock(mutex);
  for (const std::string& detail : details)
    EXPECT_NE(detail.find("lease renewal failed"), std::string::npos) << detail;
}

// Closing sessions whose leases renew every few milliseconds on a shared keeper reports no
// failure: an entry is dropped before its lease is released.
TEST(SessionHost, ClosingSessionsOnAHostReportsNoLeaseFailure) {
  ManualEnv env(WallTime(std::chrono::hours(1)));
  std::unique_ptr<Journal> journal = JournalOnAFixedClock(env);
  SessionHost host;
  std::atomic<int> failures{0};
  std::vector<HostedSession> sessions;
  for (int i = 0; i < 20; ++i) {
    sessions.push_back(OpenOn(*journal, &host, std::make_shared<HoldingClient>(), 3ms,
                              [&](const InfrastructureFailure&) { ++failures; }));
  }
  for (HostedSession& hosted : sessions)
    hosted.session.reset();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace harness
