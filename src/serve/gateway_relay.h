// GatewayRelay: one gateway answer on its way from the handler's thread (the producer: what the
// upstream streams, or a collected reply) to the client's connection (the consumer:
// libmicrohttpd's content reader), with bounded memory (docs/spec/gateway.md "Streaming").
//
// Contract:
// - The producer calls Start(status, content_type) once, then Write as often as it likes, then
//   Finish. Write queues the bytes and returns at once while fewer than `capacity` bytes wait
//   for the consumer; past that it blocks until the consumer has taken them, so a client that
//   reads slowly slows the upstream's read instead of growing memory (at most capacity plus
//   one write is held). Start and Write return false once the consumer is gone or the relay was
//   aborted: the producer then stops its upstream call.
// - The consumer: AwaitHead is true once Start was called; else it marks the consumer asleep,
//   calls `suspend` and is false (Start, Abort call `resume`). Read copies queued bytes
//   (kData with their count); with none it calls `suspend` and answers kWait unless the relay
//   is finished (kEnd) or aborted (kAborted: the connection is cut). `suspend` and `resume` are
//   called under the relay's lock, each `resume` only after a `suspend`, so a wake-up is never
//   lost; they must not call back into the relay. Gone says the consumer will read no more
//   (the connection closed): every later call of the producer returns false at once, and no
//   `resume` follows.
// - Abort (the server's shutdown): the producer's calls return false, a sleeping consumer is
//   resumed and its next Read is kAborted (AwaitHead true, with no head: the server answers
//   shutting down).
// Thread safety: the producer's calls on one thread, the consumer's on another (one call at a
// time each); Abort and Gone from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace harness::serve {

// What a relay holds for its client at most before its producer waits.
inline constexpr std::size_t kRelayCapacity = 1u << 20;

class GatewayRelay {
 public:
  struct Head {
    unsigned status = 200;
    std::string content_type;
  };
  enum class ReadResult { kData, kWait, kEnd, kAborted };

  GatewayRelay(std::function<void()> suspend, std::function<void()> resume,
               std::size_t capacity = kRelayCapacity);
  GatewayRelay(const GatewayRelay&) = delete;
  GatewayRelay& operator=(const GatewayRelay&) = delete;

  // Producer.
  bool Start(unsigned status, std::string content_type);
  bool Write(std::string_view bytes);
  void Finish();
  bool started() const;
  bool finished() const;

  // Consumer.
  bool AwaitHead();
  std::optional<Head> head() const;  // nullopt before Start (or after an Abort without one)
  ReadResult Read(char* buffer, std::size_t max, std::size_t& count);
  void Gone();

  void Abort();

 private:
  // Under mu_: resumes a sleeping consumer.
  void WakeLocked();

  const std::function<void()> suspend_;
  const std::function<void()> resume_;
  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable drained_;  // the producer waits here for room
  std::optional<Head> head_;
  std::string queued_;
  std::size_t sent_ = 0;  // bytes of queued_ already taken
  bool finished_ = false;
  bool asleep_ = false;
  bool gone_ = false;
  bool aborted_ = false;
};

}  // namespace harness::serve
