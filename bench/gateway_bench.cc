// The gateway's overhead: `POST /v1/chat/completions` forwarded through `harness serve
// --upstream` (no compaction: the history is below --gateway-compact-at, so the gateway reads
// the request, hashes its prefix and counts it, then forwards it unchanged) beside the same
// request sent to the same upstream directly, side by side in one run: p50, p95 and p99 of
// each and the differences (target: p50 difference <= 2 ms).
//
// The upstream is the bench's own: a trivial HTTP/1.1 server on 127.0.0.1 in this process that
// answers every request at once with a fixed chat completion (keep-alive, Content-Length), so
// that no model's time drowns the figure. The server runs in this process too
// (serve::Server::Start on 127.0.0.1:0, the memory journal). Both paths are timed with the same
// client, the project's CurlHttpClient (one request at a time, connections reused), from the
// request sent to the answer read; the rounds alternate which path goes first, so a change of
// the machine's load hits both alike.
//
//   gateway_bench [--requests N] [--messages M] [--warmup W]
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "harness/http/curl_client.h"
#include "harness/inference/counter.h"
#include "harness/journal/memory_journal.h"
#include "harness/serve/server.h"
#include "support/chat_conversation.h"

namespace {

using namespace harness;
using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "gateway_bench: %s\n", what.c_str());
  std::exit(1);
}

constexpr std::string_view kCompletion =
    R"({"id":"chatcmpl-bench","object":"chat.completion","created":0,"model":"bench",)"
    R"("choices":[{"index":0,"message":{"role":"assistant","content":"OK."},)"
    R"("finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,)"
    R"("total_tokens":12}})";

// A trivial upstream: every request on every connection is answered with kCompletion.
class FixedUpstream {
 public:
  FixedUpstream() {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        listen(listener_, 64) != 0)
      Die(fmt::format("the upstream cannot listen: {}", std::strerror(errno)));
    socklen_t length = sizeof address;
    getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] { Accept(); });
  }

  ~FixedUpstream() {
    stopping_ = true;
    shutdown(listener_, SHUT_RDWR);
    close(listener_);
    acceptor_.join();
    std::lock_guard lock(mu_);
    for (const int fd : connections_)
      shutdown(fd, SHUT_RDWR);
    for (std::thread& thread : threads_)
      thread.join();
  }

  std::uint16_t port() const { return port_; }
  std::uint64_t requests() const { return requests_; }

 private:
  void Accept() {
    while (!stopping_) {
      const int fd = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0)
        return;
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      std::lock_guard lock(mu_);
      connections_.push_back(fd);
      threads_.emplace_back([this, fd] { Serve(fd); });
    }
  }

  void Serve(int fd) {
    const std::string reply = fmt::format(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
        kCompletion.size(), kCompletion);
    std::string in;
    char buffer[16384];
    while (true) {
      std::size_t end;
      while ((end = in.find("\r\n\r\n")) == std::string::npos) {
        const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0)
          return;
        in.append(buffer, static_cast<std::size_t>(n));
      }
      std::string head = in.substr(0, end);
      std::transform(head.begin(), head.end(), head.begin(), ::tolower);
      std::size_t length = 0;
      if (const auto at = head.find("content-length:"); at != std::string::npos)
        length = std::strtoull(head.c_str() + at + 15, nullptr, 10);
      while (in.size() < end + 4 + length) {
        const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0)
          return;
        in.append(buffer, static_cast<std::size_t>(n));
      }
      in.erase(0, end + 4 + length);
      ++requests_;
      for (std::string_view out = reply; !out.empty();) {
        const ssize_t n = send(fd, out.data(), out.size(), MSG_NOSIGNAL);
        if (n <= 0)
          return;
        out.remove_prefix(static_cast<std::size_t>(n));
      }
    }
  }

  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> requests_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<int> connections_;
  std::vector<std::thread> threads_;
};

// A chat request of `messages` messages of about 200 bytes each, as an agent sends it.
std::string ChatBody(int messages) {
  std::string out = R"({"model":"bench","messages":[{"role":"system","content":"Be brief."})";
  for (int i = 0; i < messages; ++i) {
    out.append(fmt::format(
        R"(,{{"role":"{}","content":"Message {} of the conversation: the parser in )"
        R"(src/module_{}.cc returns an error for an empty line and the caller skips it."}})",
        i % 2 == 0 ? "user" : "assistant", i, i));
  }
  out.append(R"(],"max_tokens":16})");
  return out;
}

double Percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const auto at = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[at];
}

double TimeOne(HttpClient& client, const HttpRequest& request) {
  const auto start = Clock::now();
  auto answer = client.Fetch(request, {});
  const auto took = Clock::now() - start;
  if (!answer.ok())
    Die("a request failed: " + answer.error().Describe());
  if (answer->status != 200 || answer->body != kCompletion)
    Die(fmt::format("unexpected answer {}: {}", answer->status, answer->body));
  return std::chrono::duration<double, std::micro>(took).count();
}

int Flag(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0)
      return std::atoi(argv[i + 1]);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int requests = Flag(argc, argv, "--requests", 2'000);
  const int messages = Flag(argc, argv, "--messages", 20);
  const int warmup = Flag(argc, argv, "--warmup", 100);

  FixedUpstream upstream;
  auto journal = NewMemoryJournal();
  serve::ServeOptions options;
  options.port = 0;
  options.journal = journal.get();
  options.threads = 4;
  options.upstream = fmt::format("http://127.0.0.1:{}/v1", upstream.port());
  // A threshold far above the request: the gateway reads, hashes and counts every request and
  // forwards it unchanged.
  options.gateway_compact_at = 1'000'000;
  options.models.emplace("offline",
                         serve::ConfiguredModel{ModelKey{"harness", "offline"}, [] {
                                                  return Result<serve::ServedModel, std::string>(
                                                      serve_testing::OfflineGatewayModel());
                                                }});
  auto server = serve::Server::Start(std::move(options));
  if (!server.ok())
    Die("the server does not start: " + server.error().Message());
  auto client = CurlHttpClient::Create();
  if (!client.ok())
    Die("no HTTP client: " + client.error().Describe());

  const std::string body = ChatBody(messages);
  HttpRequest direct;
  direct.method = "POST";
  direct.url = fmt::format("http://127.0.0.1:{}/v1/chat/completions", upstream.port());
  direct.headers = {{"Content-Type", "application/json"},
                    {"Authorization", "Bearer sk-bench-not-a-key"}};
  direct.secrets = {"sk-bench-not-a-key"};
  direct.body = body;
  HttpRequest gateway = direct;
  gateway.url = fmt::format("http://127.0.0.1:{}/v1/chat/completions", (*server)->port());

  for (int i = 0; i < warmup; ++i) {
    TimeOne(**client, direct);
    TimeOne(**client, gateway);
  }
  std::vector<double> direct_us;
  std::vector<double> gateway_us;
  for (int i = 0; i < requests; ++i) {
    if (i % 2 == 0) {
      direct_us.push_back(TimeOne(**client, direct));
      gateway_us.push_back(TimeOne(**client, gateway));
    } else {
      gateway_us.push_back(TimeOne(**client, gateway));
      direct_us.push_back(TimeOne(**client, direct));
    }
  }
  const std::uint64_t expected = 2 * static_cast<std::uint64_t>(requests + warmup);
  if (upstream.requests() != expected)
    Die(fmt::format("the upstream saw {} requests, not {}", upstream.requests(), expected));

  std::printf("gateway_bench: %d requests each way, %zu-byte body (%d messages)\n", requests,
              body.size(), messages + 1);
  std::printf("%-28s %10s %10s %10s\n", "", "p50 us", "p95 us", "p99 us");
  const double d50 = Percentile(direct_us, 0.50), g50 = Percentile(gateway_us, 0.50);
  const double d95 = Percentile(direct_us, 0.95), g95 = Percentile(gateway_us, 0.95);
  const double d99 = Percentile(direct_us, 0.99), g99 = Percentile(gateway_us, 0.99);
  std::printf("%-28s %10.0f %10.0f %10.0f\n", "upstream directly", d50, d95, d99);
  std::printf("%-28s %10.0f %10.0f %10.0f\n", "through harness (gateway)", g50, g95, g99);
  std::printf("%-28s %+10.0f %+10.0f %+10.0f\n", "difference", g50 - d50, g95 - d95, g99 - d99);
  std::printf("target: p50 difference <= 2000 us: %s\n", g50 - d50 <= 2000 ? "met" : "MISSED");
  (*server)->Shutdown();
  return 0;
}
