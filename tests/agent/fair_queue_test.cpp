// FairQueue: keys take turns, whatever how much each has queued.
#include "fair_queue.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ringmaster::agent {
namespace {

TEST(FairQueue, AKeyWithManyItemsGetsOneTurnInEachRound) {
  FairQueue<std::string> queue(100);
  for (int i = 0; i < 48; ++i) {
    ASSERT_TRUE(queue.push("client:busy", "busy-" + std::to_string(i)));
  }
  ASSERT_TRUE(queue.push("client:other", "inventory"));
  ASSERT_TRUE(queue.push("client:third", "read"));
  EXPECT_EQ(queue.size(), 50u);
  EXPECT_EQ(queue.keys(), 3u);
  // The other keys wait for one item of the busy key, not for 48.
  EXPECT_EQ(*queue.pop(), "busy-0");
  EXPECT_EQ(*queue.pop(), "inventory");
  EXPECT_EQ(*queue.pop(), "read");
  EXPECT_EQ(*queue.pop(), "busy-1");
  // A key that comes back later joins the turns behind the keys that wait.
  ASSERT_TRUE(queue.push("client:other", "again"));
  EXPECT_EQ(*queue.pop(), "busy-2");
  EXPECT_EQ(*queue.pop(), "again");
  std::vector<std::string> rest;
  while (auto item = queue.pop()) rest.push_back(*item);
  ASSERT_EQ(rest.size(), 45u);
  EXPECT_EQ(rest.front(), "busy-3");  // each key's own items stay in order
  EXPECT_EQ(rest.back(), "busy-47");
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.keys(), 0u);
  EXPECT_FALSE(queue.pop().has_value());
}

TEST(FairQueue, AKeyPastItsLimitIsRefusedAndOthersAreNot) {
  FairQueue<int> queue(3);
  EXPECT_TRUE(queue.push("a", 1));
  EXPECT_TRUE(queue.push("a", 2));
  EXPECT_TRUE(queue.push("a", 3));
  int refused = 4;
  EXPECT_FALSE(queue.push("a", std::move(refused)));
  EXPECT_TRUE(queue.push("b", 1));
  EXPECT_EQ(queue.size(), 4u);
  EXPECT_EQ(*queue.pop(), 1);
  EXPECT_TRUE(queue.push("a", 4)) << "room again once one is taken";
}

// The agent keys a request by a field of the request itself, moved into the queue.
TEST(FairQueue, AKeyThatIsPartOfTheItemSurvivesTheMove) {
  struct Request {
    std::string user, body;
  };
  FairQueue<Request> queue(8);
  Request first{"client:a", "read"};
  ASSERT_TRUE(queue.push(first.user, std::move(first)));
  Request second{"client:b", "launch"};
  ASSERT_TRUE(queue.push(second.user, std::move(second)));
  EXPECT_EQ(queue.keys(), 2u);
  EXPECT_EQ(queue.pop()->body, "read");
  EXPECT_EQ(queue.pop()->body, "launch");
  EXPECT_TRUE(queue.empty());
}

}  // namespace
}  // namespace ringmaster::agent
