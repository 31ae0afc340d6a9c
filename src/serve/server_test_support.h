// The server in process for the tests of server_test.cc and server_http_test.cc: a fixture that
// starts a server over a memory journal with one session, the models they serve, and a gate that
// holds a thread where a test wants it.
#pragma once

#include <gtest/gtest.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>

#include "core/internal/json_dom.h"
#include "harness/journal/memory_journal.h"
#include "harness/serve/server.h"
#include "support/serve_client.h"
#include "support/served_model.h"
#include "support/test_model.h"

namespace harness::serve {

// The HTTP client of the serve tests (support/serve_client.h), by its short names.
using serve_testing::Call;
using serve_testing::OpenRawStream;
using serve_testing::ParseOrNull;
using serve_testing::ReadStream;
using serve_testing::Served;
using serve_testing::StreamEvent;

// These tests only compact an empty history, which the runtime rejects before any model or
// compactor is called.
class UncalledModel final : public ModelClient {
 public:
  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest&,
                                                     std::stop_token) override {
    ADD_FAILURE() << "the model was called";
    return Fail(InferenceError{InferenceErrorKind::kTransport, "not a model"});
  }
};

class ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { curl_global_init(CURL_GLOBAL_DEFAULT); }

  ServeOptions Options() {
    ServeOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    options.journal = journal_.get();
    options.env = env_;
    options.threads = 2;
    options.models["t"] =
        ConfiguredModel{runtime_testing::TestModel(), []() -> Result<ServedModel, std::string> {
                          return Served(std::make_shared<UncalledModel>());
                        }};
    return options;
  }

  void SetUp() override { StartWithASession(Options()); }

  // Starts server_ with `options` and creates session_ with one loop_ on it.
  void StartWithASession(ServeOptions options) {
    auto server = Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.error().Message();
    server_ = std::move(server).value();
    base_ = "http://127.0.0.1:" + std::to_string(server_->port());
    const auto created = Call("POST", base_ + "/v1/sessions", R"({"loops":[{"model":"t"}]})");
    ASSERT_EQ(created.status, 201) << created.body;
    const Json json = ParseOrNull(created.body);
    session_ = json["session_id"].get<std::string>();
    loop_ = json["loops"][0].get<std::string>();
  }

  // Restarts server_ with `options` and the model "text" (TextModel), and creates a session
  // with one loop of it (CreateTextLoop): returns the loop's URL and sets `session`.
  std::string RestartWithATextLoop(ServeOptions options, std::string& session);

  std::string Compact() {
    const auto reply =
        Call("POST", base_ + "/v1/sessions/" + session_ + "/loops/" + loop_ + "/compact");
    EXPECT_EQ(reply.status, 202) << reply.body;
    return ParseOrNull(reply.body)["command_id"].get<std::string>();
  }

  Env* env_ = nullptr;  // null: the server's own SystemEnv
  std::unique_ptr<Journal> journal_ = NewMemoryJournal();
  std::unique_ptr<Server> server_;
  std::string base_;
  std::string session_;
  std::string loop_;
};

// Where a test holds a thread: Pass says it has entered, then waits until Open (or until `stop`
// is requested).
class Gate {
 public:
  void Pass(std::stop_token stop = {}) {
    std::unique_lock lock(mu_);
    entered_ = true;
    changed_.notify_all();
    changed_.wait(lock, stop, [&] { return open_; });
  }
  void WaitEntered() {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return entered_; });
  }
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable_any changed_;
  bool entered_ = false;
  bool open_ = false;
};

// Answers every call with a line of text.
class TextModel final : public ModelClient {
 public:
  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest&,
                                                     std::stop_token) override {
    return InferenceResponse{AssistantMessage{{TextBlock{"fine"}}, {}}, StopReason::kEndTurn};
  }
};

// The text model, with room for the offline compactor's summary.
inline ConfiguredModel SummarizedTextModel() {
  return ConfiguredModel{runtime_testing::TestModel(), []() -> Result<ServedModel, std::string> {
                           ServedModel model = Served(std::make_shared<TextModel>());
                           model.policy.max_summary_tokens = 2'000;
                           return model;
                         }};
}

// Creates a session on the server at `base` whose one loop has the text model and the offline
// compactor and keeps the newest segment; returns the loop's URL ("" when refused) and sets
// `session`.
inline std::string CreateTextLoop(const std::string& base, std::string& session) {
  const auto created = Call("POST", base + "/v1/sessions",
                            R"({"loops":[{"model":"text","compactor":"offline",)"
                            R"("policy":{"keep_recent_segments":1}}]})");
  EXPECT_EQ(created.status, 201) << created.body;
  if (created.status != 201)
    return "";
  session = ParseOrNull(created.body)["session_id"].get<std::string>();
  return base + "/v1/sessions/" + session + "/loops/" +
         ParseOrNull(created.body)["loops"][0].get<std::string>();
}

inline std::string ServerTest::RestartWithATextLoop(ServeOptions options, std::string& session) {
  options.models["text"] = SummarizedTextModel();
  server_->Shutdown();
  StartWithASession(std::move(options));
  return CreateTextLoop(base_, session);
}

// GET /v1/sessions/{session}/commands/{command} on the server at `base`.
inline std::string SessionCommand(const std::string& base, const std::string& session,
                                  const std::string& command) {
  return base + "/v1/sessions/" + session + "/commands/" + command;
}

}  // namespace harness::serve
