// `harness serve` under load, all figures in one run, against its targets:
//
// 1. Memory per idle loaded session: RSS growth (/proc/self/status VmRSS) and heap growth
//    (mallinfo2 uordblks, the bytes malloc has handed out and not got back) over --sessions
//    sessions created over HTTP, each with one answered turn, then left idle.
// 2. 1,000 (--subscribers) concurrent SSE subscribers on one session: the server's threads
//    (/proc/self/task, the process's count minus the count before Server::Start) right after
//    the turns of 1, once the blocking workers of those turns retired (--blocking-idle-ms, the
//    server's default unless given; the bench waits for it), with the subscribers and at the
//    peak of the fan-out; the memory per idle connection (as in 1, the bench's own client state
//    included), then fan-out: --fanout-inputs inputs sent to the session, every event
//    delivered to every subscriber; deliveries (frames received by all subscribers) per second,
//    from the first input to the last delivery.
// 3. A compaction's latency with --latency-sessions (200) sessions each holding an open event
//    stream: from `POST …/compact` to its CompactWaiterResolved parsed off that session's SSE
//    stream, one compaction at a time, p50 and p99, beside the same path in process (a
//    SessionTable of its own over the same journal: Session::CompactToLoop to the reply
//    delivered on a hub subscription made before), so the service's overhead is a ratio. Both
//    use the offline extractive compactor; every compaction follows a fresh turn (a compaction
//    leaves one segment, which has nothing more to compact). In-process and HTTP rounds
//    alternate (--rounds), so a change of the machine's load hits both alike.
// 4. A conversation the client holds, about 150,000 tokens (--conversation-tokens) of Chat
//    Completions messages: `POST /v1/compact` (format openai, not stored) from the request's
//    first byte sent to its answer read, beside CompactConversation called in process on the
//    same messages with the same model context (on a SessionHost made once, as the server's
//    sessions share one), --conversation-rounds times each, alternating;
//    p50 of each and their ratio (target: HTTP p50 <= 2x in process). Both use the offline
//    compactor and keep nothing.
//
// The server runs in this process (serve::Server::Start on 127.0.0.1:0) over a SQLite journal in
// a fresh directory (--dir; --memory-journal: the memory journal, to see the service's cost
// without the disk's) with a scripted model that answers every request at once. The
// clients are plain sockets and epoll: one keep-alive connection for the requests, and every
// event stream read from one thread, its chunked transfer encoding and SSE frames decoded here.
//
//   serve_bench [--sessions N] [--subscribers S] [--fanout-inputs I] [--latency-sessions L]
//               [--rounds R] [--threads T] [--blocking-idle-ms MS] [--dir DIR]
//               [--memory-journal] [--conversation-tokens N] [--conversation-rounds C]
#include <fcntl.h>
#include <fmt/format.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/dialect/dialect.h"
#include "harness/inference/counter.h"
#include "harness/journal/memory_journal.h"
#include "harness/journal/sqlite_journal.h"
#include "harness/runtime/compact.h"
#include "harness/serve/server.h"
#include "serve/metrics.h"
#include "serve/sessions.h"
#include "support/test_model.h"

namespace {

using namespace harness;
using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "serve_bench: %s\n", what.c_str());
  std::exit(1);
}

// ---- the process ----

std::uint64_t RssKb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stoull(line.substr(6));
  }
  return 0;
}

std::size_t HeapInUse() {
  return mallinfo2().uordblks;
}

std::size_t Threads() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task"))
    ++n;
  return n;
}

struct Memory {
  std::uint64_t rss_kb = RssKb();
  std::size_t heap = HeapInUse();
};

// Growth per item between two readings, in bytes.
struct PerItem {
  double rss = 0;
  double heap = 0;
};
PerItem Per(const Memory& before, const Memory& after, std::size_t items) {
  return {(static_cast<double>(after.rss_kb) - static_cast<double>(before.rss_kb)) * 1024.0 /
              static_cast<double>(items),
          (static_cast<double>(after.heap) - static_cast<double>(before.heap)) /
              static_cast<double>(items)};
}

// ---- the model ----

// Answers every request at once with one short text.
class InstantModel final : public ModelClient {
 public:
  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest&,
                                                     std::stop_token) override {
    return InferenceResponse{AssistantMessage{{TextBlock{"Done."}}, std::nullopt},
                             StopReason::kEndTurn};
  }
};

