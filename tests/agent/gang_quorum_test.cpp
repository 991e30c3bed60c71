// gang_quorum: which side of a split may decide a job's next attempt.
#include "gang_quorum.h"

#include <gtest/gtest.h>

namespace ringmaster::agent {
namespace {

const std::vector<std::string> kFour = {"a1", "a2", "a3", "a4"};

TEST(GangQuorum, ThreeOfFourDecideAndTheOneCutOffDoesNot) {
  EXPECT_TRUE(quorumOf(kFour, {"a1", "a2", "a3"}, {}).majority);
  EXPECT_TRUE(quorumOf(kFour, {"a2", "a3", "a4"}, {}).majority) << "the first agent is cut off";
  const Quorum alone = quorumOf(kFour, {"a1"}, {});
  EXPECT_FALSE(alone.majority) << "a cut-off leader never goes on alone";
  EXPECT_EQ(alone.voters, 4);
  EXPECT_EQ(alone.answering, 1);
  EXPECT_EQ(alone.needed, 3);
  EXPECT_EQ(describeWait(alone),
            "1 of 4 agents answers; a majority (3) is needed to go on, or 2 with a1");
}

TEST(GangQuorum, AnEvenSplitGoesToTheSideOfTheFirstAgent) {
  EXPECT_TRUE(quorumOf(kFour, {"a1", "a2"}, {}).majority);
  EXPECT_FALSE(quorumOf(kFour, {"a3", "a4"}, {}).majority);
  EXPECT_TRUE(quorumOf({"a1", "a2"}, {"a1"}, {}).majority);
  EXPECT_FALSE(quorumOf({"a1", "a2"}, {"a2"}, {}).majority);
}

// An agent whose host refuses its port runs nothing: it does not vote, and the tie goes to the
// first agent that does.
TEST(GangQuorum, AgentsKnownDownDoNotVote) {
  const Quorum q = quorumOf(kFour, {"a2", "a3"}, {"a1"});
  EXPECT_EQ(q.voters, 3);
  EXPECT_TRUE(q.majority);
  EXPECT_TRUE(quorumOf(kFour, {"a2"}, {"a1", "a3"}).majority) << "a2 is first of a2, a4";
  EXPECT_FALSE(quorumOf(kFour, {"a4"}, {"a1", "a3"}).majority);
  EXPECT_TRUE(quorumOf(kFour, {"a4"}, {"a1", "a2", "a3"}).majority) << "the last one standing";
  // One that was thought down but answers counts as answering.
  EXPECT_EQ(quorumOf(kFour, {"a1", "a2"}, {"a1"}).voters, 4);
}

TEST(GangQuorum, OneAgentAloneDecidesForItself) {
  EXPECT_TRUE(quorumOf({"a1"}, {"a1"}, {}).majority);
  EXPECT_EQ(describeWait(quorumOf({"a1", "a2", "a3"}, {"a3"}, {})),
            "1 of 3 agents answers; a majority (2) is needed to go on");
}

// Every way to put 1-7 agents on two sides of a split or down, each side knowing any part of
// those really down (an agent that is down runs on neither side): never do both sides hold a
// majority. 3^7 placements times the subsets of the down each side may know of.
TEST(GangQuorum, NoTwoSidesOfAnySplitBothDecide) {
  for (int n = 1; n <= 7; ++n) {
    std::vector<std::string> members;
    for (int i = 0; i < n; ++i) members.push_back("a" + std::to_string(i + 1));
    int placements = 1;
    for (int i = 0; i < n; ++i) placements *= 3;
    for (int p = 0; p < placements; ++p) {
      std::set<std::string> side[2];
      std::vector<std::string> down;
      for (int i = 0, code = p; i < n; ++i, code /= 3) {
        if (code % 3 == 2) {
          down.push_back(members[i]);
        } else {
          side[code % 3].insert(members[i]);
        }
      }
      const int subsets = 1 << down.size();
      for (int known_a = 0; known_a < subsets; ++known_a) {
        for (int known_b = 0; known_b < subsets; ++known_b) {
          std::set<std::string> down_a, down_b;
          for (size_t d = 0; d < down.size(); ++d) {
            if (known_a & (1 << d)) down_a.insert(down[d]);
            if (known_b & (1 << d)) down_b.insert(down[d]);
          }
          const bool a = !side[0].empty() && quorumOf(members, side[0], down_a).majority;
          const bool b = !side[1].empty() && quorumOf(members, side[1], down_b).majority;
          ASSERT_FALSE(a && b) << "n=" << n << " placement " << p;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ringmaster::agent
