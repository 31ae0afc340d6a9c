// GatewayRelay without a server: the head, the bounded queue, a consumer that leaves, an abort.
#include "serve/gateway_relay.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <string>
#include <thread>

namespace harness::serve {
namespace {

// The consumer's side of a connection: counts the suspends and resumes the relay asks for.
struct Connection {
  std::atomic<int> suspended{0};
  std::atomic<int> resumed{0};
};

std::unique_ptr<GatewayRelay> RelayOn(Connection& connection, std::size_t capacity = 8) {
  return std::make_unique<GatewayRelay>([&connection] { ++connection.suspended; },
                                        [&connection] { ++connection.resumed; }, capacity);
}

std::string ReadAll(GatewayRelay& relay, GatewayRelay::ReadResult& last) {
  std::string out;
  char buffer[4];
  for (;;) {
    std::size_t count = 0;
    last = relay.Read(buffer, sizeof buffer, count);
    if (last != GatewayRelay::ReadResult::kData)
      return out;
    out.append(buffer, count);
  }
}

TEST(GatewayRelay, AConsumerWaitingForTheHeadSleepsUntilStartWakesIt) {
  Connection connection;
  auto relay = RelayOn(connection);
  EXPECT_FALSE(relay->AwaitHead());
  EXPECT_EQ(connection.suspended, 1);
  EXPECT_EQ(connection.resumed, 0);
  ASSERT_TRUE(relay->Start(201, "application/json"));
  EXPECT_EQ(connection.resumed, 1);
  EXPECT_TRUE(relay->AwaitHead());
  ASSERT_TRUE(relay->head().has_value());
  EXPECT_EQ(relay->head()->status, 201u);
  EXPECT_EQ(relay->head()->content_type, "application/json");
  // A second head is refused: the answer has one status.
  EXPECT_FALSE(relay->Start(500, "text/plain"));
}

TEST(GatewayRelay, BytesComeOutInOrderAndTheEndAfterThem) {
  Connection connection;
  auto relay = RelayOn(connection, 64);
  ASSERT_TRUE(relay->Start(200, "text/event-stream"));
  GatewayRelay::ReadResult last{};
  EXPECT_EQ(ReadAll(*relay, last), "");
  EXPECT_EQ(last, GatewayRelay::ReadResult::kWait);  // nothing yet: the consumer sleeps
  EXPECT_EQ(connection.suspended, 1);
  ASSERT_TRUE(relay->Write("data: one\n\n"));
  EXPECT_EQ(connection.resumed, 1);  // the write woke it
  ASSERT_TRUE(relay->Write("data: two\n\n"));
  EXPECT_EQ(connection.resumed, 1);  // awake already: no second resume
  relay->Finish();
  EXPECT_EQ(ReadAll(*relay, last), "data: one\n\ndata: two\n\n");
  EXPECT_EQ(last, GatewayRelay::ReadResult::kEnd);
}

TEST(GatewayRelay, AWriterWaitsWhileTheQueueHoldsItsCapacityAndGoesOnOnceItIsRead) {
  Connection connection;
  auto relay = RelayOn(connection, 8);
  ASSERT_TRUE(relay->Start(200, "text/event-stream"));
  ASSERT_TRUE(relay->Write("12345678"));  // the capacity
  std::promise<bool> second;
  auto written = second.get_future();
  std::thread writer([&] { second.set_value(relay->Write("9")); });
  // The second write cannot be queued until the consumer reads: it has not returned.
  EXPECT_EQ(written.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  char buffer[4];
  std::size_t count = 0;
  ASSERT_EQ(relay->Read(buffer, sizeof buffer, count), GatewayRelay::ReadResult::kData);
  EXPECT_EQ(std::string(buffer, count), "1234");
  EXPECT_TRUE(written.get());
  writer.join();
  relay->Finish();
  GatewayRelay::ReadResult last{};
  EXPECT_EQ(ReadAll(*relay, last), "56789");
  EXPECT_EQ(last, GatewayRelay::ReadResult::kEnd);
}

TEST(GatewayRelay, AConsumerThatLeavesReleasesAWaitingWriterAndRefusesTheRest) {
  Connection connection;
  auto relay = RelayOn(connection, 4);
  ASSERT_TRUE(relay->Start(200, "text/event-stream"));
  ASSERT_TRUE(relay->Write("full"));
  std::promise<bool> blocked;
  auto written = blocked.get_future();
  std::thread writer([&] { blocked.set_value(relay->Write("more")); });
  EXPECT_EQ(written.wait_for(std::chrono::milliseconds(20)), std::future_status::timeout);
  relay->Gone();
  EXPECT_FALSE(written.get());
  writer.join();
  EXPECT_FALSE(relay->Write("again"));
  relay->Finish();
  EXPECT_EQ(connection.resumed, 0);  // a gone connection is never resumed
}

TEST(GatewayRelay, AnAbortWakesTheSleepingConsumerAndCutsTheAnswer) {
  Connection connection;
  auto relay = RelayOn(connection);
  EXPECT_FALSE(relay->AwaitHead());
  relay->Abort();
  EXPECT_EQ(connection.resumed, 1);
  EXPECT_TRUE(relay->AwaitHead());  // awake, with no head: the server answers itself
  EXPECT_FALSE(relay->head().has_value());
  EXPECT_FALSE(relay->Start(200, "application/json"));
  char buffer[4];
  std::size_t count = 0;
  EXPECT_EQ(relay->Read(buffer, sizeof buffer, count), GatewayRelay::ReadResult::kAborted);
}

}  // namespace
}  // namespace harness::serve