// Manual compaction; an estimating counter needs room for its error (compaction/policy.h), and
// the extractive summary of a few turns needs more than the test policy's 10 tokens.
CompactionPolicy BenchPolicy() {
  CompactionPolicy policy = runtime_testing::TestPolicy();
  policy.max_summary_tokens = 2'000;
  policy.counter_policy = CounterPolicy::kAllowConservative;
  policy.safety_margin = 1'000;
  policy.reserved_output = 100;
  policy.rearm_below = 6'000;
  policy.compact_at = 8'000;
  return policy;
}

// A model that runs no turns with room for a long conversation: what POST /v1/compact of ~150k
// tokens is measured with (phase 4), the offline compactor's summary budget and a margin for
// the estimating counter.
serve::ServedModel LongWindowModel() {
  CompactionPolicy policy = BenchPolicy();
  policy.keep_recent_segments = 2;
  policy.keep_recent_tokens = 8'000;
  policy.max_summary_tokens = 4'000;
  policy.safety_margin = 20'000;
  policy.reserved_output = 8'000;
  policy.compact_at = 0;
  policy.rearm_below = 0;
  return serve::ServedModel{nullptr, ModelKey{"bench", "long-window"},
                            ModelLimits{200'000, 0, 8'000}, std::make_shared<EstimateCounter>(),
                            policy};
}

std::map<std::string, serve::ConfiguredModel> Models() {
  std::map<std::string, serve::ConfiguredModel> models;
  models["long"] = serve::ConfiguredModel{
      ModelKey{"bench", "long-window"},
      []() -> Result<serve::ServedModel, std::string> { return LongWindowModel(); }};
  models["m"] = serve::ConfiguredModel{
      runtime_testing::TestModel(), []() -> Result<serve::ServedModel, std::string> {
        return serve::ServedModel{std::make_shared<InstantModel>(), runtime_testing::TestModel(),
                                  ModelLimits{10'000, 8'000, 100},
                                  std::make_shared<EstimateCounter>(), BenchPolicy()};
      }};
  return models;
}

// Manual compaction only, one segment kept: every turn leaves one more segment to compact.
constexpr std::string_view kCreateBody =
    R"({"loops":[{"model":"m","compactor":"offline","policy":{"automatic":false,)"
    R"("keep_recent_segments":1,"keep_recent_tokens":1}}]})";

// ---- HTTP over plain sockets ----

int Connect(std::uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    Die(fmt::format("socket: {}", std::strerror(errno)));
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
    Die(fmt::format("connect: {}", std::strerror(errno)));
  return fd;
}

void SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0)
      Die(fmt::format("send: {}", std::strerror(errno)));
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::string RequestBytes(std::string_view method, std::string_view path, std::string_view body) {
  return fmt::format(
      "{} {} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Content-Length: {}\r\n\r\n{}",
      method, path, body.size(), body);
}

struct Reply {
  int status = 0;
  std::string body;
};

// One keep-alive connection, one request at a time (blocking).
class Client {
 public:
  explicit Client(std::uint16_t port) : port_(port), fd_(Connect(port)) {}
  ~Client() { close(fd_); }

  Reply Call(std::string_view method, std::string_view path, std::string_view body = "") {
    SendAll(fd_, RequestBytes(method, path, body));
    std::size_t end = std::string::npos;
    while ((end = in_.find("\r\n\r\n")) == std::string::npos)
      Fill();
    Reply reply;
    reply.status = std::atoi(in_.c_str() + 9);  // "HTTP/1.1 NNN"
    std::size_t length = 0;
    std::string head = in_.substr(0, end);
    std::transform(head.begin(), head.end(), head.begin(), ::tolower);
    if (const auto at = head.find("content-length:"); at != std::string::npos)
      length = std::strtoull(head.c_str() + at + 15, nullptr, 10);
    while (in_.size() < end + 4 + length)
      Fill();
    reply.body = in_.substr(end + 4, length);
    in_.erase(0, end + 4 + length);
    return reply;
  }

 private:
  void Fill() {
    char buf[16384];
    const ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n <= 0)
      Die(fmt::format("the server closed a request connection (port {})", port_));
    in_.append(buf, static_cast<std::size_t>(n));
  }

  std::uint16_t port_;
  int fd_;
  std::string in_;
};

std::string Member(const Reply& reply, const char* name, int status) {
  if (reply.status != status)
    Die(fmt::format("expected {}, got {}: {}", status, reply.status, reply.body));
  auto json = ParseStrictJson(reply.body);
  if (!json.ok() || !(*json).contains(name))
    Die("unexpected reply: " + reply.body);
  const Json& value = (*json)[name];
  return value.is_array() ? value[0].get<std::string>() : value.get<std::string>();
}

