// The server in process, over a memory journal: event streams and command waits that suspend
// their connection while other threads publish (run under ThreadSanitizer too), a shutdown that
// ends the streams still open, sessions shared by servers over one journal, deletes, client
// tools and idle release. server_http_test.cc has the rest (server_test_support.h, the fixture).
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

#include "core/internal/json_dom.h"
#include "harness/command/codec.h"
#include "harness/inference/counter.h"
#include "harness/journal/forwarding_journal.h"
#include "harness/journal/lease.h"
#include "harness/journal/memory_journal.h"
#include "serve/openapi.h"
#include "serve/server_test_support.h"
#include "serve/sessions.h"
#include "support/env.h"
#include "support/serve_client.h"
#include "support/served_model.h"
#include "support/test_model.h"
#include "support/threads.h"

namespace harness::serve {
namespace {

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

// docs/runtime.md §4 over HTTP: while a turn waits for its client's tool results, a delegate
// request is queued behind it and withdrawn; each refusal has its kind.
TEST_F(ClientToolTest, AQueuedDelegateRequestIsWithdrawnOverHttp) {
  Start(std::chrono::seconds(600));
  const auto events = Turn([&] {
    const auto request =
        Call("POST", loop_ + "/input", R"({"text":"review it","origin":"delegate_request"})");
    ASSERT_EQ(request.status, 202) << request.body;
    const std::string id = ParseOrNull(request.body)["command_id"].get<std::string>();
    const auto bad = Call("POST", loop_ + "/input", R"({"text":"x","origin":"friend"})");
    EXPECT_EQ(bad.status, 400) << bad.body;
    // An id no queued input has (the session's own) is refused with its kind.
    const auto unknown = Call("DELETE", loop_ + "/inputs/" + session_);
    EXPECT_EQ(unknown.status, 409) << unknown.body;
    EXPECT_EQ(ErrorKind(unknown), "input_not_queued");

    const auto withdrawn = Call("DELETE", loop_ + "/delegate_requests/" + id);
    ASSERT_EQ(withdrawn.status, 200) << withdrawn.body;
    EXPECT_EQ(ParseOrNull(withdrawn.body)["cancelled"], "queued");
    const auto again = Call("DELETE", loop_ + "/inputs/" + id);
    EXPECT_EQ(again.status, 409) << again.body;
    EXPECT_EQ(ErrorKind(again), "input_not_queued");

    const auto answered = Call("POST", loop_ + "/tool_results",
                               R"({"results":[{"tool_use_id":"call_1","content":"12 C"},)"
                               R"({"tool_use_id":"call_2","content":"20 C"}]})");
    EXPECT_EQ(answered.status, 200) << answered.body;
  });
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().name, "TurnCompleted");
  bool withdrawn_seen = false;
  for (const StreamEvent& e : events)
    withdrawn_seen = withdrawn_seen || e.name == "InputCancelled";
  EXPECT_TRUE(withdrawn_seen);
  // The withdrawn request never ran: the loop is idle with nothing queued.
  const Json context = ParseOrNull(Call("GET", loop_ + "/context").body);
  EXPECT_EQ(context["queued_inputs"], 0) << context;
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

}  // namespace
}  // namespace harness::serve
