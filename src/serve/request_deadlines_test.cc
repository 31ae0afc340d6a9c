// RequestDeadlines over socket pairs: a connection whose request does not arrive is shut down at
// its deadline (its peer reads the end of the stream), one whose request arrived is not until its
// response is sent, and one that was closed is never touched. Each test waits on the peer's
// socket (poll), never sleeps; the deadlines are short.
#include "serve/request_deadlines.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>

namespace harness::serve {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kLimit{150};

// Deadlines on an alarm of their own, stopped first.
struct Deadlines {
  ~Deadlines() { alarm.reset(); }
  std::unique_ptr<Alarm> alarm = std::make_unique<Alarm>();
  RequestDeadlines deadlines{*alarm, kLimit};
};

// A connected pair: `server` is what the deadlines watch, `client` its peer.
struct Pair {
  Pair() {
    int fds[2] = {-1, -1};
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    server = fds[0];
    client = fds[1];
  }
  ~Pair() {
    close(server);
    close(client);
  }
  Pair(const Pair&) = delete;
  Pair& operator=(const Pair&) = delete;

  // Whether the client reads the end of the stream within `within`.
  bool Ended(milliseconds within) const {
    pollfd p{client, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(within.count())) != 1)
      return false;
    char byte = 0;
    return recv(client, &byte, 1, MSG_DONTWAIT) == 0;
  }

  int server = -1;
  int client = -1;
};

TEST(RequestDeadlines, AConnectionWhoseRequestDoesNotArriveIsShutAtItsDeadline) {
  Deadlines d;
  RequestDeadlines& deadlines = d.deadlines;
  Pair pair;
  const auto opened = std::chrono::steady_clock::now();
  deadlines.Opened(pair.server);
  ASSERT_TRUE(pair.Ended(milliseconds(10'000)));
  EXPECT_GE(std::chrono::steady_clock::now() - opened, kLimit);
  EXPECT_EQ(deadlines.cut(), 1u);
}

TEST(RequestDeadlines, AnArrivedRequestHasNoDeadlineUntilItsResponseIsSent) {
  Deadlines d;
  RequestDeadlines& deadlines = d.deadlines;
  Pair waiting, later;
  RequestDeadlines::Connection* connection = deadlines.Opened(waiting.server);
  deadlines.Arrived(connection);
  // A connection opened after it reaches its deadline: had `waiting` still had one, it would have
  // come first.
  deadlines.Opened(later.server);
  ASSERT_TRUE(later.Ended(milliseconds(10'000)));
  EXPECT_FALSE(waiting.Ended(milliseconds(0)));
  // Answered: the next request must arrive within the limit too.
  const auto answered = std::chrono::steady_clock::now();
  deadlines.Answered(connection);
  ASSERT_TRUE(waiting.Ended(milliseconds(10'000)));
  EXPECT_GE(std::chrono::steady_clock::now() - answered, kLimit);
  EXPECT_EQ(deadlines.cut(), 2u);
}

TEST(RequestDeadlines, AClosedConnectionIsNeverTouched) {
  Deadlines d;
  RequestDeadlines& deadlines = d.deadlines;
  Pair closed, later;
  deadlines.Closed(deadlines.Opened(closed.server));
  deadlines.Opened(later.server);
  ASSERT_TRUE(later.Ended(milliseconds(10'000)));
  EXPECT_FALSE(closed.Ended(milliseconds(0)));
  EXPECT_EQ(deadlines.cut(), 1u);
}

TEST(RequestDeadlines, EachLateConnectionIsShutOnce) {
  Deadlines d;
  RequestDeadlines& deadlines = d.deadlines;
  Pair a, b, c;
  RequestDeadlines::Connection* first = deadlines.Opened(a.server);
  deadlines.Opened(b.server);
  deadlines.Opened(c.server);
  for (const Pair* pair : {&a, &b, &c})
    ASSERT_TRUE(pair->Ended(milliseconds(10'000)));
  EXPECT_EQ(deadlines.cut(), 3u);
  deadlines.Closed(first);  // after its cut: forgotten, nothing else
}

}  // namespace
}  // namespace harness::serve
