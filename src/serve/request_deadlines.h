// RequestDeadlines: every request must arrive whole (its head and its body) within a limit.
//
// libmicrohttpd's connection timeout closes a connection only when nothing arrives for that
// long: a client that sends a byte of its headers now and then keeps its connection, and enough
// such clients hold every connection the server has. This closes them instead.
//
// Contract:
// - A connection's deadline is `limit` after the moment it can send a request: when it was
//   accepted (Opened), and again each time a response to it was sent (Answered). Arrived (the
//   request is whole, or the server answered it before reading the rest) lifts the deadline until
//   the next Answered: a connection that then waits on purpose (an event stream, a command wait,
//   a request a loop answers later) or writes a long response is never cut by it.
// - A connection still waiting for its request at its deadline is shut down (shutdown(2), both
//   ways, once; cut() counts them): its client reads the end of the stream, and libmicrohttpd,
//   which owns the socket, sees it end and closes the connection as one its client closed.
// - Closed forgets the connection: its socket is never touched afterwards. The deadline's check
//   and Closed share one lock, and libmicrohttpd notifies the close before it closes the socket,
//   so a socket number is never shut down after it was closed (and maybe reused).
// - The deadlines run on `alarm`, which must stop (be destroyed) before this is destroyed.
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "serve/alarm.h"

namespace harness::serve {

class RequestDeadlines {
 public:
  // One connection's state; the pointer Opened returns is valid until Closed.
  struct Connection {
    std::uint64_t id = 0;
    int fd = -1;
    std::uint64_t alarm = 0;       // the armed deadline's; 0 when none
    std::uint64_t generation = 0;  // bumped at every change, so a stale deadline does nothing
  };

  RequestDeadlines(Alarm& alarm, std::chrono::milliseconds limit) : alarm_(alarm), limit_(limit) {}
  RequestDeadlines(const RequestDeadlines&) = delete;
  RequestDeadlines& operator=(const RequestDeadlines&) = delete;

  // A connection accepted on socket `fd`.
  Connection* Opened(int fd);
  void Arrived(Connection* connection);
  void Answered(Connection* connection);
  void Closed(Connection* connection);
  std::uint64_t cut() const;

 private:
  void Arm(Connection& connection);  // under mu_
  void Disarm(Connection& connection);
  void Expire(std::uint64_t id, std::uint64_t generation);

  Alarm& alarm_;
  const std::chrono::milliseconds limit_;
  mutable std::mutex mu_;
  // Guarded by mu_, by id: the nodes never move, so a Connection* stays valid until erased.
  std::unordered_map<std::uint64_t, Connection> connections_;
  std::uint64_t next_id_ = 1;  // guarded by mu_
  std::uint64_t cut_ = 0;      // guarded by mu_
};

}  // namespace harness::serve
