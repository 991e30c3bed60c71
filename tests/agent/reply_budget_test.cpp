// ReplyBudget: what unread replies may hold of the agent's memory, per key and in all.
#include "reply_budget.h"

#include <gtest/gtest.h>

namespace ringmaster::agent {
namespace {

constexpr uint64_t kMiB = 1 << 20;

TEST(ReplyBudget, AKeyThatNeverReadsIsRefusedPastItsShareWhateverItsConnections) {
  ReplyBudget budget(100 * kMiB, 1000 * kMiB);
  int admitted = 0;
  for (int c = 0; c < 64; ++c) {
    const std::string identity = "conn-" + std::to_string(c);
    budget.noteRequest(identity, "client:hostile", 100 + c);
    for (int r = 0; r < 8; ++r) admitted += budget.admit(identity, 16 * kMiB);
  }
  EXPECT_EQ(admitted, 6);  // 6 x 16 MiB fit in 100 MiB
  EXPECT_LE(budget.heldFor("client:hostile"), 100 * kMiB);
  // Small replies (errors, inventories) always go.
  EXPECT_TRUE(budget.admit("conn-3", 1000));
  // Another key is not held up by it.
  budget.noteRequest("other", "client:gui", 7);
  EXPECT_TRUE(budget.admit("other", 16 * kMiB));
}

TEST(ReplyBudget, AConnectionIsChargedItsNewestRepliesOnly) {
  ReplyBudget budget(1000 * kMiB, 1000 * kMiB);
  budget.noteRequest("gui", "client:gui", 5);
  // A client that reads as it goes: its charge stays at the newest kHeldReplies replies.
  for (int r = 0; r < 100; ++r) ASSERT_TRUE(budget.admit("gui", 4 * kMiB));
  EXPECT_EQ(budget.heldFor("client:gui"), ReplyBudget::kHeldReplies * 4 * kMiB);
}

TEST(ReplyBudget, AClosedConnectionFreesItsShare) {
  ReplyBudget budget(40 * kMiB, 1000 * kMiB);
  budget.noteRequest("a", "client:k", 10);
  ASSERT_TRUE(budget.admit("a", 16 * kMiB));
  ASSERT_TRUE(budget.admit("a", 16 * kMiB));
  budget.noteRequest("b", "client:k", 11);
  EXPECT_FALSE(budget.admit("b", 16 * kMiB));
  budget.disconnected(10);  // libzmq closed a
  EXPECT_TRUE(budget.admit("b", 16 * kMiB));
  EXPECT_EQ(budget.connectionsOf("client:k"), 1u);
  // A fd taken over by a new connection means the old one is closed, even before its event.
  budget.noteRequest("c", "client:k", 11);
  EXPECT_EQ(budget.heldFor("client:k"), 0u);
  EXPECT_EQ(budget.held(), 0u);
}

TEST(ReplyBudget, TheTotalBoundsAllKeysTogether) {
  ReplyBudget budget(100 * kMiB, 150 * kMiB);
  int admitted = 0;
  for (int k = 0; k < 4; ++k) {
    const std::string identity = "k" + std::to_string(k);
    budget.noteRequest(identity, "client:" + identity, 20 + k);
    for (int r = 0; r < 4; ++r) admitted += budget.admit(identity, 16 * kMiB);
  }
  EXPECT_EQ(admitted, 9);  // 9 x 16 MiB fit in 150 MiB
  EXPECT_LE(budget.held(), 150 * kMiB);
}

}  // namespace
}  // namespace ringmaster::agent