// One event stream, read without blocking: HTTP head, chunked encoding, SSE frames.
struct Stream {
  int fd = -1;
  bool head_done = false;
  std::string raw;          // bytes not yet decoded
  std::size_t chunk = 0;    // bytes left in the current chunk
  bool chunk_crlf = false;  // the CRLF after a chunk's data is due
  std::string sse;          // decoded body not yet split into frames
  bool closed = false;
  std::uint64_t frames = 0;
  std::uint64_t turns = 0;                    // TurnCompleted frames
  std::uint64_t lagged = 0;                   // lagged / end frames
  std::string awaited;                        // a command id whose reply is awaited
  std::optional<Clock::time_point> answered;  // when that reply was parsed
  bool rejected = false;

  void Frame(std::string_view frame) {
    ++frames;
    std::string_view name;
    if (auto at = frame.find("event: "); at != std::string_view::npos) {
      name = frame.substr(at + 7);
      name = name.substr(0, name.find('\n'));
    }
    if (name == "TurnCompleted") {
      ++turns;
    } else if (name == "lagged" || name == "end") {
      ++lagged;
    } else if ((name == "CompactWaiterResolved" || name == "CompactWaiterRejected") &&
               !awaited.empty() && frame.find(awaited) != std::string_view::npos) {
      answered = Clock::now();
      rejected = name == "CompactWaiterRejected";
    }
  }

  void Decode() {
    if (!head_done) {
      const auto end = raw.find("\r\n\r\n");
      if (end == std::string::npos)
        return;
      if (raw.compare(0, 12, "HTTP/1.1 200") != 0)
        Die("the event stream was refused: " + raw);
      raw.erase(0, end + 4);
      head_done = true;
    }
    std::size_t at = 0;
    for (;;) {
      if (chunk > 0) {
        const std::size_t n = std::min(chunk, raw.size() - at);
        if (n == 0)
          break;
        sse.append(raw, at, n);
        at += n;
        chunk -= n;
        chunk_crlf = chunk == 0;
        continue;
      }
      if (chunk_crlf) {
        if (raw.size() - at < 2)
          break;
        at += 2;
        chunk_crlf = false;
      }
      const auto eol = raw.find("\r\n", at);
      if (eol == std::string::npos)
        break;
      chunk = std::strtoull(raw.c_str() + at, nullptr, 16);
      at = eol + 2;
      if (chunk == 0) {  // the last chunk: the stream is over
        closed = true;
        break;
      }
    }
    raw.erase(0, at);
    std::size_t start = 0;
    for (auto end = sse.find("\n\n"); end != std::string::npos; end = sse.find("\n\n", start)) {
      Frame(std::string_view(sse).substr(start, end - start));
      start = end + 2;
    }
    sse.erase(0, start);
  }
};

// Every open event stream, read from the calling thread.
class Streams {
 public:
  Streams() : epoll_(epoll_create1(EPOLL_CLOEXEC)) {}
  ~Streams() {
    for (auto& s : streams_)
      close(s->fd);
    close(epoll_);
  }

