// The server in process, over a memory journal: event streams and command waits that suspend
// their connection while other threads publish (run under ThreadSanitizer too), and a shutdown
// that ends the streams still open.
#include "harness/serve/server.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "harness/command/codec.h"
#include "harness/inference/counter.h"
#include "harness/journal/forwarding_journal.h"
#include "harness/journal/lease.h"
#include "harness/journal/memory_journal.h"
#include "serve/openapi.h"
#include "serve/sessions.h"
#include "support/env.h"
#include "support/serve_client.h"
#include "support/served_model.h"
#include "support/test_model.h"
#include "support/threads.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HARNESS_SANITIZED_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HARNESS_SANITIZED_HEAP 1
#endif
#endif
#ifdef HARNESS_SANITIZED_HEAP
// The sanitizer runtimes' count of the heap in use (sanitizer/allocator_interface.h, which g++
// 12 does not ship).
extern "C" std::size_t __sanitizer_get_current_allocated_bytes();
#endif

namespace harness::serve {
namespace {

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

TEST_F(ServerTest, AStreamAndCommandWaitsFollowWhatOtherThreadsPublish) {
  constexpr std::size_t kCompactions = 20;
  std::vector<StreamEvent> streamed;
  // From the journal's start, so that replies published before the stream opened are not
  // missed; the rest arrive live while the stream's connection sleeps in between.
  std::thread reader([&] {
    streamed =
        ReadStream(base_ + "/v1/sessions/" + session_ + "/events?from=1&kind=CompactWaiterRejected",
                   [&](const auto& events) { return events.size() == kCompactions; });
  });
  std::thread waiter([&] {
    for (std::size_t i = 0; i < kCompactions; ++i) {
      const std::string id = Compact();
      const auto answered = Call("GET", base_ + "/v1/commands/" + id + "?wait_ms=10000");
      EXPECT_EQ(answered.status, 200) << answered.body;
      EXPECT_EQ(ParseOrNull(answered.body)["reply"]["type"], "CompactWaiterRejected");
    }
  });
  waiter.join();
  reader.join();
  ASSERT_EQ(streamed.size(), kCompactions);
  for (std::size_t i = 1; i < streamed.size(); ++i)
    EXPECT_GT(streamed[i].seq, streamed[i - 1].seq);
}

TEST_F(ServerTest, AnUnknownCommandIsNotFoundAndAnAcceptedOneIsAnswered) {
  const auto unknown = Call("GET", base_ + "/v1/commands/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b");
  EXPECT_EQ(unknown.status, 404);
  const std::string id = Compact();
  const auto answered = Call("GET", base_ + "/v1/commands/" + id + "?wait_ms=10000");
  EXPECT_EQ(answered.status, 200);
}

// A conversation held elsewhere until now starts a loop's history, which a compaction takes
// like any other; a bad message is refused with its path and creates nothing.
TEST_F(ServerTest, ASessionStartsFromAnInitialHistory) {
  const std::string history =
      R"([{"role":"user","blocks":[{"type":"text","text":"Fix the build."}]},)"
      R"({"role":"assistant","blocks":[{"type":"text","text":"The linker misses -lpq."}],"usage":null},)"
      R"({"role":"user","blocks":[{"type":"text","text":"Add it."}]},)"
      R"({"role":"assistant","blocks":[{"type":"text","text":"Added; the build passes."}],"usage":null}])";
  const auto created = Call("POST", base_ + "/v1/sessions",
                            R"({"loops":[{"model":"t","history":)" + history + "}]}");
  ASSERT_EQ(created.status, 201) << created.body;
  const Json json = ParseOrNull(created.body);
  const std::string loop = base_ + "/v1/sessions/" + json["session_id"].get<std::string>() +
                           "/loops/" + json["loops"][0].get<std::string>();
  const Json got = ParseOrNull(Call("GET", loop + "/history").body);
  ASSERT_EQ(got["messages"].size(), 4u) << got;
  EXPECT_EQ(got["messages"][3]["blocks"][0]["text"], "Added; the build passes.");
  const auto compact = Call("POST", loop + "/compact");
  ASSERT_EQ(compact.status, 202) << compact.body;
  const auto reply = Call("GET", base_ + "/v1/commands/" +
                                     ParseOrNull(compact.body)["command_id"].get<std::string>() +
                                     "?wait_ms=10000");
  EXPECT_EQ(reply.status, 200) << reply.body;

  const std::size_t sessions =
      ParseOrNull(Call("GET", base_ + "/v1/sessions").body)["sessions"].size();
  const auto bad =
      Call("POST", base_ + "/v1/sessions",
           R"({"loops":[{"model":"t","history":[{"role":"user","blocks":[{"type":"secret"}]}]}]})");
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(ParseOrNull(bad.body)["error"]["kind"], "invalid_request");
  EXPECT_EQ(ParseOrNull(bad.body)["error"]["detail"].get<std::string>().rfind(
                "$.loops[0].history[0].blocks[0]", 0),
            0u)
      << bad.body;
  EXPECT_EQ(ParseOrNull(Call("GET", base_ + "/v1/sessions").body)["sessions"].size(), sessions);
}

// A configured model without a client runs no turns: its loops compact and refuse input saying
// why, and it cannot be a loop's compactor.
TEST_F(ServerTest, AModelWithoutAClientOnlyCompacts) {
  ServeOptions options = Options();
  options.models["quiet"] =
      ConfiguredModel{ModelKey{"test", "quiet"}, []() -> Result<ServedModel, std::string> {
                        ServedModel served = Served(nullptr);
                        served.model = ModelKey{"test", "quiet"};
                        return served;
                      }};
  server_->Shutdown();
  StartWithASession(std::move(options));
  const auto created = Call("POST", base_ + "/v1/sessions", R"({"loops":[{"model":"quiet"}]})");
  ASSERT_EQ(created.status, 201) << created.body;
  const Json json = ParseOrNull(created.body);
  const std::string loop = base_ + "/v1/sessions/" + json["session_id"].get<std::string>() +
                           "/loops/" + json["loops"][0].get<std::string>();
  const auto input = Call("POST", loop + "/input", R"({"text":"hello"})");
  EXPECT_EQ(input.status, 400) << input.body;
  EXPECT_EQ(ParseOrNull(input.body)["error"]["kind"], "invalid_argument");
  EXPECT_NE(input.body.find("has no conversation model (test/quiet only compacts)"),
            std::string::npos)
      << input.body;
  EXPECT_EQ(Call("POST", loop + "/compact").status, 202);
  const auto compactor =
      Call("POST", base_ + "/v1/sessions", R"({"loops":[{"model":"t","compactor":"quiet"}]})");
  EXPECT_EQ(compactor.status, 400) << compactor.body;
  EXPECT_NE(compactor.body.find("cannot summarize"), std::string::npos) << compactor.body;
}

TEST_F(ServerTest, ShutdownEndsAnOpenStreamAfterWhatWasPublished) {
  std::vector<StreamEvent> streamed;
  std::promise<void> seen_reply;
  std::thread reader([&] {
    bool told = false;
    streamed =
        ReadStream(base_ + "/v1/sessions/" + session_ + "/events?from=1", [&](const auto& events) {
          if (!told && serve_testing::HasEvent(events, "CompactWaiterRejected")) {
            told = true;
            seen_reply.set_value();
          }
          return false;  // read until the server ends the stream
        });
  });
  // The compaction's reply on the stream shows that the stream is open.
  Compact();
  seen_reply.get_future().wait();
  server_->Shutdown();
  reader.join();
  ASSERT_FALSE(streamed.empty());
  EXPECT_EQ(streamed.back().name, "end");
  EXPECT_EQ(streamed.back().data["reason"], "hub_closed");
  EXPECT_TRUE(serve_testing::HasEvent(streamed, "CompactWaiterRejected"));
  EXPECT_EQ(Call("GET", base_ + "/v1/sessions").status, 0);  // the listener is gone
}

TEST_F(ServerTest, ASecondServerOverTheSameJournalIsRefusedTheSessionWhileTheFirstHoldsIt) {
  auto second = Server::Start(Options());
  ASSERT_TRUE(second.ok());
  const std::string other = "http://127.0.0.1:" + std::to_string((*second)->port());
  const auto refused = Call("GET", other + "/v1/sessions/" + session_);
  EXPECT_EQ(refused.status, 409) << refused.body;
  const Json error = ParseOrNull(refused.body)["error"];
  EXPECT_EQ(error["kind"], "lease_held");
  // The refusal names the holder: the first server's lease owner, not the second's. The first
  // advertises no URL, so the holder has none.
  EXPECT_EQ(error["holder"]["owner"], server_->owner().ToString()) << refused.body;
  EXPECT_FALSE(error["holder"].contains("url")) << refused.body;
  EXPECT_NE(server_->owner(), (*second)->owner());
  // Once the first server stops (and releases the lease), the second restores the session.
  server_->Shutdown();
  const auto restored = Call("GET", other + "/v1/sessions/" + session_);
  EXPECT_EQ(restored.status, 200) << restored.body;
  EXPECT_EQ(ParseOrNull(restored.body)["loops"][0]["loop_id"], loop_);
}

// A server started with an advertised URL stores it with the leases it takes, creating or
// restoring a session: another server on the journal names it in the 409, with the members the
// OpenAPI document gives the holder.
TEST_F(ServerTest, ASecondServerNamesTheAdvertisedUrlOfTheServerHoldingTheSession) {
  server_->Shutdown();
  ServeOptions first = Options();
  first.advertise_url = "http://10.0.0.7:8420";
  StartWithASession(std::move(first));
  EXPECT_EQ(server_->advertise_url(), "http://10.0.0.7:8420");
  auto second = Server::Start(Options());
  ASSERT_TRUE(second.ok());
  const std::string other = "http://127.0.0.1:" + std::to_string((*second)->port());
  const auto refused = Call("GET", other + "/v1/sessions/" + session_);
  ASSERT_EQ(refused.status, 409) << refused.body;
  const Json holder = ParseOrNull(refused.body)["error"]["holder"];
  EXPECT_EQ(holder["owner"], server_->owner().ToString()) << refused.body;
  EXPECT_EQ(holder["url"], "http://10.0.0.7:8420") << refused.body;
  EXPECT_TRUE(holder["lease_expires_at_ms"].is_number_integer()) << refused.body;
  auto doc = ParseStrictJson(OpenApiDocument(), JsonLimits{.max_bytes = 1u << 20});
  ASSERT_TRUE(doc.ok());
  const Json& schema =
      (*doc)["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["holder"];
  for (const auto& [name, value] : holder.items())
    EXPECT_TRUE(schema["properties"].contains(name)) << "the holder schema does not name " << name;
  for (const Json& name : schema["required"])
    EXPECT_TRUE(holder.contains(name.get<std::string>())) << "the holder lacks " << name;

  // A server that restores the session (the first stopped) stores its own URL with the lease.
  server_->Shutdown();
  ServeOptions third_options = Options();
  third_options.advertise_url = "https://c.example/harness";
  auto third = Server::Start(std::move(third_options));
  ASSERT_TRUE(third.ok());
  const std::string third_base = "http://127.0.0.1:" + std::to_string((*third)->port());
  ASSERT_EQ(Call("GET", third_base + "/v1/sessions/" + session_).status, 200);
  const auto again = Call("GET", other + "/v1/sessions/" + session_);
  ASSERT_EQ(again.status, 409) << again.body;
  EXPECT_EQ(ParseOrNull(again.body)["error"]["holder"]["owner"], (*third)->owner().ToString());
  EXPECT_EQ(ParseOrNull(again.body)["error"]["holder"]["url"], "https://c.example/harness");
}

// Start refuses a URL it could not advertise, without echoing it; the bounds are accepted.
TEST_F(ServerTest, StartRefusesAnAdvertisedUrlThatIsNotAnAbsoluteHttpUrl) {
  const std::string prefix = "https://h.example/";
  const std::string longest = prefix + std::string(kMaxAdvertisedUrlBytes - prefix.size(), 'a');
  for (const std::string& url :
       {longest, std::string("http://10.0.0.7:8420"), std::string("https://[::1]:8420/base")}) {
    ServeOptions options = Options();
    options.advertise_url = url;
    auto started = Server::Start(std::move(options));
    EXPECT_TRUE(started.ok()) << url.substr(0, 40) << ": " << started.error().Message();
  }
  const struct {
    std::string url, says;
  } refused[] = {
      {longest + "a", "longer than 2048 bytes"},
      {"ftp://h.example/", "must start with http:// or https://"},
      {"h.example:8420", "must start with http:// or https://"},
      {"http://", "not an absolute URL with a host"},
      {"http://h.example/?q=1", "no query"},
      {"http://h.example/#f", "or fragment"},
      {"http://user:secret@h.example/", "must not carry a user or password"},
      {"HTTP://h.example/", "must start with http:// or https://"},
      {"http://h.example/caf\xc3\xa9", "must be printable ASCII"},
  };
  for (const auto& c : refused) {
    ServeOptions options = Options();
    options.advertise_url = c.url;
    auto started = Server::Start(std::move(options));
    ASSERT_FALSE(started.ok()) << c.url;
    EXPECT_EQ(started.error().kind, ServeError::Kind::kInvalidOptions) << c.url;
    EXPECT_NE(started.error().Message().find(c.says), std::string::npos)
        << c.url << ": " << started.error().Message();
    EXPECT_EQ(started.error().Message().find("h.example"), std::string::npos) << "never echoed";
  }
}

TEST_F(ServerTest, DeleteEndsTheSessionWhoseLoopsTheJournalRecordsAsExited) {
  const std::string url = base_ + "/v1/sessions/" + session_;
  const auto interrupt = Call("POST", url + "/loops/" + loop_ + "/interrupt");
  EXPECT_EQ(interrupt.status, 200) << interrupt.body;
  EXPECT_EQ(Call("DELETE", url).status, 204);
  // Restored on demand from the journal, its loop has exited and takes no more work.
  const auto restored = Call("GET", url);
  ASSERT_EQ(restored.status, 200) << restored.body;
  EXPECT_EQ(ParseOrNull(restored.body)["loops"][0]["status"], "exited");
  const auto refused = Call("POST", url + "/loops/" + loop_ + "/compact");
  EXPECT_EQ(refused.status, 409);
  EXPECT_EQ(ParseOrNull(refused.body)["error"]["kind"], "loop_exited");
}

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

// A journal whose appends of a LoopExited pass `gate`, once armed: a loop held in its exit, as a
// slow journal holds it.
class ExitGateJournal final : public ForwardingJournal {
 public:
  using ForwardingJournal::ForwardingJournal;

  Result<std::vector<AppendedRecord>, JournalError> Append(AppendRequest request) override {
    const bool exits = std::any_of(request.records.begin(), request.records.end(),
                                   [](const NewRecord& r) { return r.type == "LoopExited"; });
    if (exits && armed.load())
      gate.Pass();
    return inner().Append(std::move(request));
  }

  std::atomic<bool> armed{false};
  Gate gate;
};

// A DELETE waits for the session's loops to exit with its connection asleep: on a server with one
// thread, a delete whose loop is held in its exit leaves the server serving, and it is answered
// 204 once the loop has exited. A server whose thread the delete held would leave the probe
// unanswered.
TEST_F(ServerTest, ADeleteWaitingForItsLoopsToExitHoldsNoThread) {
  ExitGateJournal gated(*journal_);
  ServeOptions options = Options();
  options.journal = &gated;
  options.threads = 1;
  server_->Shutdown();
  StartWithASession(std::move(options));
  gated.armed = true;
  const std::string url = base_ + "/v1/sessions/" + session_;
  std::promise<serve_testing::HttpReply> deleted;
  auto answer = deleted.get_future();
  std::jthread deleter([&] { deleted.set_value(Call("DELETE", url)); });
  // Destroyed before the deleter: whatever happens below, the loop exits and the server stops.
  struct OpenThenShutdown {
    ExitGateJournal* gate;
    Server* server;
    ~OpenThenShutdown() {
      gate->gate.Open();
      server->Shutdown();
    }
  } open_then_shutdown{&gated, server_.get()};
  gated.gate.WaitEntered();  // the delete has reached the loop, whose exit now waits
  // Whether the listing `body` (GET /v1/sessions) has the session in memory.
  const auto in_memory = [&](const std::string& body) {
    const Json listing = ParseOrNull(body);
    for (const Json& s : listing["sessions"]) {
      if (s["session_id"] == session_)
        return s["in_memory"] == true;
    }
    return false;
  };
  const auto probe = Call("GET", base_ + "/v1/sessions", "", {}, std::chrono::seconds(10));
  ASSERT_EQ(probe.status, 200) << "the server did not answer within 10 s: " << probe.body;
  EXPECT_TRUE(in_memory(probe.body)) << probe.body;
  EXPECT_EQ(answer.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
      << "the delete was answered before its loop exited";
  gated.gate.Open();
  const auto reply = answer.get();
  EXPECT_EQ(reply.status, 204) << reply.body;
  const auto listed = Call("GET", base_ + "/v1/sessions");
  EXPECT_FALSE(in_memory(listed.body)) << listed.body;
  const auto restored = Call("GET", url);
  ASSERT_EQ(restored.status, 200) << restored.body;
  EXPECT_EQ(ParseOrNull(restored.body)["loops"][0]["status"], "exited");
}

// A model that calls get_weather twice in one message, then, once it sees the results (since the
// last input), answers with what they said. It records what each request held.
class WeatherModel final : public ModelClient {
 public:
  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest& request,
                                                     std::stop_token) override {
    std::string seen;  // the results since the turn's input
    for (const Message& message : request.messages) {
      if (message.as<UserMessage>() != nullptr)
        seen.clear();
      if (const auto* result = message.as<ToolResultMessage>()) {
        seen += result->tool_use_id + (result->is_error ? "!" : "=");
        for (const Block& block : result->blocks) {
          if (const auto* text = block.as<TextBlock>())
            seen += text->text;
        }
        seen += ";";
      }
    }
    {
      std::lock_guard lock(mu_);
      tools_offered_ = request.tools.size();
    }
    if (seen.empty()) {
      return InferenceResponse{
          AssistantMessage{{ToolUseBlock{"call_1", "get_weather", R"({"city":"Oslo"})", {}, {}},
                            ToolUseBlock{"call_2", "get_weather", R"({"city":"Rome"})", {}, {}}},
                           {}},
          StopReason::kToolUse};
    }
    return InferenceResponse{AssistantMessage{{TextBlock{"saw " + seen}}, {}},
                             StopReason::kEndTurn};
  }
  std::size_t tools_offered() const {
    std::lock_guard lock(mu_);
    return tools_offered_;
  }

 private:
  mutable std::mutex mu_;
  std::size_t tools_offered_ = 0;
};

// A server whose model "w" calls the client tool get_weather, with a session whose loop has it.
class ClientToolTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { curl_global_init(CURL_GLOBAL_DEFAULT); }

  void Start(std::chrono::nanoseconds tool_timeout) {
    Listen(tool_timeout);
    const auto created = Call(
        "POST", base_ + "/v1/sessions",
        R"({"loops":[{"model":"w","policy":{"automatic":false},"tools":[{"name":"get_weather",)"
        R"("description":"the weather in a city","input_schema":{"type":"object",)"
        R"("properties":{"city":{"type":"string"}}}}]}]})");
    ASSERT_EQ(created.status, 201) << created.body;
    const Json json = ParseOrNull(created.body);
    session_ = json["session_id"].get<std::string>();
    loop_id_ = json["loops"][0].get<std::string>();
    loop_ = base_ + "/v1/sessions/" + session_ + "/loops/" + loop_id_;
  }

  // A server over the test's journal (the one before, if any, stopped first).
  void Listen(std::chrono::nanoseconds tool_timeout) {
    if (server_)
      server_->Shutdown();
    ServeOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    options.journal = journal_.get();
    options.threads = 2;
    options.tool_timeout = tool_timeout;
    options.models["w"] = ConfiguredModel{
        runtime_testing::TestModel(),
        [model = model_]() -> Result<ServedModel, std::string> { return Served(model); }};
    auto server = Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.error().Message();
    server_ = std::move(server).value();
    base_ = "http://127.0.0.1:" + std::to_string(server_->port());
    loop_ = base_ + "/v1/sessions/" + session_ + "/loops/" + loop_id_;
  }

  // Posts `text` as input, then reads the session's events until `done`; `on_call` runs once,
  // when the assistant's message with the tool calls is on the stream.
  std::vector<StreamEvent> Turn(const std::function<void()>& on_call,
                                const std::string& until = "TurnCompleted") {
    const auto input = Call("POST", loop_ + "/input", R"({"text":"weather?"})");
    EXPECT_EQ(input.status, 202) << input.body;
    bool called = false;
    auto events =
        ReadStream(base_ + "/v1/sessions/" + session_ + "/events?from=" + std::to_string(from_),
                   [&](const std::vector<StreamEvent>& events) {
                     const StreamEvent& last = events.back();
                     if (!called && last.name == "MessageCommitted" &&
                         last.data.dump().find("\"tool_use\"") != std::string::npos) {
                       called = true;
                       on_call();
                     }
                     return last.name == until;
                   });
    for (const StreamEvent& e : events)
      from_ = std::max(from_, e.seq + 1);
    return events;
  }

  std::shared_ptr<WeatherModel> model_ = std::make_shared<WeatherModel>();
  std::unique_ptr<Journal> journal_ = NewMemoryJournal();
  std::unique_ptr<Server> server_;
  std::string base_;
  std::string session_;
  std::string loop_id_;
  std::string loop_;        // the loop's URL
  std::uint64_t from_ = 1;  // the next turn's events start after the previous turn's
};

std::string ErrorKind(const serve_testing::HttpReply& reply) {
  const Json json = ParseOrNull(reply.body);
  return json.is_object() && json.contains("error") ? json["error"]["kind"].get<std::string>() : "";
}

// docs/masking.md over HTTP: a large client tool result of an earlier turn is masked, its
// original read back, unmasked one by one or all at once; refusals have their kinds.
TEST_F(ClientToolTest, OldToolOutputIsMaskedReadAndUnmaskedOverHttp) {
  Listen(std::chrono::seconds(600));
  const auto created = Call("POST", base_ + "/v1/sessions",
                            R"({"loops":[{"model":"w","policy":{"automatic":false,"masking":"off",)"
                            R"("keep_recent_segments":1},"tools":[{"name":"get_weather"}]}]})");
  ASSERT_EQ(created.status, 201) << created.body;
  session_ = ParseOrNull(created.body)["session_id"].get<std::string>();
  loop_id_ = ParseOrNull(created.body)["loops"][0].get<std::string>();
  loop_ = base_ + "/v1/sessions/" + session_ + "/loops/" + loop_id_;
  const std::string big(3000, 'r');
  const auto answer = [&] {
    const auto posted = Call("POST", loop_ + "/tool_results",
                             R"({"results":[{"tool_use_id":"call_1","content":")" + big +
                                 R"("},{"tool_use_id":"call_2","content":"small"}]})");
    EXPECT_EQ(posted.status, 200) << posted.body;
  };
  const auto nothing = Call("POST", loop_ + "/mask");
  EXPECT_EQ(nothing.status, 409) << nothing.body;
  EXPECT_EQ(ErrorKind(nothing), "nothing_to_mask");
  Turn(answer);
  Turn(answer);  // the first turn's output is now before the retained tail

  const auto masked = Call("POST", loop_ + "/mask");
  ASSERT_EQ(masked.status, 200) << masked.body;
  EXPECT_TRUE(ParseOrNull(masked.body)["event_id"].is_string());
  Json history = ParseOrNull(Call("GET", loop_ + "/history").body);
  ASSERT_EQ(history["masked"].size(), 1u) << history;
  const std::string id = history["masked"][0].get<std::string>();
  EXPECT_EQ(history["message_ids"][2], id);  // input, calls, the first result
  EXPECT_NE(history["messages"][2].dump().find("masked to save context"), std::string::npos);
  EXPECT_EQ(history["undoable"], 1);
  const auto original = Call("GET", loop_ + "/masked/" + id);
  ASSERT_EQ(original.status, 200) << original.body;
  EXPECT_NE(original.body.find(big), std::string::npos);
  EXPECT_EQ(ParseOrNull(original.body)["message_id"], id);

  const auto one = Call("DELETE", loop_ + "/masked/" + id);
  ASSERT_EQ(one.status, 200) << one.body;
  history = ParseOrNull(Call("GET", loop_ + "/history").body);
  EXPECT_TRUE(history["masked"].empty());
  EXPECT_NE(history["messages"][2].dump().find(big), std::string::npos);
  const auto gone = Call("GET", loop_ + "/masked/" + id);
  EXPECT_EQ(gone.status, 404);
  EXPECT_EQ(ErrorKind(gone), "not_masked");
  EXPECT_EQ(ErrorKind(Call("DELETE", loop_ + "/masked/" + id)), "not_masked");
  EXPECT_EQ(ErrorKind(Call("POST", loop_ + "/unmask")), "not_masked");

  ASSERT_EQ(Call("POST", loop_ + "/mask").status, 200);
  const auto all = Call("POST", loop_ + "/unmask");
  ASSERT_EQ(all.status, 200) << all.body;
  EXPECT_TRUE(ParseOrNull(Call("GET", loop_ + "/history").body)["masked"].empty());
  EXPECT_EQ(Call("POST", loop_ + "/mask", R"({"x":1})").status, 400);
  const auto bad = Call("POST", base_ + "/v1/sessions",
                        R"({"loops":[{"model":"w","policy":{"masking":"later"}}]})");
  EXPECT_EQ(bad.status, 400) << bad.body;
}

