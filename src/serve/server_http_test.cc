// The server in process, over HTTP: a loop's step limit, pins, previews and undo, command waits,
// the threads sessions share, metrics, the OpenAPI document and the answers' schemas, keepalive,
// CORS and the request guard, ids and errors, the context breakdown, and what streams and
// connections cost and are allowed.

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
