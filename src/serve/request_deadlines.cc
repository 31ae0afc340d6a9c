#include "serve/request_deadlines.h"

#include <sys/socket.h>

namespace harness::serve {

RequestDeadlines::Connection* RequestDeadlines::Opened(int fd) {
  std::lock_guard lock(mu_);
  const std::uint64_t id = next_id_++;
  Connection& connection = connections_[id];
  connection.id = id;
  connection.fd = fd;
  Arm(connection);
  return &connection;
}

void RequestDeadlines::Arrived(Connection* connection) {
  std::lock_guard lock(mu_);
  Disarm(*connection);
}

void RequestDeadlines::Answered(Connection* connection) {
  std::lock_guard lock(mu_);
  Arm(*connection);
}

void RequestDeadlines::Closed(Connection* connection) {
  std::lock_guard lock(mu_);
  Disarm(*connection);
  connections_.erase(connection->id);
}

std::uint64_t RequestDeadlines::cut() const {
  std::lock_guard lock(mu_);
  return cut_;
}

void RequestDeadlines::Arm(Connection& connection) {
  Disarm(connection);
  connection.alarm = alarm_.Schedule(
      Alarm::Clock::now() + limit_,
      [this, id = connection.id, generation = connection.generation] { Expire(id, generation); });
}

void RequestDeadlines::Disarm(Connection& connection) {
  ++connection.generation;
  if (connection.alarm == 0)
    return;
  alarm_.Cancel(connection.alarm);
  connection.alarm = 0;
}

void RequestDeadlines::Expire(std::uint64_t id, std::uint64_t generation) {
  std::lock_guard lock(mu_);
  // Gone, or changed since this deadline was set (it may have started as it was cancelled).
  const auto it = connections_.find(id);
  if (it == connections_.end() || it->second.generation != generation)
    return;
  it->second.alarm = 0;
  ++it->second.generation;
  // Not close(2): the socket is libmicrohttpd's, which closes it once it sees it end.
  shutdown(it->second.fd, SHUT_RDWR);
  ++cut_;
}

}  // namespace harness::serve