TEST_F(ClientToolTest, TheClientAnswersTheCallsOverHttpAndTheModelSeesTheResults) {
  Start(std::chrono::seconds(600));
  const auto events = Turn([&] {
    // Both calls of the message are listed as soon as the client can see the message.
    const auto listed = Call("GET", loop_ + "/tool_calls");
    ASSERT_EQ(listed.status, 200) << listed.body;
    const Json calls = ParseOrNull(listed.body)["calls"];
    ASSERT_EQ(calls.size(), 2u) << listed.body;
    EXPECT_EQ(calls[0]["tool_use_id"], "call_1");
    EXPECT_EQ(calls[0]["name"], "get_weather");
    EXPECT_EQ(calls[0]["input"]["city"], "Oslo");
    EXPECT_EQ(calls[1]["tool_use_id"], "call_2");
    // An id no call of the turn has, and a request naming one with a known id: nothing applied.
    const auto unknown = Call("POST", loop_ + "/tool_results",
                              R"({"results":[{"tool_use_id":"call_9","content":"x"}]})");
    EXPECT_EQ(unknown.status, 404) << unknown.body;
    EXPECT_EQ(ErrorKind(unknown), "tool_call_not_found");
    const auto mixed = Call("POST", loop_ + "/tool_results",
                            R"({"results":[{"tool_use_id":"call_1","content":"x"},)"
                            R"({"tool_use_id":"call_9","content":"x"}]})");
    EXPECT_EQ(mixed.status, 404) << mixed.body;
    // The second call answered before its Run began, the first while it waits (or before).
    const auto second = Call("POST", loop_ + "/tool_results",
                             R"({"results":[{"tool_use_id":"call_2","content":"no city",)"
                             R"("is_error":true}]})");
    EXPECT_EQ(second.status, 200) << second.body;
    EXPECT_EQ(ParseOrNull(second.body)["answered"][0], "call_2");
    const auto again = Call("POST", loop_ + "/tool_results",
                            R"({"results":[{"tool_use_id":"call_2","content":"again"}]})");
    EXPECT_EQ(again.status, 409) << again.body;
    EXPECT_EQ(ErrorKind(again), "tool_call_answered");
    const auto left = ParseOrNull(Call("GET", loop_ + "/tool_calls").body)["calls"];
    ASSERT_EQ(left.size(), 1u);
    EXPECT_EQ(left[0]["tool_use_id"], "call_1");
    const auto first = Call("POST", loop_ + "/tool_results",
                            R"({"results":[{"tool_use_id":"call_1","content":"12 C"}]})");
    EXPECT_EQ(first.status, 200) << first.body;
  });
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().name, "TurnCompleted");
  EXPECT_EQ(model_->tools_offered(), 1u);
  // The model's final answer shows what it saw: both results, the second as an error.
  const Json history = ParseOrNull(Call("GET", loop_ + "/history").body)["messages"];
  ASSERT_FALSE(history.empty());
  EXPECT_EQ(history.back()["blocks"][0]["text"], "saw call_1=12 C;call_2!no city;");
  // The turn is over: nothing is listed, and an answer to its calls is refused.
  EXPECT_EQ(ParseOrNull(Call("GET", loop_ + "/tool_calls").body)["calls"].size(), 0u);
  const auto late = Call("POST", loop_ + "/tool_results",
                         R"({"results":[{"tool_use_id":"call_1","content":"x"}]})");
  EXPECT_EQ(late.status, 409) << late.body;
  EXPECT_EQ(ErrorKind(late), "tool_call_answered");
}

