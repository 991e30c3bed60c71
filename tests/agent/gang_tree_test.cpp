// The layout of a large gang's tree (gang_tree.h), without sockets.
#include "gang_tree.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>

namespace ringmaster::agent {
namespace {

using Places = std::vector<size_t>;

// Fan-out 4: the root has members 1-2, member 1 has 3-6, member 2 7-10, member 3 11-14.
TEST(GangTreeTest, MembersInOrderFillTheTreeLevelByLevelTheRootWithHalfTheFanout) {
  const std::vector<bool> none(12, false);
  TreePlace root = treePlace(0, none, 4);
  EXPECT_FALSE(root.parent);
  EXPECT_EQ(root.children, (Places{1, 2}));
  EXPECT_EQ(root.below, (Places{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  TreePlace inner = treePlace(1, none, 4);
  EXPECT_EQ(inner.parent, 0u);
  EXPECT_EQ(inner.children, (Places{3, 4, 5, 6}));
  EXPECT_EQ(inner.below, (Places{3, 4, 5, 6, 11}));
  TreePlace leaf = treePlace(11, none, 4);
  EXPECT_EQ(leaf.parent, 3u);
  EXPECT_TRUE(leaf.children.empty());
  EXPECT_TRUE(leaf.below.empty());
}

TEST(GangTreeTest, ALostMembersChildrenReportToItsParentWhichStillWatchesIt) {
  std::vector<bool> lost(12, false);
  lost[1] = true;
  // Member 4 (child of 1) turns to 0; 1 stays 0's child (it may answer again), a leaf now.
  EXPECT_EQ(treePlace(4, lost, 4).parent, 0u);
  TreePlace root = treePlace(0, lost, 4);
  EXPECT_EQ(root.children, (Places{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(root.below.size(), 11u);
  EXPECT_TRUE(treePlace(1, lost, 4).children.empty());
  // Member 11's parent 3 lost as well: it turns to 0 too.
  lost[3] = true;
  EXPECT_EQ(treePlace(11, lost, 4).parent, 0u);
}

TEST(GangTreeTest, TheRootLostTheFirstMemberNotLostLeadsAndTakesTheOrphans) {
  std::vector<bool> lost(12, false);
  lost[0] = true;
  TreePlace leader = treePlace(1, lost, 4);
  EXPECT_FALSE(leader.parent);
  EXPECT_EQ(leader.children, (Places{0, 2, 3, 4, 5, 6}));
  EXPECT_EQ(leader.below.size(), 11u);          // everyone, the lost root too
  EXPECT_EQ(treePlace(7, lost, 4).parent, 2u);  // its own parent is there
  lost[1] = true;
  EXPECT_EQ(treePlace(2, lost, 4).parent, std::nullopt);
  EXPECT_EQ(treePlace(5, lost, 4).parent, 2u);  // 1's child, 1 and 0 lost
}

TEST(GangTreeTest, NoAgentTalksToMoreThanFanoutPlusOneWhateverTheSize) {
  const size_t fanout = kGangFanout;
  for (size_t agents : {9u, 64u, 256u, 1000u}) {
    const std::vector<bool> none(agents, false);
    size_t most = 0, deepest = 0;
    for (size_t i = 0; i < agents; ++i) {
      TreePlace place = treePlace(i, none, fanout);
      most = std::max(most, place.children.size() + (place.parent ? 1 : 0));
      size_t depth = 0;
      for (auto up = place.parent; up; up = treePlace(*up, none, fanout).parent) ++depth;
      deepest = std::max(deepest, depth);
    }
    EXPECT_LE(most, fanout + 1) << agents;
    EXPECT_EQ(treePlace(0, none, fanout).children.size(), rootChildren(fanout)) << agents;
    EXPECT_LE(deepest, 6u) << agents;  // 1 + 2 + 8 + ... + 2,048 = 2,731 agents in 7 levels
  }
}

TEST(GangTreeTest, AStarUpToFanoutPlusTwoAgents) {
  EXPECT_FALSE(gangIsTree(kGangFanout + 2, kGangFanout));
  EXPECT_TRUE(gangIsTree(kGangFanout + 3, kGangFanout));
}

TEST(GangTreeTest, TheFanoutComesFromTheEnvironmentWhenValid) {
  ::unsetenv("RINGMASTER_GANG_FANOUT");
  EXPECT_EQ(gangFanout(), kGangFanout);
  ::setenv("RINGMASTER_GANG_FANOUT", "2", 1);
  EXPECT_EQ(gangFanout(), 2u);
  for (const char* bad : {"1", "x", "3x", ""}) {
    ::setenv("RINGMASTER_GANG_FANOUT", bad, 1);
    EXPECT_EQ(gangFanout(), kGangFanout) << bad;
  }
  ::unsetenv("RINGMASTER_GANG_FANOUT");
}

}  // namespace
}  // namespace ringmaster::agent
