// ScriptedHttpServer: a test-only HTTP server on 127.0.0.1 that answers from a script.
//
// Contract:
// - Start() binds an ephemeral port on 127.0.0.1 and serves on its own threads until Stop() or
//   destruction. Each request takes the next ScriptedReply from the queue (in push order, across
//   connections); with the queue empty it answers 599 "unscripted" so a test sees the mistake.
// - A reply is a status with headers and a body, or a list of chunks sent one by one with a flush
//   each (chunked transfer encoding, e.g. SSE), optionally cut: the connection is closed once
//   `cut_after_bytes` body bytes were sent. A reply may stall (before its headers, or after its
//   chunks) until ReleaseStalls() or Stop(); WaitForStalls(n) lets the test act while it stalls.
//   A reply may instead keep its stream alive after its chunks: it sends `keep_alive` every
//   `keep_alive_every` until ReleaseStalls() or Stop(), as a proxy does for an idle stream
//   (KeepAlivesSent() counts them).
// - Every request is recorded (method, path with query, lower-cased headers, body) before its
//   reply is sent.
// - Responder mode: with SetResponder(f), every request is answered by f(recorded request)
//   instead of the queue (f runs on a server thread, without the server's lock; it must be
//   thread-safe). A reply's `delay` is waited before its headers are sent (before a stall).
//   OutstandingRequests() lists the requests (indices into Requests()) whose reply has not begun:
//   still in f, in its delay or in a stall before its headers.
// - The Debian cpp-httplib listens with a backlog of 5 (compiled in): a burst of more new
//   connections than that sees the kernel retry a SYN after about a second. Correct, but slow.
// Thread safety: every method may be called from any thread while the server runs.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace httplib {
class Server;
}

namespace harness::test_support {

struct ScriptedReply {
  enum class Stall { kNone, kBeforeHeaders, kAfterChunks };

  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string content_type = "application/json";
  // Sent whole with a Content-Length, unless `chunks` is non-empty.
  std::string body;
  // Sent one by one with chunked encoding, each flushed before the next.
  std::vector<std::string> chunks;
  // Close the connection after this many body bytes (of `body`, or across `chunks`).
  std::optional<std::size_t> cut_after_bytes;
  Stall stall = Stall::kNone;
  // Waited before the headers are sent (the request counts as outstanding meanwhile).
  std::chrono::milliseconds delay{0};
  // After the chunks, `keep_alive` this often until released (an SSE comment by default).
  std::optional<std::chrono::milliseconds> keep_alive_every;
  std::string keep_alive = ": keep-alive\n\n";

  static ScriptedReply Text(int status, std::string body);
  static ScriptedReply Sse(std::vector<std::string> chunks);
};

struct RecordedRequest {
  std::string method;
  std::string path;                                          // with the query string
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;
  int remote_port = 0;  // the client's port: equal ports mean one reused connection

  // The first header with this (lower-case) name, or empty.
  std::string Header(const std::string& lower_name) const;
};

using ScriptedResponder = std::function<ScriptedReply(const RecordedRequest&)>;

class ScriptedHttpServer {
 public:
  ScriptedHttpServer();
  ~ScriptedHttpServer();
  ScriptedHttpServer(const ScriptedHttpServer&) = delete;
  ScriptedHttpServer& operator=(const ScriptedHttpServer&) = delete;

  // Binds and starts serving; false if no port could be bound.
  bool Start();
  // Releases stalls, stops serving and joins the server thread. Idempotent.
  void Stop();

  int port() const { return port_; }
  // "http://127.0.0.1:<port>" + path.
  std::string Url(const std::string& path) const;

  void Push(ScriptedReply reply);
  // Answers every later request with `responder` instead of the queue (null: the queue again).
  void SetResponder(ScriptedResponder responder);
  // Indices (into Requests()) of the requests whose reply has not begun, ascending.
  std::vector<std::size_t> OutstandingRequests() const;
  std::vector<RecordedRequest> Requests() const;
  std::size_t RequestCount() const;

  // Blocks until `count` replies in total have entered a stall (counted since Start).
  void WaitForStalls(std::size_t count);
  // Lets every current and future stalled reply go on.
  void ReleaseStalls();
  // Keep-alive chunks sent so far (counted since Start).
  std::size_t KeepAlivesSent() const;

 private:
  struct Handling;  // the per-request code, with access to the state below
  void StallHere();
  // Waits up to `duration`; true when released (or stopped) meanwhile.
  bool ReleasedWithin(std::chrono::milliseconds duration);

  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<ScriptedReply> script_;       // guarded by mutex_
  std::vector<RecordedRequest> requests_;  // guarded by mutex_
  ScriptedResponder responder_;            // guarded by mutex_
  std::vector<bool> outstanding_;          // guarded by mutex_; per request
  std::size_t stalls_entered_ = 0;         // guarded by mutex_
  std::size_t keep_alives_sent_ = 0;       // guarded by mutex_
  bool released_ = false;                  // guarded by mutex_
};

}  // namespace harness::test_support