TEST_F(ClientToolTest, ACallTheClientDoesNotAnswerInTimeIsAnErrorResult) {
  Start(std::chrono::milliseconds(200));
  const auto events = Turn([] {});
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().name, "TurnCompleted");
  const Json history = ParseOrNull(Call("GET", loop_ + "/history").body)["messages"];
  const std::string last = history.back()["blocks"][0]["text"].get<std::string>();
  EXPECT_NE(last.find("call_1!the client did not answer this tool call within 200 ms"),
            std::string::npos)
      << last;
  EXPECT_NE(last.find("call_2!the client did not answer"), std::string::npos) << last;
  const auto late = Call("POST", loop_ + "/tool_results",
                         R"({"results":[{"tool_use_id":"call_2","content":"x"}]})");
  EXPECT_EQ(late.status, 409) << late.body;
}

TEST_F(ClientToolTest, AnInterruptOrAShutdownEndsAWaitingCall) {
  Start(std::chrono::seconds(600));
  const auto events = Turn(
      [&] {
        const auto interrupted = Call("POST", loop_ + "/interrupt");
        EXPECT_EQ(interrupted.status, 200) << interrupted.body;
      },
      "TurnInterrupted");
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().name, "TurnInterrupted");
  // The runtime answered the calls the turn left open; none waits for the client.
  EXPECT_EQ(ParseOrNull(Call("GET", loop_ + "/tool_calls").body)["calls"].size(), 0u);
  // A call that waits when the server stops is ended with its session: Shutdown returns, and
  // the stream ends after the turn's end. (Shutdown runs off the stream's reader, which it
  // waits for.)
  std::promise<void> called;
  std::thread stopper([&] {
    called.get_future().wait();
    server_->Shutdown();
  });
  const auto waiting = Turn([&] { called.set_value(); }, "end");
  stopper.join();
  ASSERT_FALSE(waiting.empty());
  EXPECT_EQ(waiting.back().name, "end");
  EXPECT_TRUE(serve_testing::HasEvent(waiting, "TurnInterrupted"));
}

// LoopCreated records a loop's tools, policy and compactor: a server that restores the session
// (here a new server over the same journal) rebuilds the loop as it was made, and the model is
// offered the client tools, whose calls the client answers as before.
TEST_F(ClientToolTest, ARestoredLoopHasItsClientToolsPolicyAndCompactor) {
  Listen(std::chrono::seconds(600));
  const auto created =
      Call("POST", base_ + "/v1/sessions",
           R"({"loops":[{"model":"w","compactor":"w","policy":{"automatic":false,)"
           R"("keep_recent_segments":3,"keep_recent_tokens":1234},"tools":[{"name":"get_weather",)"
           R"("description":"the weather in a city","input_schema":{"type":"object"}}]}]})");
  ASSERT_EQ(created.status, 201) << created.body;
  session_ = ParseOrNull(created.body)["session_id"].get<std::string>();
  loop_id_ = ParseOrNull(created.body)["loops"][0].get<std::string>();
  loop_ = base_ + "/v1/sessions/" + session_ + "/loops/" + loop_id_;
  const Json before = ParseOrNull(Call("GET", loop_ + "/context").body);
  EXPECT_EQ(before["compactor"], "model:w");
  EXPECT_EQ(
      before["policy"],
      Json::parse(R"({"automatic":false,"keep_recent_segments":3,"keep_recent_tokens":1234})"));
  EXPECT_GT(before["estimates"]["tools"].get<int>(), 0);

  Listen(std::chrono::seconds(600));  // a new server: the session is restored from the journal
  const auto restored = Call("GET", loop_ + "/context");
  ASSERT_EQ(restored.status, 200) << restored.body;
  const Json after = ParseOrNull(restored.body);
  EXPECT_EQ(after["compactor"], before["compactor"]);
  EXPECT_EQ(after["policy"], before["policy"]);
  EXPECT_EQ(after["estimates"]["tools"], before["estimates"]["tools"]);
  const auto events = Turn([&] {
    const auto answered = Call("POST", loop_ + "/tool_results",
                               R"({"results":[{"tool_use_id":"call_1","content":"12 C"},)"
                               R"({"tool_use_id":"call_2","content":"no city","is_error":true}]})");
    EXPECT_EQ(answered.status, 200) << answered.body;
  });
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().name, "TurnCompleted");
  EXPECT_EQ(model_->tools_offered(), 1u);
  const Json history = ParseOrNull(Call("GET", loop_ + "/history").body)["messages"];
  EXPECT_EQ(history.back()["blocks"][0]["text"], "saw call_1=12 C;call_2!no city;");
}

// Idle release on a manual clock: the first server (A) releases a session idle for a minute of
// its Env's time, and a second server (B) over the same journal, refused it until then, takes
// it over; a stream open on A ends saying why, and resumed on B with its Last-Event-ID misses
// nothing.
class IdleRelease : public ServerTest {
 protected:
  IdleRelease() { env_ = &clock_; }
  ServeOptions IdleOptions(std::chrono::nanoseconds idle) {
    ServeOptions options = Options();
    options.idle_release = idle;
    return options;
  }
  void SetUp() override { StartWithASession(IdleOptions(std::chrono::seconds(60))); }
  // The server goes before the clock it reads.
  void TearDown() override { server_.reset(); }
  std::string Answered(const std::string& base, const std::string& command) {
    const auto reply = Call("GET", base + "/v1/commands/" + command + "?wait_ms=10000");
    EXPECT_EQ(reply.status, 200) << reply.body;
    return ParseOrNull(reply.body)["reply"]["type"].get<std::string>();
  }

