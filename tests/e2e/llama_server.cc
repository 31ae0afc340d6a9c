#include "llama_server.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

extern char** environ;

namespace harness::e2e {
namespace {

using Clock = std::chrono::steady_clock;

// Polling an external process is the only way to learn it is ready; this is the interval.
constexpr std::chrono::milliseconds kPollInterval{50};
// A port taken between FreePort() and the server's bind is retried this many times in all.
constexpr int kBindAttempts = 5;
// llama-server's message when its listening socket cannot be bound (tools/server/server-http.cpp).
constexpr std::string_view kBindFailure = "couldn't bind HTTP server socket";
// The log is printed in failure messages; its end says why the server stopped.
constexpr size_t kLogTail = 8192;

// A loopback port nobody listens on right now: the kernel's pick for port 0.
Result<int, std::string> FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return Fail(std::string("socket() failed"));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  close(fd);
  if (!ok)
    return Fail(std::string("cannot bind a loopback port"));
  return static_cast<int>(ntohs(address.sin_port));
}

std::string RandomHex(size_t bytes) {
  static constexpr std::string_view kDigits = "0123456789abcdef";
  std::random_device device;
  std::string hex;
  for (size_t i = 0; i < bytes; ++i) {
    const unsigned byte = device() & 0xffU;
    hex.push_back(kDigits[byte >> 4]);
    hex.push_back(kDigits[byte & 0xfU]);
  }
  return hex;
}

std::string ReadTail(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream all;
  all << in.rdbuf();
  std::string text = all.str();
  if (text.size() > kLogTail)
    text.erase(0, text.size() - kLogTail);
  return text;
}

size_t Discard(char*, size_t size, size_t count, void*) {
  return size * count;
}

// The HTTP status of GET url, or 0 when nothing answered within a second.
long HealthStatus(const std::string& url) {
  CURL* curl = curl_easy_init();
  if (curl == nullptr)
    return 0;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 1000L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Discard);
  long status = 0;
  if (curl_easy_perform(curl) == CURLE_OK)
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(curl);
  return status;
}

// SIGTERM, a grace period, SIGKILL; the child is reaped on every path.
void Stop(pid_t pid) {
  kill(pid, SIGTERM);
  const auto deadline = Clock::now() + LlamaServer::kStopGrace;
  while (Clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid)
      return;
    std::this_thread::sleep_for(kPollInterval);
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
}

// Spawns the server with its stdout and stderr on `log_fd`. The key travels in the
// environment (LLAMA_API_KEY, which llama-server reads like --api-key) so that it is not on a
// command line every process on the machine can read.
Result<pid_t, std::string> Spawn(const std::filesystem::path& server,
                                 const std::filesystem::path& model, int port,
                                 const std::string& api_key, const LlamaServerOptions& options,
                                 int log_fd) {
  std::vector<std::string> args = {
      server.string(), "-m", model.string(), "--host", "127.0.0.1", "--port", std::to_string(port),
      "-c", std::to_string(options.context), "-np", std::to_string(options.parallel),
      // One thread: the model is tiny and the machine is shared
      // with parallel tests.
      "-t", "1", "--no-webui", "--chat-template", "chatml"};
  // The caller's LLAMA_* variables (LLAMA_ARG_* set any option) would change the server under
  // test, so none is passed on.
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).substr(0, 6) != "LLAMA_")
      env.emplace_back(*e);
  }
  std::string key_variable = "LLAMA_API_KEY=";
  key_variable.append(api_key);
  env.push_back(std::move(key_variable));
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& e : env)
    envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, log_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, log_fd, STDERR_FILENO);
  pid_t pid = -1;
  const int error = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) {
    std::string message = "cannot spawn ";
    message.append(server.string()).append(": ").append(std::strerror(error));
    return Fail(std::move(message));
  }
  return pid;
}

}  // namespace

Result<std::unique_ptr<LlamaServer>, std::string> LlamaServer::Start(
    const LlamaServerOptions& options) {
  const char* dir_variable = std::getenv("HARNESS_LLAMA_DIR");
  if (dir_variable == nullptr || *dir_variable == '\0') {
    return Fail(std::string(
        "HARNESS_LLAMA_DIR is not set: run scripts/llama-server (scripts/setup does) and "
        "configure the build again, or set it to the directory that script prints"));
  }
  const std::filesystem::path dir = dir_variable;
  const std::filesystem::path server = dir / "llama-server";
  const std::filesystem::path model = dir / "tiny-gpt2.gguf";
  for (const auto& needed : {server, model}) {
    if (!std::filesystem::exists(needed)) {
      std::string message = needed.string();
      message.append(" does not exist: run scripts/llama-server");
      return Fail(std::move(message));
    }
  }

  const std::string api_key = RandomHex(16);
  for (int attempt = 1;; ++attempt) {
    HARNESS_TRY(const int port, FreePort());
    std::string log_pattern =
        (std::filesystem::temp_directory_path() / "harness-llama-server-XXXXXX").string();
    const int log_fd = mkostemp(log_pattern.data(), O_CLOEXEC);
    if (log_fd < 0)
      return Fail(std::string("cannot create the server's log file"));
    const std::filesystem::path log_path = log_pattern;
    auto spawned = Spawn(server, model, port, api_key, options, log_fd);
    close(log_fd);
    if (!spawned.ok()) {
      std::filesystem::remove(log_path);
      return Fail(std::move(spawned).error());
    }
    // From here the object owns the process and the log: every early return stops and reaps.
    std::unique_ptr<LlamaServer> running(new LlamaServer(*spawned, port, api_key, log_path));
    std::string health = running->base_url();
    health.append("/health");
    const auto deadline = Clock::now() + options.ready_deadline;
    bool exited = false;
    while (Clock::now() < deadline) {
      int status = 0;
      if (waitpid(running->pid_, &status, WNOHANG) == running->pid_) {
        running->pid_ = -1;
        exited = true;
        break;
      }
      if (HealthStatus(health) == 200)
        return running;
      std::this_thread::sleep_for(kPollInterval);
    }
    const std::string log = running->log();
    if (exited && log.find(kBindFailure) != std::string::npos && attempt < kBindAttempts)
      continue;  // another process took the port first
    std::string message = "llama-server ";
    message.append(exited ? "exited before it was ready" : "was not ready in time")
        .append(" (port ")
        .append(std::to_string(port))
        .append("); its log:\n")
        .append(log);
    return Fail(std::move(message));
  }
}

LlamaServer::LlamaServer(pid_t pid, int port, std::string api_key, std::filesystem::path log_path)
    : pid_(pid), port_(port), api_key_(std::move(api_key)), log_path_(std::move(log_path)) {
  base_url_ = "http://127.0.0.1:";
  base_url_.append(std::to_string(port_));
}

LlamaServer::~LlamaServer() {
  if (pid_ > 0)
    Stop(pid_);
  std::error_code ignored;
  std::filesystem::remove(log_path_, ignored);
}

std::string LlamaServer::log() const {
  return ReadTail(log_path_);
}

}  // namespace harness::e2e