  Stream& Open(std::uint16_t port, const std::string& path) {
    auto s = std::make_unique<Stream>();
    s->fd = Connect(port);
    SendAll(s->fd, fmt::format("GET {} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path));
    fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) | O_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = s.get();
    epoll_ctl(epoll_, EPOLL_CTL_ADD, s->fd, &ev);
    streams_.push_back(std::move(s));
    return *streams_.back();
  }

  void CloseAll() {
    for (auto& s : streams_)
      close(s->fd);
    streams_.clear();
  }

  // Reads what is ready, waiting at most `timeout_ms` for something to be.
  void Pump(int timeout_ms) {
    epoll_event events[256];
    const int n = epoll_wait(epoll_, events, 256, timeout_ms);
    for (int i = 0; i < n; ++i) {
      Stream& s = *static_cast<Stream*>(events[i].data.ptr);
      char buf[65536];
      for (;;) {
        const ssize_t got = recv(s.fd, buf, sizeof buf, 0);
        if (got > 0) {
          s.raw.append(buf, static_cast<std::size_t>(got));
          continue;
        }
        if (got == 0) {
          s.closed = true;
          epoll_ctl(epoll_, EPOLL_CTL_DEL, s.fd, nullptr);
        }
        break;
      }
      s.Decode();
    }
  }

  // Pumps until `done` holds; dies after `limit`.
  template <class F>
  void Until(F done, std::chrono::seconds limit = std::chrono::seconds(60)) {
    const auto deadline = Clock::now() + limit;
    while (!done()) {
      if (Clock::now() > deadline) {
        std::size_t heads = 0;
        for (auto& s : streams_)
          heads += s->head_done ? 1 : 0;
        std::fprintf(stderr, "%zu of %zu streams have their head\n", heads, streams_.size());
        for (auto& s : streams_) {
          std::fprintf(
              stderr, "stream: head %d frames %llu turns %llu closed %d raw [%s] sse [%s]\n",
              s->head_done, static_cast<unsigned long long>(s->frames),
              static_cast<unsigned long long>(s->turns), s->closed, s->raw.c_str(), s->sse.c_str());
          break;
        }
        Die("timed out waiting for the event streams");
      }
      Pump(100);
    }
  }

  std::vector<std::unique_ptr<Stream>>& all() { return streams_; }

 private:
  int epoll_;
  std::vector<std::unique_ptr<Stream>> streams_;
};

// A POST /v1/compact body: a Chat Completions conversation of about `tokens` tokens (at the
// estimating counter's four bytes a token) of coding-agent turns, compacted with the model
// "long" and the offline compactor, not stored.
std::string HeldConversationBody(std::size_t tokens) {
  std::string body = R"({"format":"openai","options":{"model":"long"},"messages":[)";
  body += R"({"role":"system","content":"You are a coding agent working in a C++ repository."})";
  const std::string filler =
      "The retry loop in src/net/client.cc now honours Retry-After and caps the delay at 30 s; "
      "the fake server in tests/net/fake_server.cc closes the socket after a 503, so the client "
      "sees a transport error instead of the status. ";
  for (std::size_t turn = 0; body.size() < tokens * 4; ++turn) {
    body += fmt::format(
        R"(,{{"role":"user","content":"Step {}: look at the failing test and fix it."}})", turn);
    std::string answer = fmt::format("Step {} done. ", turn);
    for (int i = 0; i < 12; ++i)
      answer += filler;
    body += R"(,{"role":"assistant","content":)";
    AppendJsonString(body, answer);
    body += "}";
  }
  body += "]}";
  return body;
}

// ---- figures ----

struct Percentiles {
  double p50_us = 0;
  double p99_us = 0;
  double max_us = 0;
};

Percentiles Of(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  const auto at = [&](double q) {
    return us[std::min(us.size() - 1,
                       static_cast<std::size_t>(q * static_cast<double>(us.size())))];
  };
  return {at(0.50), at(0.99), us.back()};
}

struct SessionRef {
  std::string session;
  std::string loop;
  std::string path() const { return "/v1/sessions/" + session + "/loops/" + loop; }
};

// In process: a session of a SessionTable and a subscription to all of its events.
struct LocalSession {
  std::shared_ptr<serve::ServedSession> served;
  Uuid loop;
  std::optional<Subscription> sub;
};

// Waits on `sub` for a TurnCompleted (want_reply empty) or the reply to `want_reply`.
double AwaitLocal(Subscription& sub, const std::optional<Uuid>& want_reply) {
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  for (;;) {
    auto d = sub.Next(deadline);
    if (!d.ok())
      Die("an in-process subscription ended: " + std::to_string(static_cast<int>(d.error().kind)));
    const std::string_view name = EventTypeName(*d->event);
    if (!want_reply && name == "TurnCompleted")
      return 0;
    if (want_reply && HeaderOf(*d->event).cause.command_id == *want_reply) {
      if (name == "CompactWaiterResolved")
        return 1;
      if (name == "CompactWaiterRejected")
        return -1;
    }
  }
}

const char* Verdict(bool met) {
  return met ? "met" : "MISSED";
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t sessions = 1000;
  std::size_t subscribers = 1000;
  std::size_t fanout_inputs = 40;
  std::size_t latency_sessions = 200;
  std::size_t rounds = 3;
  std::size_t threads = 4;
  std::size_t conversation_tokens = 150'000;
  std::size_t conversation_rounds = 10;
  // How long an idle blocking worker of the sessions' host waits before it ends: the server's
  // default unless given.
  std::size_t blocking_idle_ms = static_cast<std::size_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(serve::ServeOptions{}.blocking_idle)
          .count());
  std::filesystem::path root;
  const std::pair<const char*, std::size_t*> counts[] = {
      {"--sessions", &sessions},
      {"--subscribers", &subscribers},
      {"--fanout-inputs", &fanout_inputs},
      {"--latency-sessions", &latency_sessions},
      {"--rounds", &rounds},
      {"--threads", &threads},
      {"--blocking-idle-ms", &blocking_idle_ms},
      {"--conversation-tokens", &conversation_tokens},
      {"--conversation-rounds", &conversation_rounds}};
  bool memory_journal = false;
  for (int i = 1; i < argc; ++i) {
    if (i + 1 >= argc && std::strcmp(argv[i], "--memory-journal") != 0)
      Die(fmt::format("{} needs a value", argv[i]));
    if (std::strcmp(argv[i], "--memory-journal") == 0) {
      memory_journal = true;
      continue;
    }
    if (std::strcmp(argv[i], "--dir") == 0) {
      root = argv[++i];
      continue;
    }
    auto count = std::find_if(std::begin(counts), std::end(counts),
                              [&](const auto& c) { return std::strcmp(argv[i], c.first) == 0; });
    if (count == std::end(counts))
      Die(fmt::format("unknown flag {}", argv[i]));
    *count->second = static_cast<std::size_t>(std::max(1, std::atoi(argv[++i])));
  }
  latency_sessions = std::min(latency_sessions, sessions);
  if (root.empty()) {
    char tmpl[] = "/tmp/serve_bench.XXXXXX";
    if (mkdtemp(tmpl) == nullptr)
      Die("mkdtemp failed");
    root = tmpl;
  }
  // Every subscriber is two descriptors here: the client's socket and the server's.
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  setrlimit(RLIMIT_NOFILE, &files);
  if (files.rlim_cur < 2 * subscribers + 256)
    Die(fmt::format("RLIMIT_NOFILE {} is too low for {} subscribers", files.rlim_cur, subscribers));