  ManualEnv clock_{WallTime(std::chrono::seconds(1'800'000'000))};
};

// A session whose loops have client tools is released as any other (LoopCreated records the
// tools), and the next request restores its loop with them.
TEST_F(IdleRelease, ASessionWithClientToolsIsReleasedAndComesBackWithThem) {
  const auto created = Call("POST", base_ + "/v1/sessions",
                            R"({"loops":[{"model":"t","tools":[{"name":"get_weather"}]}]})");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string with_tools = ParseOrNull(created.body)["session_id"].get<std::string>();
  const std::string loop = base_ + "/v1/sessions/" + with_tools + "/loops/" +
                           ParseOrNull(created.body)["loops"][0].get<std::string>();
  const Json before = ParseOrNull(Call("GET", loop + "/context").body)["estimates"];
  ASSERT_GT(before["tools"].get<int>(), 0) << before.dump();
  std::promise<void> open;
  std::thread reader([&] {
    // The stream ends when the sweep releases the session with tools.
    bool told = false;
    const auto read =
        ReadStream(base_ + "/v1/sessions/" + with_tools + "/events?from=1", [&](const auto&) {
          if (!std::exchange(told, true))
            open.set_value();
          return false;
        });
    ASSERT_FALSE(read.empty());
    EXPECT_EQ(read.back().data["reason"], "idle_released");
  });
  // Idle for over a minute of A's clock once the stream is open (opening it stamps the session
  // active: advance only after that).
  open.get_future().wait();
  clock_.Advance(std::chrono::seconds(61));
  reader.join();
  const Json list = ParseOrNull(Call("GET", base_ + "/v1/sessions").body)["sessions"];
  for (const Json& entry : list) {
    if (entry["session_id"] == with_tools) {
      EXPECT_EQ(entry["in_memory"], false);
    }
  }
  const auto restored = Call("GET", loop + "/context");
  ASSERT_EQ(restored.status, 200) << restored.body;
  EXPECT_EQ(ParseOrNull(restored.body)["estimates"]["tools"], before["tools"]);
}

TEST_F(IdleRelease, AnIdleSessionIsReleasedAndAnotherServerTakesItOverWithoutAGap) {
  auto b = Server::Start(IdleOptions(std::chrono::nanoseconds::zero()));
  ASSERT_TRUE(b.ok());
  const std::string other = "http://127.0.0.1:" + std::to_string((*b)->port());
  const std::string events = "/v1/sessions/" + session_ + "/events";

  std::vector<StreamEvent> on_a;
  std::promise<void> seen_reply;
  std::thread reader([&] {
    bool told = false;
    on_a = ReadStream(base_ + events + "?from=1", [&](const auto& read) {
      if (!told && serve_testing::HasEvent(read, "CompactWaiterRejected")) {
        told = true;
        seen_reply.set_value();
      }
      return false;  // until the server ends the stream
    });
  });
  EXPECT_EQ(Answered(base_, Compact()), "CompactWaiterRejected");
  seen_reply.get_future().wait();
  // Not idle long enough yet: A holds it, and B is told so, naming A.
  clock_.Advance(std::chrono::seconds(59));
  const auto refused = Call("GET", other + "/v1/sessions/" + session_);
  EXPECT_EQ(refused.status, 409) << refused.body;
  EXPECT_EQ(ParseOrNull(refused.body)["error"]["holder"]["owner"], server_->owner().ToString());
  // A request (the 409 was B's; this one is A's) keeps it active for another minute.
  ASSERT_EQ(Call("GET", base_ + "/v1/sessions/" + session_).status, 200);
  clock_.Advance(std::chrono::seconds(59));
  EXPECT_EQ(Call("GET", other + "/v1/sessions/" + session_).status, 409);

  clock_.Advance(std::chrono::seconds(2));  // idle for a minute of A's clock: A lets it go
  reader.join();
  ASSERT_FALSE(on_a.empty());
  EXPECT_EQ(on_a.back().name, "end");
  EXPECT_EQ(on_a.back().data["reason"], "idle_released") << on_a.back().data.dump();
  const std::uint64_t last = on_a.back().data["last_seq"].get<std::uint64_t>();
  std::uint64_t delivered = 0;
  for (const StreamEvent& e : on_a)
    delivered = std::max(delivered, e.seq);
  EXPECT_EQ(last, delivered);

  // B restores it on demand; the stream resumed there from A's last event misses nothing.
  const auto listed = Call("GET", base_ + "/v1/sessions");
  EXPECT_NE(listed.body.find("\"in_memory\":false"), std::string::npos) << listed.body;
  ASSERT_EQ(Call("GET", other + "/v1/sessions/" + session_).status, 200);
  const std::string command = [&] {
    const auto reply =
        Call("POST", other + "/v1/sessions/" + session_ + "/loops/" + loop_ + "/compact");
    EXPECT_EQ(reply.status, 202) << reply.body;
    return ParseOrNull(reply.body)["command_id"].get<std::string>();
  }();
  EXPECT_EQ(Answered(other, command), "CompactWaiterRejected");
  const auto on_b = ReadStream(
      other + events,
      [&](const auto& read) { return serve_testing::HasEvent(read, "CompactWaiterRejected"); },
      {"Last-Event-ID: " + std::to_string(last)});
  std::vector<std::uint64_t> resumed;
  for (const StreamEvent& e : on_b) {
    if (e.seq != 0)
      resumed.push_back(e.seq);
  }
  // The journal's events after A's last, in order: the resumed stream is their beginning.
  const auto exported = Call("GET", other + "/v1/sessions/" + session_ + "/export");
  std::vector<std::uint64_t> journal;
  for (std::size_t at = 0; at < exported.body.size();) {
    const std::size_t nl = exported.body.find('\n', at);
    const Json record = ParseOrNull(exported.body.substr(at, nl - at));
    if (record["kind"] == "event" && record["seq"].get<std::uint64_t>() > last &&
        journal.size() < resumed.size())
      journal.push_back(record["seq"].get<std::uint64_t>());
    at = nl + 1;
  }
  ASSERT_FALSE(resumed.empty());
  EXPECT_EQ(resumed, journal);
  // And A, asked again, is refused it: B holds it now.
  const auto back = Call("GET", base_ + "/v1/sessions/" + session_);
  EXPECT_EQ(back.status, 409) << back.body;
  EXPECT_EQ(ParseOrNull(back.body)["error"]["holder"]["owner"], (*b)->owner().ToString());
}

// GET /v1/sessions/{session}/commands/{command} on the server at `base`.
std::string SessionCommand(const std::string& base, const std::string& session,
                           const std::string& command) {
  return base + "/v1/sessions/" + session + "/commands/" + command;
}

// A command one server accepted is answered by another over the same journal, from the
// journal: while the first holds the session (reading the journal takes no lease), and once
// the first has gone; the same answer as the first server's book gave.
TEST_F(ServerTest, AnotherServerAnswersASessionsCommandFromTheJournal) {
  const std::string command = Compact();
  const auto on_a = Call("GET", SessionCommand(base_, session_, command) + "?wait_ms=10000");
  ASSERT_EQ(on_a.status, 200) << on_a.body;
  EXPECT_EQ(ParseOrNull(on_a.body)["reply"]["type"], "CompactWaiterRejected");
  auto b = Server::Start(Options());
  ASSERT_TRUE(b.ok());
  const std::string other = "http://127.0.0.1:" + std::to_string((*b)->port());

  const auto on_b = Call("GET", SessionCommand(other, session_, command));
  ASSERT_EQ(on_b.status, 200) << on_b.body;
  EXPECT_EQ(ParseOrNull(on_b.body), ParseOrNull(on_a.body));
  // B's memory never held it: the server-wide form does not know it.
  const auto server_wide = Call("GET", other + "/v1/commands/" + command);
  EXPECT_EQ(server_wide.status, 404) << server_wide.body;
  EXPECT_EQ(ErrorKind(server_wide), "command_not_found");
  // An id the session's journal does not hold; a session the journal does not hold; the
  // command asked under another session, from the journal (B) and from the book (A).
  const std::string unknown = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
  const auto no_command = Call("GET", SessionCommand(other, session_, unknown) + "?wait_ms=10000");
  EXPECT_EQ(no_command.status, 404) << no_command.body;
  EXPECT_EQ(ErrorKind(no_command), "command_not_found");
  const auto no_session = Call("GET", SessionCommand(other, unknown, command));
  EXPECT_EQ(no_session.status, 404) << no_session.body;
  EXPECT_EQ(ErrorKind(no_session), "session_not_found");
  const auto created = Call("POST", base_ + "/v1/sessions", R"({"loops":[{"model":"t"}]})");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string second = ParseOrNull(created.body)["session_id"].get<std::string>();
  for (const std::string& base : {other, base_}) {
    const auto elsewhere = Call("GET", SessionCommand(base, second, command));
    EXPECT_EQ(elsewhere.status, 404) << elsewhere.body;
    EXPECT_EQ(ErrorKind(elsewhere), "command_not_found");
  }

  // A is gone: B gives the same answer, with a wait too, and without restoring the session.
  server_->Shutdown();
  const auto after = Call("GET", SessionCommand(other, session_, command) + "?wait_ms=10000");
  ASSERT_EQ(after.status, 200) << after.body;
  EXPECT_EQ(ParseOrNull(after.body), ParseOrNull(on_a.body));
  const auto listed = Call("GET", other + "/v1/sessions");
  EXPECT_EQ(listed.body.find("\"in_memory\":true"), std::string::npos) << listed.body;
}

// A holder that died after journaling a compaction's intent: its journal has the intent and no
// reply. While its lease lasts another server answers pending at once, wait or not (the reply
// is the holder's to give); once the lease has ended, a wait restores the session, whose restore
// answers the command (rejected interrupted), and the wait returns that reply.
TEST_F(ServerTest, AnIntentADeadHolderLeftIsPendingUntilARestoreAnswersIt) {
  server_->Shutdown();
  const Uuid session = Uuid::ParseCanonical(session_).value();
  const Uuid command = Uuid::ParseCanonical("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a60").value();
  const Uuid dead = Uuid::ParseCanonical("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a61").value();
  auto lease = journal_->AcquireLease(session, dead, std::chrono::seconds(30));
  ASSERT_TRUE(lease.ok());
  harness::Compact intent;
  intent.header = CommandHeader{command, session, Uuid::ParseCanonical(loop_).value(),
                                Agency::kUser, std::chrono::system_clock::now()};
  auto payload = EncodeCommand(intent);
  ASSERT_TRUE(payload.ok());
  AppendRequest append{session, lease->token, journal_->LastSequence(session).value() + 1, {}};
  append.records.push_back(NewRecord{command, RecordKind::kCommand,
                                     std::string(harness::Compact::kType), 1,
                                     intent.header.created_at, *payload});
  ASSERT_TRUE(journal_->Append(std::move(append)).ok());

  auto b = Server::Start(Options());
  ASSERT_TRUE(b.ok());
  const std::string other = "http://127.0.0.1:" + std::to_string((*b)->port());
  const std::string url = SessionCommand(other, session_, command.ToString());
  for (const std::string query : {"", "?wait_ms=20000"}) {
    const auto started = std::chrono::steady_clock::now();
    const auto pending = Call("GET", url + query);
    EXPECT_EQ(pending.status, 202) << pending.body;
    EXPECT_EQ(ParseOrNull(pending.body)["status"], "pending");
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(15)) << query;
  }
  ASSERT_TRUE(journal_->ReleaseLease(*lease).ok());
  // Without a wait, the journal's answer: no restore.
  EXPECT_EQ(Call("GET", url).status, 202);
  EXPECT_EQ(Call("GET", other + "/v1/sessions").body.find("\"in_memory\":true"), std::string::npos);
  const auto answered = Call("GET", url + "?wait_ms=20000");
  ASSERT_EQ(answered.status, 200) << answered.body;
  const Json reply = ParseOrNull(answered.body)["reply"];
  EXPECT_EQ(reply["type"], "CompactWaiterRejected") << answered.body;
  EXPECT_EQ(reply["cause"]["command_id"], command.ToString());
  EXPECT_NE(Call("GET", other + "/v1/sessions").body.find("\"in_memory\":true"), std::string::npos);
}

// The book forgets its oldest command when over capacity, but never one a request waits on: the
// wait would sleep to its deadline although the reply came.
TEST(CommandBook, AWatchedCommandIsNotForgottenAndTheOldestUnwatchedOneIs) {
  CommandBook book(1);
  const Uuid session = Uuid::V4();
  const Uuid watched = Uuid::V4();
  const Uuid other = Uuid::V4();
  const Uuid third = Uuid::V4();
  book.Accepted(watched, session);
  bool woken = false;
  ASSERT_NE(book.Watch(watched, [&] { woken = true; }), 0u);
  book.Accepted(other, session);  // over capacity, but the only other record is watched
  EXPECT_TRUE(book.Find(watched).has_value());
  EXPECT_TRUE(book.Find(other).has_value());
  book.Accepted(third, session);  // the oldest unwatched record goes
  EXPECT_FALSE(book.Find(other).has_value());
  EXPECT_TRUE(book.Find(third).has_value());
  book.Answered(watched, session, "{}");
  EXPECT_TRUE(woken);
  EXPECT_EQ(book.Find(watched)->reply, std::optional<std::string>("{}"));
}

// Answers every call with a line of text.
class TextModel final : public ModelClient {
 public:
  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest&,
                                                     std::stop_token) override {
    return InferenceResponse{AssistantMessage{{TextBlock{"fine"}}, {}}, StopReason::kEndTurn};
  }
};

// The text model, with room for the offline compactor's summary.
ConfiguredModel SummarizedTextModel() {
  return ConfiguredModel{runtime_testing::TestModel(), []() -> Result<ServedModel, std::string> {
                           ServedModel model = Served(std::make_shared<TextModel>());
                           model.policy.max_summary_tokens = 2'000;
                           return model;
                         }};
}

// Creates a session on the server at `base` whose one loop has the text model and the offline
// compactor and keeps the newest segment; returns the loop's URL ("" when refused) and sets
// `session`.
std::string CreateTextLoop(const std::string& base, std::string& session) {
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

std::string ServerTest::RestartWithATextLoop(ServeOptions options, std::string& session) {
  options.models["text"] = SummarizedTextModel();
  server_->Shutdown();
  StartWithASession(std::move(options));
  return CreateTextLoop(base_, session);
}

// Asks for one more tool call on every call; the loop has no such tool, so the runtime answers
// each with an error result and the turn goes on until its step limit.
class EndlessToolModel final : public ModelClient {
 public:
  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest&,
                                                     std::stop_token) override {
    const std::size_t call = calls_.fetch_add(1) + 1;
    return InferenceResponse{
        AssistantMessage{{ToolUseBlock{"call_" + std::to_string(call), "lookup", "{}", {}, {}}},
                         {}},
        StopReason::kToolUse};
  }
  std::size_t calls() const { return calls_.load(); }

 private:
  std::atomic<std::size_t> calls_{0};
};

// policy.max_steps_per_turn is the loop's step limit: its turn fails with step_limit after that
// many model calls, and a server restored from the same journal keeps it (LoopCreated records
// it), where it would otherwise fall back to the default of 64.
TEST_F(ServerTest, ALoopsStepLimitStopsItsTurnAndARestoredSessionKeepsIt) {
  auto model = std::make_shared<EndlessToolModel>();
  const auto listen = [&] {
    server_->Shutdown();
    ServeOptions options = Options();
    // A key of its own: a restore finds the configured model by the loop's key.
    const ModelKey key{"test", "tool-caller"};
    options.models["tools"] =
        ConfiguredModel{key, [model, key]() -> Result<ServedModel, std::string> {
                          ServedModel served = Served(model);
                          served.model = key;
                          return served;
                        }};
    auto server = Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.error().Message();
    server_ = std::move(server).value();
    base_ = "http://127.0.0.1:" + std::to_string(server_->port());
  };
  listen();
  const auto created =
      Call("POST", base_ + "/v1/sessions",
           R"({"loops":[{"model":"tools","policy":{"automatic":false,"max_steps_per_turn":3}}]})");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string session = ParseOrNull(created.body)["session_id"].get<std::string>();
  const std::string loop = ParseOrNull(created.body)["loops"][0].get<std::string>();
  std::uint64_t from = 1;
  // Sends an input and reads the session's events until its turn fails; returns the failure.
  const auto failed_turn = [&]() -> Json {
    const auto input = Call("POST", base_ + "/v1/sessions/" + session + "/loops/" + loop + "/input",
                            R"({"text":"look it up"})");
    EXPECT_EQ(input.status, 202) << input.body;
    const auto events = ReadStream(
        base_ + "/v1/sessions/" + session + "/events?from=" + std::to_string(from),
        [](const std::vector<StreamEvent>& events) {
          return events.back().name == "TurnFailed" || events.back().name == "TurnCompleted";
        });
    if (events.empty())
      return Json();
    from = events.back().seq + 1;
    EXPECT_EQ(events.back().name, "TurnFailed");
    return events.back().data["event"];
  };
  Json failure = failed_turn();
  EXPECT_EQ(failure["reason"], "step_limit") << failure.dump();
  // The event carries its measurement: the calls made against the loop's limit.
  EXPECT_EQ(failure["steps"], ParseOrNull(R"({"made":3,"limit":3})")) << failure.dump();
  EXPECT_EQ(model->calls(), 3u);

  listen();  // a new server over the journal: the session is restored with the loop's limit
  failure = failed_turn();
  EXPECT_EQ(failure["reason"], "step_limit") << failure.dump();
  EXPECT_EQ(model->calls(), 6u);
}

// The history controls (docs/serve.md "Pins, undo and preview"): a pin survives a previewed
// compaction that is approved, an undo puts the history back, and each refusal has its kind.
TEST_F(ServerTest, PinsAPreviewAnApprovalAndAnUndoOverHttp) {
  std::string session;
  const std::string loop = RestartWithATextLoop(Options(), session);
  ASSERT_FALSE(loop.empty());
  const auto answered = [&](const std::string& command) {
    const auto reply = Call("GET", base_ + "/v1/commands/" + command + "?wait_ms=10000");
    return ParseOrNull(reply.body)["reply"]["type"].get<std::string>();
  };
  for (const char* text : {R"({"text":"first"})", R"({"text":"second"})"}) {
    const auto input = Call("POST", loop + "/input", text);
    ASSERT_EQ(input.status, 202) << input.body;
    ASSERT_TRUE(ParseOrNull(input.body)["command_id"].is_string());
  }
  // Synchronized on the events: both turns have ended.
  ReadStream(base_ + "/v1/sessions/" + session + "/events?from=1&kind=TurnCompleted",
             [](const auto& events) { return events.size() == 2; });
  Json history = ParseOrNull(Call("GET", loop + "/history").body);
  ASSERT_EQ(history["message_ids"].size(), 4u) << history;
  EXPECT_EQ(history["undoable"], 0);
  EXPECT_TRUE(history["proposal"].is_null());
  const std::string pinned = history["message_ids"][1].get<std::string>();

  auto pin = Call("PUT", loop + "/pins/" + pinned);
  ASSERT_EQ(pin.status, 200) << pin.body;
  EXPECT_EQ(ParseOrNull(pin.body)["changed"], true);
  EXPECT_EQ(ParseOrNull(Call("PUT", loop + "/pins/" + pinned).body)["changed"], false);
  const auto missing = Call("PUT", loop + "/pins/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(ParseOrNull(missing.body)["error"]["kind"], "message_not_found");
  const auto nothing = Call("POST", loop + "/undo");
  EXPECT_EQ(nothing.status, 409);
  EXPECT_EQ(ParseOrNull(nothing.body)["error"]["kind"], "nothing_to_undo");
  const auto bad = Call("POST", loop + "/compact", R"({"instructions":"a\u0007b"})");
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(ParseOrNull(bad.body)["error"]["kind"], "invalid_argument");
  EXPECT_EQ(Call("POST", loop + "/compact", R"({"preview":"yes"})").status, 400);

  const auto compact = Call("POST", loop + "/compact", R"({"preview":true,"instructions":"x"})");
  ASSERT_EQ(compact.status, 202) << compact.body;
  const std::string command = ParseOrNull(compact.body)["command_id"].get<std::string>();
  ReadStream(base_ + "/v1/sessions/" + session + "/events?from=1&kind=CompactionProposed",
             [](const auto& events) { return events.size() == 1; });
  history = ParseOrNull(Call("GET", loop + "/history").body);
  ASSERT_TRUE(history["proposal"].is_object()) << history;
  EXPECT_EQ(history["proposal"]["type"], "CompactionProposed");
  EXPECT_EQ(history["message_ids"].size(), 4u);  // nothing replaced while it waits
  const std::string attempt = history["proposal"]["attempt_id"].get<std::string>();
  const auto other = Call("POST", loop + "/proposals/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b/approve");
  EXPECT_EQ(other.status, 404);
  EXPECT_EQ(ParseOrNull(other.body)["error"]["kind"], "no_proposal");
  const auto approved = Call("POST", loop + "/proposals/" + attempt + "/approve");
  ASSERT_EQ(approved.status, 200) << approved.body;
  EXPECT_TRUE(ParseOrNull(approved.body)["terminal_event_id"].is_string());
  EXPECT_EQ(answered(command), "CompactWaiterResolved");
  history = ParseOrNull(Call("GET", loop + "/history").body);
  EXPECT_EQ(history["derived_prefix"], 2) << history;  // the summary and the pinned answer
  EXPECT_EQ(history["message_ids"][1], pinned);
  EXPECT_EQ(history["pinned"][0], pinned);
  EXPECT_EQ(history["undoable"], 1);

  const auto undone = Call("POST", loop + "/undo");
  ASSERT_EQ(undone.status, 200) << undone.body;
  EXPECT_TRUE(ParseOrNull(undone.body)["event_id"].is_string());
  history = ParseOrNull(Call("GET", loop + "/history").body);
  EXPECT_EQ(history["message_ids"].size(), 4u);
  EXPECT_EQ(history["derived_prefix"], 0);
  const auto unpin = Call("DELETE", loop + "/pins/" + pinned);
  ASSERT_EQ(unpin.status, 200) << unpin.body;
  EXPECT_EQ(ParseOrNull(unpin.body)["pinned"], false);
  EXPECT_EQ(ParseOrNull(unpin.body)["changed"], true);
}

// A pin sent while a preview waits for approval waits in the loop for the attempt's end
// (docs/pins.md), and its connection sleeps meanwhile: it holds no thread of the server. Twice as
// many such pins as the server has threads leave it serving: the history that counts them is
// answered, then the approve that releases them, then each pin, once applied.
TEST_F(ServerTest, PinsThatWaitForAPreviewHoldNoThreadAndTheApproveIsServed) {
  ServeOptions options = Options();
  options.threads = 2;
  std::string session;
  const std::string loop = RestartWithATextLoop(std::move(options), session);
  ASSERT_FALSE(loop.empty());
  for (const char* text : {R"({"text":"first"})", R"({"text":"second"})"})
    ASSERT_EQ(Call("POST", loop + "/input", text).status, 202);
  ReadStream(base_ + "/v1/sessions/" + session + "/events?from=1&kind=TurnCompleted",
             [](const auto& events) { return events.size() == 2; });
  Json history = ParseOrNull(Call("GET", loop + "/history").body);
  ASSERT_EQ(history["message_ids"].size(), 4u) << history;
  const std::string kept = history["message_ids"][3].get<std::string>();  // in the retained tail
  ASSERT_EQ(Call("POST", loop + "/compact", R"({"preview":true})").status, 202);
  ReadStream(base_ + "/v1/sessions/" + session + "/events?from=1&kind=CompactionProposed",
             [](const auto& events) { return events.size() == 1; });
  history = ParseOrNull(Call("GET", loop + "/history").body);
  ASSERT_TRUE(history["proposal"].is_object()) << history;
  const std::string attempt = history["proposal"]["attempt_id"].get<std::string>();

  constexpr std::size_t kPins = 4;
  std::vector<serve_testing::HttpReply> pins(kPins);
  std::vector<std::jthread> senders;
  // Destroyed before the senders: whatever happens below, the shutdown answers every pin still
  // waiting, so the senders end.
  struct ShutdownFirst {
    Server* server;
    ~ShutdownFirst() { server->Shutdown(); }
  } shutdown_first{server_.get()};
  for (std::size_t i = 0; i < kPins; ++i)
    senders.emplace_back([&, i] { pins[i] = Call("PUT", loop + "/pins/" + kept); });
  // Every pin has reached the loop (the history counts them) and none holds a thread: each
  // probe is answered. A server whose threads the pins held would leave it unanswered.
  constexpr std::chrono::seconds kAnswerWithin{10};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    const auto probe = Call("GET", loop + "/history", "", {}, kAnswerWithin);
    ASSERT_EQ(probe.status, 200) << "the server did not answer within 10 s: " << probe.body;
    if (ParseOrNull(probe.body)["deferred_pins"] == kPins)
      break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << probe.body;
  }
  const auto approved =
      Call("POST", loop + "/proposals/" + attempt + "/approve", "", {}, kAnswerWithin);
  ASSERT_EQ(approved.status, 200) << approved.body;
  senders.clear();  // joined: every pin was answered once applied
  std::size_t changed = 0;
  for (const auto& pin : pins) {
    ASSERT_EQ(pin.status, 200) << pin.body;
    changed += ParseOrNull(pin.body)["changed"] == true ? 1 : 0;
  }
  EXPECT_EQ(changed, 1u);  // the first pinned it; the others found it pinned
  history = ParseOrNull(Call("GET", loop + "/history").body);
  EXPECT_EQ(history["deferred_pins"], 0);
  ASSERT_EQ(history["pinned"].size(), 1u) << history;
  EXPECT_EQ(history["pinned"][0], kept);
}

// As a compactor: every call waits until the gate is opened (or the call is stopped), then
// fails, so that the compaction is rejected.
class GateModel final : public ModelClient {
 public:
  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest&,
                                                     std::stop_token stop) override {
    gate_.Pass(stop);
    return Fail(InferenceError{InferenceErrorKind::kTransport, "the gate failed the call"});
  }
  void WaitEntered() { gate_.WaitEntered(); }
  void Open() { gate_.Open(); }

