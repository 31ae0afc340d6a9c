// LlamaServer: a real llama-server on 127.0.0.1 for the end-to-end tests, serving the tiny
// random-weight model (docs/local-model.md).
//
// Contract:
// - Start() finds the server and the model in $HARNESS_LLAMA_DIR (written by
//   scripts/llama-server; CMake hands the directory to every test), spawns
//   `llama-server -m tiny-gpt2.gguf --host 127.0.0.1 --port P ... --api-key KEY` without a shell,
//   and returns once GET /health answers 200, or fails with a message that says why: the
//   variable is unset, a file is missing, the process exited (with its log), or the readiness
//   deadline passed (with its log). A missing server is a failure, never a skip: CI builds it.
// - P is a free loopback port chosen by binding port 0; if another process takes it before the
//   server binds, Start() retries with a new port a few times.
// - KEY is fresh random hex per start; it reaches the server as an argument, never a log line.
// - The destructor stops the server: SIGTERM, up to kStopGrace for it to exit, then SIGKILL,
//   and always reaps it. Its combined stdout and stderr go to a temporary file, removed then.
//
// Thread safety: a LlamaServer is used from one thread (the test's).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "harness/core/result.h"

namespace harness::e2e {

struct LlamaServerOptions {
  int context = 2048;  // -c: total KV cache, shared by the slots
  int parallel = 2;    // -np: concurrent requests (slots)
  std::chrono::seconds ready_deadline{60};
};

class LlamaServer {
 public:
  static constexpr std::chrono::seconds kStopGrace{10};

  static Result<std::unique_ptr<LlamaServer>, std::string> Start(
      const LlamaServerOptions& options = {});

  ~LlamaServer();
  LlamaServer(const LlamaServer&) = delete;
  LlamaServer& operator=(const LlamaServer&) = delete;

  // "http://127.0.0.1:P", no trailing slash.
  const std::string& base_url() const { return base_url_; }
  const std::string& api_key() const { return api_key_; }
  int port() const { return port_; }
  // Everything the server printed so far, for a failing test's message.
  std::string log() const;

 private:
  LlamaServer(pid_t pid, int port, std::string api_key, std::filesystem::path log_path);

  pid_t pid_;
  int port_;
  std::string base_url_;
  std::string api_key_;
  std::filesystem::path log_path_;
};

}  // namespace harness::e2e
