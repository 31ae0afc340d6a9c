// SharedHistory: a lease is the history itself, not a copy; a change while a lease is out leaves
// the lease as it was; with no lease out a change is made in place; a lease may end on another
// thread (the TSan build checks the ordering of its reads before the owner's change).
#include "runtime/shared_history.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace harness::runtime_detail {
namespace {

std::vector<Message> Messages(int n) {
  std::vector<Message> out;
  for (int i = 0; i < n; ++i)
    out.push_back(UserMessage{{TextBlock{"message " + std::to_string(i)}}});
  return out;
}

InferenceRequest Shape(const std::string& system) {
  InferenceRequest shape;
  shape.model = ModelKey{"openai", "gpt-test"};
  shape.system = system;
  shape.max_output_tokens = 100;
  return shape;
}

TEST(SharedHistoryTest, ALeaseIsTheHistoryNotACopy) {
  SharedHistory history(Messages(3));
  const Message* first = history.messages().data();
  auto lease = history.Lease(Shape("s"));
  EXPECT_EQ(lease->messages.data(), first);
  EXPECT_EQ(lease->system, "s");
  EXPECT_EQ(lease->max_output_tokens, 100u);
  EXPECT_TRUE(history.leased());
  // A second lease of the same shape is the same request.
  auto again = history.Lease(Shape("s"));
  EXPECT_EQ(again.get(), lease.get());
  lease.reset();
  EXPECT_TRUE(history.leased());
  again.reset();
  EXPECT_FALSE(history.leased());
}

TEST(SharedHistoryTest, AChangeWhileLeasedLeavesTheLeaseAsItWas) {
  SharedHistory history(Messages(3));
  auto lease = history.Lease(Shape("s"));
  history.Mutable().push_back(UserMessage{{TextBlock{"later"}}});
  EXPECT_EQ(lease->messages, Messages(3));
  EXPECT_EQ(history.size(), 4u);
  EXPECT_NE(history.messages().data(), lease->messages.data());

  // A lease of another shape while one is out: each keeps its own.
  auto other = history.Lease(Shape("t"));
  EXPECT_EQ(lease->system, "s");
  EXPECT_EQ(other->system, "t");
  EXPECT_EQ(other->messages.size(), 4u);

  // Replace and Take leave the leases too.
  history.Replace(Messages(1));
  EXPECT_EQ(other->messages.size(), 4u);
  auto still = history.Lease(Shape("t"));
  const std::vector<Message> taken = history.Take();
  EXPECT_EQ(taken, Messages(1));
  EXPECT_EQ(still->messages, Messages(1));
  EXPECT_TRUE(history.messages().empty());
}

TEST(SharedHistoryTest, WithNoLeaseOutAChangeIsMadeInPlace) {
  SharedHistory history(Messages(3));
  history.Mutable().reserve(8);
  const Message* storage = history.messages().data();
  history.Lease(Shape("s")).reset();
  history.Mutable().push_back(UserMessage{{TextBlock{"later"}}});
  EXPECT_EQ(history.messages().data(), storage);
  // Take moves the messages out uncopied.
  const std::vector<Message> taken = history.Take();
  EXPECT_EQ(taken.data(), storage);
  EXPECT_EQ(taken.size(), 4u);
}

// The lease is read and dropped on another thread; the owner waits for the lease to end through
// leased() alone (no join first), then changes the history in place. Under ThreadSanitizer an
// end of lease that did not order the reads before the change is reported as a race.
TEST(SharedHistoryTest, ALeaseEndedOnAnotherThreadOrdersItsReadsBeforeTheChange) {
  SharedHistory history(Messages(64));
  history.Mutable().reserve(128);
  const Message* storage = history.messages().data();
  std::size_t bytes = 0;
  std::thread reader([lease = history.Lease(Shape("s")), &bytes]() mutable {
    for (const Message& m : lease->messages)
      bytes += m.blocks()[0].as<TextBlock>()->text.size();
    lease.reset();
  });
  while (history.leased()) {
    std::this_thread::yield();
  }
  history.Mutable()[0] = UserMessage{{TextBlock{"changed in place"}}};
  EXPECT_EQ(history.messages().data(), storage);
  reader.join();
  EXPECT_GT(bytes, 0u);
}

}  // namespace
}  // namespace harness::runtime_detail