 private:
  Gate gate_;
};

// A server whose book holds one command forgets a running compaction's command as soon as it
// accepts another; the session's form of the lookup finds it in the journal, pending, waits
// for it (a short wait ends pending at its deadline), and answers once the compaction ends.
TEST_F(ServerTest, AWaitForACommandTheBookForgotEndsWithItsReply) {
  auto gate = std::make_shared<GateModel>();
  ServeOptions options = Options();
  options.command_book = 1;
  const auto model = [](std::string name, std::shared_ptr<ModelClient> client) {
    const ModelKey key{"test", std::move(name)};
    return ConfiguredModel{key, [key, client]() -> Result<ServedModel, std::string> {
                             ServedModel served = Served(client);
                             served.model = key;
                             return served;
                           }};
  };
  options.models["text"] = model("text", std::make_shared<TextModel>());
  options.models["gate"] = model("gate", gate);
  auto started = Server::Start(std::move(options));
  ASSERT_TRUE(started.ok()) << started.error().Message();
  const std::string base = "http://127.0.0.1:" + std::to_string((*started)->port());
  const auto create = [&](const std::string& body) {
    const auto created = Call("POST", base + "/v1/sessions", body);
    EXPECT_EQ(created.status, 201) << created.body;
    const Json json = ParseOrNull(created.body);
    return std::make_pair(json["session_id"].get<std::string>(),
                          base + "/v1/sessions/" + json["session_id"].get<std::string>() +
                              "/loops/" + json["loops"][0].get<std::string>());
  };
  const auto command_of = [](const serve_testing::HttpReply& reply) {
    EXPECT_EQ(reply.status, 202) << reply.body;
    return ParseOrNull(reply.body)["command_id"].get<std::string>();
  };
  const auto [session, loop] = create(R"({"loops":[{"model":"text","compactor":"gate"}]})");
  const std::string other_loop = create(R"({"loops":[{"model":"text"}]})").second;
  // Two turns, so that the compaction has a segment before the retained one.
  for (const char* text : {R"({"text":"one"})", R"({"text":"two"})"})
    command_of(Call("POST", loop + "/input", text));
  ReadStream(base + "/v1/sessions/" + session + "/events?from=1&kind=TurnCompleted",
             [](const auto& events) { return events.size() == 2; });
  const std::string command = command_of(Call("POST", loop + "/compact"));
  gate->WaitEntered();
  // Another command (on another session, answered at once) takes the book's one place. Its
  // reply is waited for, so that no late reply of it touches the book afterwards.
  const auto forget = [&] {
    const std::string other = command_of(Call("POST", other_loop + "/compact"));
    EXPECT_EQ(Call("GET", base + "/v1/commands/" + other + "?wait_ms=10000").status, 200);
  };
  forget();
  const auto server_wide = Call("GET", base + "/v1/commands/" + command);
  EXPECT_EQ(server_wide.status, 404) << server_wide.body;

  const std::string url = SessionCommand(base, session, command);
  EXPECT_EQ(Call("GET", url).status, 202);
  const auto short_wait = Call("GET", url + "?wait_ms=100");
  EXPECT_EQ(short_wait.status, 202) << short_wait.body;
  EXPECT_EQ(ParseOrNull(short_wait.body)["status"], "pending");
  forget();  // the short wait put it back in the book; the next wait starts from the journal
  std::promise<serve_testing::HttpReply> waited;
  std::future<serve_testing::HttpReply> done = waited.get_future();
  std::thread waiter([&] { waited.set_value(Call("GET", url + "?wait_ms=20000")); });
  // The wait puts the command back in the book before it reads the journal on and suspends:
  // from then on the server-wide form knows it, and the reply can only come after.
  while (done.wait_for(std::chrono::seconds(0)) != std::future_status::ready &&
         Call("GET", base + "/v1/commands/" + command).status == 404) {
  }
  gate->Open();
  const auto answered = done.get();
  waiter.join();
  ASSERT_EQ(answered.status, 200) << answered.body;
  const Json reply = ParseOrNull(answered.body)["reply"];
  EXPECT_EQ(reply["type"], "CompactWaiterRejected") << answered.body;
  EXPECT_EQ(reply["cause"]["command_id"], command);
}