  std::unique_ptr<Journal> journal;
  if (memory_journal) {
    journal = NewMemoryJournal();
  } else {
    auto opened = SqliteJournal::Open(root / "journal");
    if (!opened)
      Die(opened.error().Describe());
    journal = std::move(*opened);
  }
  SystemEnv env;

  const std::size_t threads_before = Threads();
  serve::ServeOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.journal = journal.get();
  options.env = &env;
  options.models = Models();
  options.threads = threads;
  options.max_connections = subscribers + 64;
  options.max_sessions = sessions + 64;
  options.blocking_idle = std::chrono::milliseconds(blocking_idle_ms);
  options.max_body_bytes = 16u * 1024 * 1024;  // phase 4's conversation
  auto started = serve::Server::Start(options);
  if (!started)
    Die(started.error().Message());
  std::unique_ptr<serve::Server> server = std::move(*started);
  const std::uint16_t port = server->port();
  const std::size_t server_threads_idle = Threads() - threads_before;
  std::printf(
      "serve_bench: port %u, %u hardware threads, %zu HTTP threads, blocking workers retire "
      "after %zu ms idle, %s journal in %s\n",
      port, std::thread::hardware_concurrency(), threads, blocking_idle_ms,
      memory_journal ? "memory" : "SQLite", memory_journal ? "(no directory)" : root.c_str());
  std::fflush(stdout);

  Client client(port);
  Streams streams;

  // ---- 1. memory per idle loaded session ----
  std::fprintf(stderr, "serve_bench: %s\n", "phase 1: sessions");
  // Warm-up: one session through every path, so first-use allocations are not counted.
  std::vector<SessionRef> refs;
  const auto create = [&] {
    const Reply created = client.Call("POST", "/v1/sessions", kCreateBody);
    SessionRef ref;
    ref.session = Member(created, "session_id", 201);
    ref.loop = Member(created, "loops", 201);
    return ref;
  };
  const auto input = [&](const SessionRef& ref) {
    Member(client.Call("POST", ref.path() + "/input", R"({"text":"Run the tests."})"), "command_id",
           202);
  };
  // A stream's head is sent once its subscription exists: only then is an event certain to reach
  // it.
  const auto wait_heads = [&](const std::vector<Stream*>& on) {
    streams.Until(
        [&] { return std::all_of(on.begin(), on.end(), [](Stream* s) { return s->head_done; }); });
  };
  const auto wait_turns = [&](const std::vector<Stream*>& on, std::uint64_t turns) {
    streams.Until([&] {
      return std::all_of(on.begin(), on.end(), [&](Stream* s) { return s->turns >= turns; });
    });
  };
  {
    const SessionRef warm = create();
    Stream& s = streams.Open(port, "/v1/sessions/" + warm.session + "/events");
    wait_heads({&s});
    input(warm);
    wait_turns({&s}, 1);
    streams.CloseAll();
  }
  // Each session answers one turn, waited for by asking for the session until its loop is idle
  // with the two messages: no stream is opened, so that only the sessions remain.
  const Memory sessions_before;
  const auto t_sessions = Clock::now();
  for (std::size_t i = 0; i < sessions; ++i) {
    refs.push_back(create());
    input(refs.back());
  }
  for (const SessionRef& ref : refs) {
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    for (;;) {
      const Reply state = client.Call("GET", "/v1/sessions/" + ref.session);
      if (state.body.find(R"("status":"idle","history_messages":2,)") != std::string::npos)
        break;
      if (Clock::now() > deadline)
        Die("a session's turn did not end: " + state.body);
    }
  }
  const double sessions_s = std::chrono::duration<double>(Clock::now() - t_sessions).count();
  const Memory sessions_after;
  const PerItem per_session = Per(sessions_before, sessions_after, sessions);

