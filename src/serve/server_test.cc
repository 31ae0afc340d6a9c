// The server in process, over a memory journal: event streams and command waits that suspend
// their connection while other threads publish (run under ThreadSanitizer too), and a shutdown
// that ends the streams still open.
#include "harness/serve/server.h"

#include <dirent.h>
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "harness/inference/counter.h"
#include "harness/journal/memory_journal.h"
#include "support/env.h"
#include "support/serve_client.h"
#include "support/test_model.h"

namespace harness::serve {
namespace {

using serve_testing::Call;
using serve_testing::ParseOrNull;
using serve_testing::ReadStream;
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
    options.models["t"] = ConfiguredModel{
        runtime_testing::TestModel(), []() -> Result<ServedModel, std::string> {
          ServedModel model;
          model.client = std::make_shared<UncalledModel>();
          model.model = runtime_testing::TestModel();
          model.limits = ModelLimits{10'000, 8'000, 100};
          model.counter = std::make_shared<EstimateCounter>();
          model.policy = runtime_testing::TestPolicy();
          // An estimating counter needs room for its error (compaction/policy.h).
          model.policy.counter_policy = CounterPolicy::kAllowConservative;
          model.policy.reserved_output = 100;
          model.policy.safety_margin = 1'000;
          model.policy.compact_at = 8'000;  // a request may turn automatic compaction on
          model.policy.rearm_below = 6'000;
          return model;
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
  // The refusal names the holder: the first server's lease owner, not the second's.
  EXPECT_EQ(error["holder"]["owner"], server_->owner().ToString()) << refused.body;
  EXPECT_NE(server_->owner(), (*second)->owner());
  // Once the first server stops (and releases the lease), the second restores the session.
  server_->Shutdown();
  const auto restored = Call("GET", other + "/v1/sessions/" + session_);
  EXPECT_EQ(restored.status, 200) << restored.body;
  EXPECT_EQ(ParseOrNull(restored.body)["loops"][0]["loop_id"], loop_);
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

}  // namespace
}  // namespace harness::serve