// The threads of this process now (Linux: one entry per thread in /proc/self/task).
std::size_t ThreadCount() {
  std::size_t count = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(dir)) {
      if (entry->d_name[0] != '.')
        ++count;
    }
    closedir(dir);
  }
  return count;
}

// Sessions share the server's threads: forty more sessions, each answering a compaction, start
// none of their own (a session with threads of its own starts at least four, and a reply
// watcher made five: 200 for forty).
TEST_F(ServerTest, SessionsShareTheServersThreads) {
  Compact();  // the first compaction grows the blocking pool to what one call needs
  const auto first = Call("GET", base_ + "/v1/commands/" + Compact() + "?wait_ms=10000");
  ASSERT_EQ(first.status, 200) << first.body;
  const std::size_t before = ThreadCount();
  for (int i = 0; i < 40; ++i) {
    const auto created = Call("POST", base_ + "/v1/sessions", R"({"loops":[{"model":"t"}]})");
    ASSERT_EQ(created.status, 201) << created.body;
    const Json json = ParseOrNull(created.body);
    const std::string url = base_ + "/v1/sessions/" + json["session_id"].get<std::string>() +
                            "/loops/" + json["loops"][0].get<std::string>() + "/compact";
    const auto accepted = Call("POST", url);
    ASSERT_EQ(accepted.status, 202) << accepted.body;
    const std::string id = ParseOrNull(accepted.body)["command_id"].get<std::string>();
    const auto answered = Call("GET", base_ + "/v1/commands/" + id + "?wait_ms=10000");
    ASSERT_EQ(answered.status, 200) << answered.body;
  }
  // A few threads of slack: the blocking pool grows a worker when a call comes before the
  // previous call's worker is back to idle.
  EXPECT_LE(ThreadCount(), before + 3);
}

// The sessions' blocking workers end once idle for ServeOptions::blocking_idle: after the
// session's compactions the process is back to the threads the server had before its first
// session (without retirement it would keep a worker for the compactions).
TEST_F(ServerTest, BlockingWorkersEndOnceIdleForBlockingIdle) {
  server_.reset();
  ServeOptions options = Options();
  options.blocking_idle = std::chrono::milliseconds(20);
  auto server = Server::Start(std::move(options));
  ASSERT_TRUE(server.ok()) << server.error().Message();
  server_ = std::move(server).value();
  base_ = "http://127.0.0.1:" + std::to_string(server_->port());
  // No session has run anything yet, so no blocking worker is counted here.
  const std::size_t before = ThreadCount();
  const auto created = Call("POST", base_ + "/v1/sessions", R"({"loops":[{"model":"t"}]})");
  ASSERT_EQ(created.status, 201) << created.body;
  const Json json = ParseOrNull(created.body);
  session_ = json["session_id"].get<std::string>();
  loop_ = json["loops"][0].get<std::string>();
  for (int i = 0; i < 3; ++i) {
    const auto answered = Call("GET", base_ + "/v1/commands/" + Compact() + "?wait_ms=10000");
    ASSERT_EQ(answered.status, 200) << answered.body;
  }
  EXPECT_TRUE(ThreadCountFallsTo(before)) << ThreadCount() << " threads, " << before << " before";
}

// The value of the metric line `name` (with its labels, as written) in a /metrics page; -1 when
// the page has no such line.
double Metric(const std::string& page, const std::string& name) {
  std::size_t at = 0;
  while ((at = page.find(name + " ", at)) != std::string::npos) {
    if (at == 0 || page[at - 1] == '\n')
      return std::stod(page.substr(at + name.size() + 1));
    at += name.size();
  }
  return -1;
}

TEST_F(ServerTest, MetricsCountWhatTheServerDid) {
  constexpr int kCompactions = 3;
  for (int i = 0; i < kCompactions; ++i) {
    const auto answered = Call("GET", base_ + "/v1/commands/" + Compact() + "?wait_ms=10000");
    ASSERT_EQ(answered.status, 200) << answered.body;
  }
  const auto refused = Call("GET", base_ + "/v1/sessions/nope");
  ASSERT_EQ(refused.status, 400);
  const auto page = Call("GET", base_ + "/metrics");
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_NE(page.headers.find("Content-Type: text/plain; version=0.0.4"), std::string::npos)
      << page.headers;
  const std::string& m = page.body;
  EXPECT_EQ(Metric(m, "harness_serve_sessions_in_memory"), 1);
  EXPECT_EQ(Metric(m, "harness_serve_sessions_created_total"), 1);
  EXPECT_EQ(Metric(m, "harness_serve_commands_total{kind=\"compact\"}"), kCompactions);
  EXPECT_EQ(Metric(m, "harness_serve_commands_total{kind=\"input\"}"), 0);
  EXPECT_EQ(Metric(m, "harness_serve_commands_held"), kCompactions);
  // Each compaction of the empty history is refused before an attempt starts; its reply is
  // counted before the wait is answered (the recorder counts, then records it in the book).
  EXPECT_EQ(Metric(m, "harness_serve_compact_replies_total{outcome=\"rejected\"}"), kCompactions);
  EXPECT_EQ(Metric(m, "harness_serve_compact_reply_rejections_total{reason=\"unavailable\"}"),
            kCompactions)
      << m;
  EXPECT_EQ(Metric(m, "harness_serve_compact_replies_total{outcome=\"resolved\"}"), 0);
  EXPECT_EQ(Metric(m, "harness_serve_compactions_total{outcome=\"rejected\"}"), 0);
  EXPECT_EQ(Metric(m, "harness_serve_compactions_total{outcome=\"committed\"}"), 0);
  EXPECT_EQ(Metric(m, "harness_serve_responses_total{code=\"4xx\"}"), 1);
  // The session's creation and every compaction's intent and end went through the journal.
  const double appends = Metric(m, "harness_serve_journal_appends_total");
  EXPECT_GE(appends, 1 + 2 * kCompactions);
  EXPECT_EQ(Metric(m, "harness_serve_journal_append_seconds_bucket{le=\"+Inf\"}"), appends);
  EXPECT_EQ(Metric(m, "harness_serve_journal_append_seconds_count"), appends);
  EXPECT_EQ(Metric(m, "harness_serve_event_streams"), 0);
}

