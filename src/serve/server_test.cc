// The server in process, over a memory journal: event streams and command waits that suspend
// their connection while other threads publish (run under ThreadSanitizer too), and a shutdown
// that ends the streams still open.
#include "harness/serve/server.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <malloc.h>

#include <cstddef>
#include <future>
#include <thread>

#include "harness/inference/counter.h"
#include "harness/journal/memory_journal.h"
#include "support/serve_client.h"
#include "support/test_model.h"

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

  void SetUp() override {
    auto server = Server::Start(Options());
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
  EXPECT_EQ(ParseOrNull(refused.body)["error"]["kind"], "lease_held");
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