  // ---- 2. SSE subscribers: threads, memory, fan-out ----
  std::fprintf(stderr, "serve_bench: %s\n", "phase 2: subscribers");
  const SessionRef& hot = refs[0];
  // The sessions' blocking pool started a worker for every model call that ran at once in
  // phase 1; each ends once idle for blocking_idle_ms. Waited for by watching the count fall to
  // what the server had at start (with a deadline, in case some thread never ends).
  const std::size_t threads_after_turns = Threads() - threads_before;
  const auto t_retire = Clock::now();
  const auto retire_deadline =
      t_retire + std::chrono::milliseconds(blocking_idle_ms) + std::chrono::seconds(10);
  while (Threads() - threads_before > server_threads_idle && Clock::now() < retire_deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const double retire_s = std::chrono::duration<double>(Clock::now() - t_retire).count();
  const std::size_t threads_without_subs = Threads() - threads_before;
  const Memory streams_before;
  std::vector<Stream*> subs;
  for (std::size_t i = 0; i < subscribers; ++i)
    subs.push_back(&streams.Open(port, "/v1/sessions/" + hot.session + "/events"));
  wait_heads(subs);
  // Every stream has its head: the server holds the subscription and the suspended connection.
  client.Call("GET", "/v1/sessions/" + hot.session);
  const Memory streams_after;
  const PerItem per_stream = Per(streams_before, streams_after, subscribers);
  const std::size_t threads_with_subs = Threads() - threads_before;
  std::size_t peak_server_threads = threads_with_subs;

  const auto t_fanout = Clock::now();
  std::fprintf(stderr, "serve_bench: %s\n", "phase 2: fan-out");
  for (std::size_t i = 0; i < fanout_inputs; ++i) {
    input(hot);
    streams.Pump(0);
    peak_server_threads = std::max(peak_server_threads, Threads() - threads_before);
  }
  streams.Until([&] {
    peak_server_threads = std::max(peak_server_threads, Threads() - threads_before);
    return std::all_of(subs.begin(), subs.end(), [&](Stream* s) {
      return s->turns >= fanout_inputs || s->lagged > 0 || s->closed;
    });
  });
  const double fanout_s = std::chrono::duration<double>(Clock::now() - t_fanout).count();
  std::uint64_t deliveries = 0;
  std::size_t lagged = 0;
  for (Stream* s : subs) {
    deliveries += s->frames;
    lagged += s->lagged > 0 || s->closed ? 1 : 0;
  }
  const double events_per_subscriber =
      static_cast<double>(deliveries) / static_cast<double>(subs.size());
  streams.CloseAll();
  subs.clear();

  // ---- 3. compaction latency, over HTTP and in process ----
  std::fprintf(stderr, "serve_bench: %s\n", "phase 3: latency");
  serve::CommandBook local_book(1024);
  serve::SessionTableOptions table_options;
  table_options.journal = journal.get();
  table_options.env = &env;
  const auto local_models = Models();
  table_options.models = &local_models;
  table_options.book = &local_book;
  table_options.max_sessions = latency_sessions + 1;
  table_options.owner = Uuid::V7();
  // Required by the table (a null one crashed the first Create).
  serve::ServeMetrics local_metrics;
  table_options.metrics = &local_metrics;
  serve::SessionTable local_table(table_options);
  auto request = serve::DecodeCreateSession(kCreateBody);
  if (!request)
    Die("the create request does not decode");
  std::vector<LocalSession> locals(latency_sessions);
  for (LocalSession& l : locals) {
    auto made = local_table.Create(*request);
    if (!made)
      Die(made.error().detail);
    l.served = *made;
    l.loop = l.served->loops[0];
    l.sub.emplace(l.served->session->Subscribe());
  }
  std::vector<Stream*> latency_streams;
  for (std::size_t i = 0; i < latency_sessions; ++i)
    latency_streams.push_back(&streams.Open(port, "/v1/sessions/" + refs[i].session + "/events"));
  wait_heads(latency_streams);

  std::vector<double> http_us;
  std::vector<double> local_us;
  std::size_t http_rejected = 0;
  std::size_t local_rejected = 0;
  // In process: one more turn each (all at once), then one compaction at a time.
  const auto local_round = [&](std::size_t round) {
    for (LocalSession& l : locals) {
      if (!l.served->session->SubmitInputToLoop(l.loop, UserMessage{{TextBlock{"Run the tests."}}}))
        Die("an in-process input was refused");
    }
    for (LocalSession& l : locals)
      AwaitLocal(*l.sub, std::nullopt);
    // The first round's loops hold one segment: give them a second.
    if (round == 0) {
      for (LocalSession& l : locals) {
        if (!l.served->session->SubmitInputToLoop(l.loop, UserMessage{{TextBlock{"Again."}}}))
          Die("an in-process input was refused");
        AwaitLocal(*l.sub, std::nullopt);
      }
    }
    for (LocalSession& l : locals) {
      const auto t0 = Clock::now();
      auto id = l.served->session->CompactToLoop(l.loop);
      if (!id)
        Die("an in-process compaction was refused: " + id.error().Message());
      const double outcome = AwaitLocal(*l.sub, *id);
      local_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      local_rejected += outcome < 0 ? 1 : 0;
    }
  };
  // Over HTTP: the same, each reply read off its session's stream.
  const auto http_round = [&] {
    for (std::size_t i = 0; i < latency_sessions; ++i)
      input(refs[i]);
    wait_turns(latency_streams, 1);
    for (std::size_t i = 0; i < latency_sessions; ++i) {
      Stream& s = *latency_streams[i];
      s.answered.reset();
      s.awaited.clear();
      const auto t0 = Clock::now();
      const Reply accepted = client.Call("POST", refs[i].path() + "/compact");
      // The stream is read only once the 202 is in, so its frames are decoded with the id
      // known (a reply that came first is timed when decoded: never early).
      s.awaited = Member(accepted, "command_id", 202);
      streams.Until([&] { return s.answered.has_value(); });
      http_us.push_back(std::chrono::duration<double, std::micro>(*s.answered - t0).count());
      http_rejected += s.rejected ? 1 : 0;
    }
    for (Stream* s : latency_streams)
      s->turns = 0;
  };
  // Alternating which goes first, so neither always follows the other's disk writes.
  for (std::size_t round = 0; round < rounds; ++round) {
    if (round % 2 == 0) {
      local_round(round);
      http_round();
    } else {
      http_round();
      local_round(round);
    }
  }
  const Percentiles http = Of(http_us);
  const Percentiles local = Of(local_us);

  // ---- 4. a conversation the client holds, over HTTP and in process ----
  std::fprintf(stderr, "serve_bench: %s\n", "phase 4: a held conversation");
  const std::string held_body = HeldConversationBody(conversation_tokens);
  auto held = ReadOpenAiChat(held_body);
  if (!held)
    Die("the held conversation does not read: " + held.error().Describe());
  std::vector<double> held_http_us;
  std::vector<double> held_local_us;
  TokenCount held_tokens_before = 0;
  // The in-process call runs on a host of its own, as the server's run on the server's: threads
  // made once, not per call.
  SessionHost held_host;
  std::size_t held_retained = 0;
  const auto held_local = [&] {
    const serve::ServedModel model = LongWindowModel();
    CompactRequest compact;
    // The server lifts the leading system message into the system prompt: so does this.
    compact.messages.assign(held->transcript.begin() + 1, held->transcript.end());
    compact.system_prompt = "You are a coding agent working in a C++ repository.";
    compact.model = model.model;
    compact.limits = model.limits;
    compact.policy = model.policy;
    compact.counter = model.counter;
    compact.compactor_name = "offline";
    compact.env = &env;
    compact.host = &held_host;
    const auto t0 = Clock::now();
    auto compacted = CompactConversation(std::move(compact));
    held_local_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    if (!compacted)
      Die("the in-process compaction of the held conversation failed: " +
          compacted.error().message);
    held_tokens_before = compacted->report.before ? compacted->report.before->input_tokens : 0;
    held_retained = compacted->report.retained;
  };
  const auto held_http = [&] {
    const auto t0 = Clock::now();
    const Reply answer = client.Call("POST", "/v1/compact", held_body);
    held_http_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    if (answer.status != 200)
      Die(fmt::format("POST /v1/compact: {} {}", answer.status, answer.body.substr(0, 400)));
  };
  for (std::size_t round = 0; round < conversation_rounds; ++round) {
    if (round % 2 == 0) {
      held_local();
      held_http();
    } else {
      held_http();
      held_local();
    }
  }
  const Percentiles held_http_p = Of(held_http_us);
  const Percentiles held_local_p = Of(held_local_us);

  // ---- the table ----
  const double fanout_rate = static_cast<double>(deliveries) / fanout_s;
  std::printf("\n1. Memory per idle loaded session (%zu sessions, one turn each; %.1f s to make)\n",
              sessions, sessions_s);
  std::printf("   RSS growth per session          %10.0f bytes\n", per_session.rss);
  std::printf("   heap in use growth per session  %10.0f bytes   target <= 65536: %s\n",
              per_session.heap, Verdict(std::max(per_session.rss, per_session.heap) <= 65536));
  std::printf("\n2. %zu concurrent SSE subscribers on one session\n", subscribers);
  std::printf(
      "   server threads: at start %zu, after the turns %zu, %.1f s later (workers idle %zu ms "
      "retired) %zu, with the subscribers %zu, fan-out peak %zu   target <= 16: %s\n",
      server_threads_idle, threads_after_turns, retire_s, blocking_idle_ms, threads_without_subs,
      threads_with_subs, peak_server_threads, Verdict(peak_server_threads <= 16));
  std::printf("   RSS growth per idle connection  %10.0f bytes\n", per_stream.rss);
  std::printf("   heap in use growth per idle connection %3.0f bytes   target <= 32768: %s\n",
              per_stream.heap, Verdict(std::max(per_stream.rss, per_stream.heap) <= 32768));
  std::printf("   fan-out: %zu inputs, %.1f frames per subscriber, %zu subscribers lagged/ended\n",
              fanout_inputs, events_per_subscriber, lagged);
  // Every event reaches every subscriber as it is published: the rate is the lower of what the
  // server delivers and what the journal lets the loop publish (its fsyncs on SQLite).
  std::printf("   events published %.0f /s (frames per subscriber / time)\n",
              events_per_subscriber / fanout_s);
  std::printf("   deliveries %llu in %.3f s = %.0f /s   target >= 50000: %s\n",
              static_cast<unsigned long long>(deliveries), fanout_s, fanout_rate,
              Verdict(fanout_rate >= 50'000 && lagged == 0));
  std::printf("\n3. One compaction, %zu sessions with an open stream each, %zu rounds\n",
              latency_sessions, rounds);
  std::printf("   %-42s %6s %10s %10s %10s %9s\n", "path", "n", "p50 us", "p99 us", "max us",
              "rejected");
  std::printf("   %-42s %6zu %10.0f %10.0f %10.0f %9zu\n",
              "in process: CompactToLoop -> hub delivery", local_us.size(), local.p50_us,
              local.p99_us, local.max_us, local_rejected);
  std::printf("   %-42s %6zu %10.0f %10.0f %10.0f %9zu\n", "HTTP: POST compact -> SSE frame parsed",
              http_us.size(), http.p50_us, http.p99_us, http.max_us, http_rejected);
  std::printf("   service overhead, HTTP / in process: p50 %.2fx, p99 %.2fx (+%.0f / +%.0f us)\n",
              http.p50_us / local.p50_us, http.p99_us / local.p99_us, http.p50_us - local.p50_us,
              http.p99_us - local.p99_us);
  std::printf("   HTTP p99 target <= 20000 us: %s\n",
              Verdict(http.p99_us <= 20'000 && http_rejected == 0));
  std::printf(
      "\n4. A held conversation: %zu Chat Completions messages, %zu bytes, %llu tokens "
      "(estimated), %zu retained, %zu rounds\n",
      held->elements.size(), held_body.size(), static_cast<unsigned long long>(held_tokens_before),
      held_retained, conversation_rounds);
  std::printf("   %-42s %6s %10s %10s %10s\n", "path", "n", "p50 us", "p99 us", "max us");
  std::printf("   %-42s %6zu %10.0f %10.0f %10.0f\n", "in process: CompactConversation",
              held_local_us.size(), held_local_p.p50_us, held_local_p.p99_us, held_local_p.max_us);
  std::printf("   %-42s %6zu %10.0f %10.0f %10.0f\n", "HTTP: POST /v1/compact -> answer read",
              held_http_us.size(), held_http_p.p50_us, held_http_p.p99_us, held_http_p.max_us);
  std::printf("   HTTP / in process: p50 %.2fx   target <= 2x: %s\n",
              held_http_p.p50_us / held_local_p.p50_us,
              Verdict(held_http_p.p50_us <= 2 * held_local_p.p50_us));
  streams.CloseAll();
  server->Shutdown();
  std::error_code ignored;
  std::filesystem::remove_all(root, ignored);
  return 0;
}