TEST_F(ServerTest, TheOpenApiDocumentIsServed) {
  const auto reply = Call("GET", base_ + "/v1/openapi.json");
  ASSERT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body, OpenApiDocument());
}

// Each answer has the members its schema in the OpenAPI document requires, and no member the
// schema does not name: the document describes what the server sends.
TEST_F(ServerTest, AnswersHaveTheMembersTheirSchemasName) {
  auto doc = ParseStrictJson(OpenApiDocument(), JsonLimits{.max_bytes = 1u << 20});
  ASSERT_TRUE(doc.ok());
  const Json& schemas = (*doc)["components"]["schemas"];
  const std::string loop = base_ + "/v1/sessions/" + session_ + "/loops/" + loop_;
  const std::string command = Compact();
  ASSERT_EQ(Call("GET", base_ + "/v1/commands/" + command + "?wait_ms=10000").status, 200);
  const struct {
    std::string url, schema;
  } cases[] = {
      {base_ + "/v1/sessions", "SessionList"},
      {base_ + "/v1/sessions/" + session_, "Session"},
      {loop + "/history", "History"},
      {loop + "/context", "Context"},
      {loop + "/tool_calls", "ToolCalls"},
      {base_ + "/v1/commands/" + command, "CommandStatus"},
      {base_ + "/v1/sessions/" + session_ + "/commands/" + command, "CommandStatus"},
      {base_ + "/v1/sessions/nope", "Error"},
  };
  for (const auto& c : cases) {
    const auto reply = Call("GET", c.url);
    const Json body = ParseOrNull(reply.body);
    ASSERT_TRUE(body.is_object()) << c.url << ": " << reply.body;
    const Json& schema = schemas[c.schema];
    for (const Json& name : schema["required"])
      EXPECT_TRUE(body.contains(name.get<std::string>())) << c.schema << " lacks " << name;
    for (const auto& [name, value] : body.items())
      EXPECT_TRUE(schema["properties"].contains(name)) << c.schema << " does not name " << name;
  }
}

// A quiet stream sends keepalive comments, and a client still sees the events between them.
TEST_F(ServerTest, AQuietStreamSendsKeepaliveComments) {
  ServeOptions options = Options();
  options.stream_keepalive = std::chrono::milliseconds(20);
  auto started = Server::Start(std::move(options));
  ASSERT_TRUE(started.ok()) << started.error().Message();
  const std::string base = "http://127.0.0.1:" + std::to_string((*started)->port());
  const auto created = Call("POST", base + "/v1/sessions", R"({"loops":[{"model":"t"}]})");
  ASSERT_EQ(created.status, 201);
  const std::string session = ParseOrNull(created.body)["session_id"].get<std::string>();
  const std::string raw = serve_testing::ReadUrl(
      base + "/v1/sessions/" + session + "/events?from=1", [](const std::string& bytes) {
        std::size_t comments = 0;
        for (std::size_t at = 0; (at = bytes.find("\n\n:\n\n", at)) != std::string::npos; ++at) {
          ++comments;
        }
        return comments >= 2;
      });
  // The replayed events come first, whole, then the comments between frames.
  EXPECT_EQ(raw.rfind("id: 1\n", 0), 0u) << raw;
  EXPECT_NE(raw.find("\n\n:\n\n:\n\n"), std::string::npos) << raw;
}

bool HasHeader(const serve_testing::HttpReply& reply, const std::string& line) {
  return reply.headers.find(line + "\r\n") != std::string::npos;
}

TEST_F(ServerTest, WithoutAnAllowListNoOriginGetsCorsHeaders) {
  const std::string origin = "Origin: http://app.example";
  const auto preflight = Call("OPTIONS", base_ + "/v1/sessions", "", {origin});
  EXPECT_EQ(preflight.status, 405) << preflight.body;
  const auto list = Call("GET", base_ + "/v1/sessions", "", {origin});
  EXPECT_EQ(list.status, 200);
  EXPECT_EQ(list.headers.find("Access-Control-Allow-Origin"), std::string::npos) << list.headers;
}

TEST_F(ServerTest, AnAllowListedOriginMayCallAndNoOtherMay) {
  ServeOptions options = Options();
  options.cors_origins = {"http://app.example"};
  auto started = Server::Start(std::move(options));
  ASSERT_TRUE(started.ok()) << started.error().Message();
  const std::string base = "http://127.0.0.1:" + std::to_string((*started)->port());

  const auto preflight =
      Call("OPTIONS", base + "/v1/sessions/" + session_, "",
           {"Origin: http://app.example", "Access-Control-Request-Method: DELETE"});
  EXPECT_EQ(preflight.status, 204) << preflight.body;
  EXPECT_TRUE(HasHeader(preflight, "Access-Control-Allow-Origin: http://app.example"))
      << preflight.headers;
  EXPECT_TRUE(HasHeader(preflight, "Access-Control-Allow-Methods: GET, DELETE"))
      << preflight.headers;
  EXPECT_TRUE(HasHeader(preflight,
                        "Access-Control-Allow-Headers: Authorization, Content-Type, Last-Event-ID"))
      << preflight.headers;

  const auto list = Call("GET", base + "/v1/sessions", "", {"Origin: http://app.example"});
  EXPECT_EQ(list.status, 200);
  EXPECT_TRUE(HasHeader(list, "Access-Control-Allow-Origin: http://app.example")) << list.headers;
  EXPECT_TRUE(HasHeader(list, "Vary: Origin")) << list.headers;

  // Another origin, even one that only differs by its port, is refused and told nothing.
  const auto other =
      Call("OPTIONS", base + "/v1/sessions", "", {"Origin: http://app.example:8080"});
  EXPECT_EQ(other.status, 403);
  EXPECT_EQ(ParseOrNull(other.body)["error"]["kind"], "origin_not_allowed");
  const auto read = Call("GET", base + "/v1/sessions", "", {"Origin: http://evil.example"});
  EXPECT_EQ(read.headers.find("Access-Control-Allow-Origin"), std::string::npos) << read.headers;
}

// docs/serve.md "Security": what a web page the user opens can make a browser send. The requests
// are sent raw, as a browser would: Host, Origin and Content-Type exactly as given.
class RequestGuardOverHttp : public ServerTest {
 protected:
  serve_testing::HttpReply Send(const std::string& method, const std::string& path,
                                const std::string& headers, const std::string& body = "") {
    std::string request = method + " " + path + " HTTP/1.1\r\n" + headers;
    if (!body.empty())
      request += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    return serve_testing::RawExchange(server_->port(),
                                      request + "Connection: close\r\n\r\n" + body);
  }
  std::string Own() const { return "Host: 127.0.0.1:" + std::to_string(server_->port()) + "\r\n"; }
  static std::string Kind(const serve_testing::HttpReply& reply) {
    const Json json = ParseOrNull(reply.body);
    return json.is_object() && json.contains("error") ? json["error"]["kind"].get<std::string>()
                                                      : "";
  }
  std::size_t Sessions() { return journal_->ListSessions().value().size(); }
  // server_ again, with the token "TOKEN".
  void RestartWithAToken() {
    server_->Shutdown();
    ServeOptions options = Options();
    options.token = "TOKEN";
    auto started = Server::Start(std::move(options));
    ASSERT_TRUE(started.ok()) << started.error().Message();
    server_ = std::move(started).value();
  }
};

TEST_F(RequestGuardOverHttp, WithoutATokenARequestForAnotherHostIsRefusedAsDnsRebinding) {
  const std::string port = std::to_string(server_->port());
  const std::string create = R"({"loops":[{"model":"t","system_prompt":"planted"}]})";
  for (const std::string& host :
       std::vector<std::string>{"rebind.attacker.example", "rebind.attacker.example:" + port,
                                "127.0.0.1:" + std::to_string(server_->port() + 1)}) {
    const auto read = Send("GET", "/v1/sessions", "Host: " + host + "\r\n");
    EXPECT_EQ(read.status, 421) << host << ": " << read.body;
    EXPECT_EQ(Kind(read), "host_not_allowed") << read.body;
    const auto created = Send("POST", "/v1/sessions",
                              "Host: " + host + "\r\nContent-Type: application/json\r\n", create);
    EXPECT_EQ(created.status, 421) << host << ": " << created.body;
    EXPECT_EQ(Send("GET", "/", "Host: " + host + "\r\n").status, 421) << "the inspector too";
  }
  EXPECT_EQ(Sessions(), 1u) << "nothing was created";
  for (const std::string& host : std::vector<std::string>{"127.0.0.1:" + port, "127.0.0.1",
                                                          "localhost:" + port, "[::1]:" + port}) {
    EXPECT_EQ(Send("GET", "/v1/sessions", "Host: " + host + "\r\n").status, 200) << host;
  }
}

TEST_F(RequestGuardOverHttp, ACrossSiteRequestIsRefusedAndChangesNothing) {
  const std::string loop = "/v1/sessions/" + session_ + "/loops/" + loop_;
  const std::uint64_t journaled = journal_->LastSequence(Uuid::Parse(session_).value()).value();
  const std::string evil = Own() + "Origin: http://evil.example\r\n";
  // A "simple" request (no preflight): text/plain, from another origin.
  const std::string create = R"({"loops":[{"model":"t","system_prompt":"planted"}]})";
  const auto plain = Send("POST", "/v1/sessions", evil + "Content-Type: text/plain\r\n", create);
  EXPECT_EQ(plain.status, 403) << plain.body;
  EXPECT_EQ(Kind(plain), "origin_not_allowed");
  for (const std::string& action :
       std::vector<std::string>{"/input", "/compact", "/undo", "/mask", "/interrupt"}) {
    const auto refused = Send("POST", loop + action, evil + "Content-Type: text/plain\r\n",
                              action == "/input" ? R"({"text":"hi"})" : "");
    EXPECT_EQ(refused.status, 403) << action << ": " << refused.body;
  }
  EXPECT_EQ(Send("DELETE", "/v1/sessions/" + session_, evil).status, 403);
  EXPECT_EQ(Send("POST", "/v1/sessions",
                 Own() + "Origin: null\r\nContent-Type: application/json\r\n", create)
                .status,
            403);
  // Without an Origin (not a browser), a body must still say it is JSON.
  for (const std::string type :
       {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"}) {
    const auto untyped =
        Send("POST", "/v1/sessions", Own() + "Content-Type: " + type + "\r\n", create);
    EXPECT_EQ(untyped.status, 415) << type << ": " << untyped.body;
    EXPECT_EQ(Kind(untyped), "unsupported_media_type");
  }
  EXPECT_EQ(Send("POST", "/v1/sessions", Own(), create).status, 415) << "no Content-Type";
  EXPECT_EQ(Sessions(), 1u) << "nothing was created";
  EXPECT_EQ(journal_->LastSequence(Uuid::Parse(session_).value()).value(), journaled)
      << "nothing was journaled";

  // The server's own origin (the inspector's page), JSON with a charset, and no body at all.
  const std::string own_origin =
      Own() + "Origin: http://127.0.0.1:" + std::to_string(server_->port()) + "\r\n";
  EXPECT_EQ(Send("POST", "/v1/sessions",
                 own_origin + "Content-Type: application/json; charset=utf-8\r\n", create)
                .status,
            201);
  EXPECT_EQ(Send("POST", loop + "/interrupt", own_origin).status, 200);
}

TEST_F(RequestGuardOverHttp, ANulOrAnEncodedSlashNeverCutsOrSplitsWhatTheServerReads) {
  using namespace std::string_literals;
  const auto sessions = Send("GET", "/v1/sessions%00x", Own());
  EXPECT_EQ(sessions.status, 404) << sessions.body;
  EXPECT_EQ(Kind(sessions), "not_found");
  EXPECT_NE(Send("GET", "/v1/sessions\0x"s, Own()).status, 200) << "a raw NUL in the path";
  const auto split = Send("GET", "/v1/sessions/" + session_ + "%2Fevents", Own());
  EXPECT_EQ(split.status, 400) << split.body;
  EXPECT_EQ(Kind(split), "invalid_id");
  EXPECT_EQ(Send("GET", "/v1%2Fsessions", Own()).status, 404);
  const auto nul_query = Send("GET", "/v1/commands/" + session_ + "?wait_ms=1%00x", Own());
  EXPECT_EQ(nul_query.status, 400) << nul_query.body;
  EXPECT_EQ(Kind(nul_query), "invalid_query");

  RestartWithAToken();
  const auto cut = Send("GET", "/v1/sessions", Own() + "Authorization: Bearer TOKEN\0x\r\n"s);
  EXPECT_EQ(cut.status, 400) << cut.body;
  EXPECT_EQ(Kind(cut), "invalid_header");
  for (const std::string& scheme : std::vector<std::string>{"Bearer", "bearer", "BEARER"}) {
    EXPECT_EQ(Send("GET", "/v1/sessions", Own() + "Authorization: " + scheme + " TOKEN\r\n").status,
              200)
        << scheme;
  }
  EXPECT_EQ(Send("GET", "/v1/sessions", Own() + "Authorization: Bearer TOKENx\r\n").status, 401);
}

TEST_F(RequestGuardOverHttp, AnHttp11RequestNeedsItsHostAndHeadOfTheInspectorIsItsGet) {
  const auto hostless = Send("GET", "/v1/sessions", "");
  EXPECT_EQ(hostless.status, 400) << hostless.body;
  EXPECT_EQ(Kind(hostless), "invalid_header");
  EXPECT_EQ(Send("GET", "/v1/sessions", Own() + Own()).status, 400) << "two Hosts";
  const auto old = serve_testing::RawExchange(server_->port(), "GET /v1/sessions HTTP/1.0\r\n\r\n");
  EXPECT_EQ(old.status, 200) << "HTTP/1.0 has no Host to require";

  RestartWithAToken();
  for (const std::string& path : std::vector<std::string>{"/", "/inspector.js", "/inspector.css"}) {
    const auto get = Send("GET", path, Own());
    const auto head = Send("HEAD", path, Own());
    EXPECT_EQ(get.status, 200) << path;
    EXPECT_EQ(head.status, 200) << path << ": " << head.body;
    EXPECT_TRUE(head.body.empty()) << path;
    EXPECT_NE(head.headers.find("ETag: "), std::string::npos) << head.headers;
  }
  EXPECT_EQ(Send("HEAD", "/v1/sessions", Own()).status, 401) << "the API still needs the token";
}

TEST_F(ServerTest, TheNilUuidIsAnInvalidIdOnEveryRoute) {
  const std::string nil = "00000000-0000-0000-0000-000000000000";
  const std::string loop = "/v1/sessions/" + session_ + "/loops/";
  for (const std::string& path :
       std::vector<std::string>{"/v1/sessions/" + nil, "/v1/sessions/" + nil + "/events",
                                "/v1/sessions/" + nil + "/export", "/v1/commands/" + nil,
                                "/v1/sessions/" + session_ + "/commands/" + nil,
                                loop + nil + "/history", loop + loop_ + "/masked/" + nil}) {
    const auto reply = Call("GET", base_ + path);
    EXPECT_EQ(reply.status, 400) << path << ": " << reply.body;
    const Json error = ParseOrNull(reply.body)["error"];
    EXPECT_EQ(error["kind"], "invalid_id") << reply.body;
    EXPECT_NE(error["detail"].get<std::string>().find("is the nil UUID"), std::string::npos)
        << reply.body;
  }
  EXPECT_EQ(Call("POST", base_ + loop + nil + "/input", R"({"text":"hi"})").status, 400);
  EXPECT_EQ(Call("DELETE", base_ + "/v1/sessions/" + nil).status, 400);
}

// No error detail passes the runtime's own wording through: its kind names ("session:
// invalid_definition:"), its field names ("KeepRecentSegments"), its internals ("restore needs").
TEST_F(ServerTest, ErrorsSpeakInTheRequestsNamesNotTheRuntimes) {
  const auto expect_clean = [](const serve_testing::HttpReply& reply) {
    const std::string detail = ParseOrNull(reply.body)["error"]["detail"].get<std::string>();
    for (const char* internal : {"session:", "invalid_definition", "KeepRecent", "Keep", "restore"})
      EXPECT_EQ(detail.find(internal), std::string::npos) << internal << " in " << reply.body;
  };
  for (const std::string& member :
       std::vector<std::string>{"keep_recent_segments", "keep_recent_tokens"}) {
    const auto refused =
        Call("POST", base_ + "/v1/sessions",
             R"({"loops":[{"model":"t"},{"model":"t","policy":{")" + member + R"(":0}}]})");
    EXPECT_EQ(refused.status, 400) << refused.body;
    EXPECT_EQ(ParseOrNull(refused.body)["error"]["kind"], "invalid_argument");
    EXPECT_NE(refused.body.find("$.loops[1].policy." + member), std::string::npos) << refused.body;
    expect_clean(refused);
  }
  const std::string unknown = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
  const auto no_loop =
      Call("POST", base_ + "/v1/sessions/" + session_ + "/loops/" + unknown + "/compact");
  EXPECT_EQ(no_loop.status, 404) << no_loop.body;
  expect_clean(no_loop);
  const auto no_session = Call("GET", base_ + "/v1/sessions/" + unknown);
  EXPECT_EQ(no_session.status, 404) << no_session.body;
  expect_clean(no_session);
  const auto nothing =
      Call("POST", base_ + "/v1/sessions/" + session_ + "/loops/" + loop_ + "/undo");
  EXPECT_EQ(nothing.status, 409) << nothing.body;
  expect_clean(nothing);
}

// The inspector's bar (docs/serve.md "The inspector"): the window the loop's limits and policy
// resolve to (10,000 window, 8,000 max input, 100 reserved output, 1,000 safety margin: an input
// limit of 7,000) and what fills it, estimated; free is the input limit less the estimates
// while nothing is measured.
TEST_F(ServerTest, TheContextHasTheWindowAndTheEstimatesOfEachCategory) {
  const auto created = Call("POST", base_ + "/v1/sessions",
                            R"({"loops":[{"model":"t","system_prompt":"Be brief and kind."}]})");
  ASSERT_EQ(created.status, 201) << created.body;
  const Json json = ParseOrNull(created.body);
  const auto context =
      Call("GET", base_ + "/v1/sessions/" + json["session_id"].get<std::string>() + "/loops/" +
                      json["loops"][0].get<std::string>() + "/context");
  ASSERT_EQ(context.status, 200) << context.body;
  const Json c = ParseOrNull(context.body);
  EXPECT_EQ(
      c["estimates"],
      ParseOrNull(R"({"system_prompt":5,"tools":0,"summary":0,"messages":0,"retained_tail":0})"))
      << context.body;
  EXPECT_EQ(c["window"], ParseOrNull(R"({"window_tokens":10000,"input_limit":7000,)"
                                     R"("reserved_output":100,"safety_margin":1000,"free":6995})"))
      << context.body;
  EXPECT_TRUE(c["measurement"].is_null());
  EXPECT_TRUE(c["categories"].is_object());
}

// A stream whose client went away while it had nothing to send is closed: every stream with
// nothing to send writes an SSE comment every half connection timeout, and the write (or the
// end of file the server then reads) tells it the client is gone. Without that, a suspended
// connection is never looked at again and a dropped stream of an idle session would hold its
// connection slot, and its memory, forever: here, all of them.
TEST_F(ServerTest, StreamsWhoseClientsWentAwayAreClosedAndFreeTheirConnections) {
  server_->Shutdown();
  ServeOptions options = Options();
  options.max_connections = 4;
  options.connection_timeout = std::chrono::seconds(1);
  auto started = Server::Start(std::move(options));
  ASSERT_TRUE(started.ok()) << started.error().Message();
  const std::unique_ptr<Server> server = std::move(started).value();
  const std::string path = "/v1/sessions/" + session_ + "/events";
  std::vector<int> streams;
  for (int i = 0; i < 4; ++i) {
    const int fd = OpenRawStream(server->port(), path);
    ASSERT_GE(fd, 0) << "stream " << i;
    streams.push_back(fd);
  }
  for (const int fd : streams)
    close(fd);
  // Every slot was a stream of an idle session; this request is served once they are closed
  // (it waits in the listen queue until then).
  const std::string base = "http://127.0.0.1:" + std::to_string(server->port());
  const auto reply = Call("GET", base + "/v1/sessions/" + session_);
  EXPECT_EQ(reply.status, 200) << reply.body;
}

// One client address holds at most max_connections_per_address connections: two are served
// (and kept open, HTTP/1.1), a third from the same address is closed unanswered.
TEST_F(ServerTest, OneAddressHoldsAtMostItsShareOfTheConnections) {
  server_->Shutdown();
  ServeOptions options = Options();
  options.max_connections_per_address = 2;
  auto started = Server::Start(std::move(options));
  ASSERT_TRUE(started.ok()) << started.error().Message();
  const std::unique_ptr<Server> server = std::move(started).value();
  const std::string request = "GET /v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  const auto answered = [](const std::string& b) {
    return b.find("\r\n\r\n") != std::string::npos;
  };
  // One at a time: each is counted before the next connects.
  std::vector<int> fds;
  for (int i = 0; i < 3; ++i) {
    fds.push_back(serve_testing::ConnectLoopback(server->port()));
    ASSERT_GE(fds.back(), 0);
    // The third may be closed before its request is sent.
    const bool sent = serve_testing::SendAll(fds.back(), request);
    if (i == 2)
      break;
    ASSERT_TRUE(sent);
    const auto read = serve_testing::ReadRaw(fds.back(), answered, std::chrono::seconds(30));
    EXPECT_EQ(read.bytes.rfind("HTTP/1.1 200", 0), 0u) << read.bytes;
    EXPECT_FALSE(read.closed);
  }
  const auto refused = serve_testing::ReadRaw(
      fds[2], [](const std::string&) { return false; }, std::chrono::seconds(30));
  EXPECT_TRUE(refused.closed);
  EXPECT_EQ(refused.bytes, "");
  for (const int fd : fds)
    close(fd);
}

// The heap bytes in use now: malloc's count, or the sanitizer allocator's under ASan and TSan.
std::size_t HeapInUse() {
#ifdef HARNESS_SANITIZED_HEAP
  return __sanitizer_get_current_allocated_bytes();
#else
  return mallinfo2().uordblks;
#endif
}

// An idle event stream costs the server less than 32 KiB of heap (docs/benchmarks.md "Serve"
// measures it at scale): its subscription, its state and the connection, with no block of its
// own sized for a response body (libmicrohttpd allocates a callback response's block with it).
TEST_F(ServerTest, AnIdleStreamCostsLessThan32KiBOfHeap) {
  constexpr std::size_t kStreams = 64;
  const std::string path = "/v1/sessions/" + session_ + "/events";
  close(OpenRawStream(server_->port(), path));  // the first stream's one-time allocations
  // The closed stream is freed at its first heartbeat; the figure below does not depend on it.
  std::vector<int> streams;
  const std::size_t before = HeapInUse();
  for (std::size_t i = 0; i < kStreams; ++i) {
    const int fd = OpenRawStream(server_->port(), path);
    ASSERT_GE(fd, 0) << "stream " << i;
    streams.push_back(fd);
  }
  const std::size_t after = HeapInUse();
  for (const int fd : streams)
    close(fd);
  const std::size_t per_stream = after > before ? (after - before) / kStreams : 0;
  EXPECT_LT(per_stream, 32u * 1024) << "heap bytes per idle stream";
}

}  // namespace
}  // namespace harness::serve
