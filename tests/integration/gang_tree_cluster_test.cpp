// The gang of a job over seven agents with a fan-out of 2 is a tree (gang_tree.h): a1 leads with
// one child (half the fan-out), a2; a3 and a4 are a2's children, a5 and a6 a3's, a7 a4's. Real
// agents on loopback: the
// connections each one holds are counted from the kernel's socket table, ranks are killed and
// stopped, and an inner agent is killed for real.
#include <signal.h>
#include <stdlib.h>

#include "gang_cluster.h"

namespace ringmaster::testing {
namespace {

// One rank per agent, a metric line every 50 ms for about 15 s; a restart starts it afresh.
constexpr const char* kSpec = R"(name: tree
launcher: command
placement: [{agent: a1, ranks: 1}, {agent: a2, ranks: 1}, {agent: a3, ranks: 1}, {agent: a4, ranks: 1}, {agent: a5, ranks: 1}, {agent: a6, ranks: 1}, {agent: a7, ranks: 1}]
restart: {max_restarts: 1, backoff_seconds: 0.2, min_nodes: 6, hang_timeout_seconds: 4}
command: [/bin/sh, -c, 'i=0; while [ $i -lt 300 ]; do echo "{\"step\": $i, \"loss\": 1}"; sleep 0.05; i=$((i+1)); done']
)";

class GangTreeClusterTest : public GangCluster {
 protected:
  void SetUp() override {
    ::setenv("RINGMASTER_GANG_FANOUT", "2", 1);  // the agents started here inherit it
    startAgents({"a1", "a2", "a3", "a4", "a5", "a6", "a7"});
  }
  void TearDown() override { ::unsetenv("RINGMASTER_GANG_FANOUT"); }
  std::string submitRunning() {
    const std::string job = submit(kSpec);
    EXPECT_TRUE(waitUntil([&] { return allRunning(job); }, std::chrono::seconds(30))) << logs();
    return job;
  }
};

TEST_F(GangTreeClusterTest, EachAgentTalksToItsParentAndChildrenOnlyAndAStopReachesAll) {
  const std::string job = submitRunning();
  std::map<std::string, std::set<std::string>> connections;
  const std::map<std::string, std::set<std::string>> tree = {{"a1", {"a2"}},
                                                             {"a2", {"a1", "a3", "a4"}},
                                                             {"a3", {"a2", "a5", "a6"}},
                                                             {"a4", {"a2", "a7"}},
                                                             {"a5", {"a3"}},
                                                             {"a6", {"a3"}},
                                                             {"a7", {"a4"}}};
  waitUntil(
      [&] {
        connections = gangConnections();
        return connections == tree;
      },
      std::chrono::seconds(10));
  EXPECT_EQ(connections, tree) << logs();
  ASSERT_EQ(cluster_.ctl({"stop", job, "--wait"}).exit_code, 0);
  EXPECT_EQ(waitForOutcome(job), "stopped") << logs();
}

// A rank on a7 fails: a5, four hops away (a7 -> a4 -> a2 -> a3 -> a5), stops its rank within a
// second of the leader, because each agent passes the failure on the moment it hears it.
TEST_F(GangTreeClusterTest, ALeafsRankFailureReachesEveryAgentAtOnceAndTheJobRestarts) {
  const std::string job = submitRunning();
  const pid_t victim = rankPid(job, 6);
  ASSERT_GT(victim, 0);
  const double killed_at = unixSeconds();
  ASSERT_EQ(::kill(victim, SIGKILL), 0);

  EXPECT_EQ(waitForOutcome(job), "succeeded") << logs();
  EXPECT_EQ(events(job, "job_restart").size(), 1u) << logs();
  expectFirstAttemptEndedTogether(job, 7, "a1", killed_at);
  EXPECT_EQ(ranksOfAttempt(job, 2), 7u) << "every agent heard the restart, down the tree";
}

// a2 dies: a1 finds its child lost, a3 and a4 their parent, and turn to a1; the job goes on
// without a2 (min_nodes 6).
TEST_F(GangTreeClusterTest, AnInnerAgentKilledItsChildrenTurnToTheLeaderAndTheJobGoesOn) {
  const std::string job = submitRunning();
  const double killed_at = unixSeconds();
  cluster_.agent("a2").kill();

  expectWentOnWithout(job, "a2", killed_at);
  for (const char* orphan : {"a3", "a4"}) expectHeard(orphan, "failed: agent a2 lost");
  EXPECT_EQ(ranksOfAttempt(job, 2), 6u);
}

// The leader dies, and a tree has no standby: a2 finds its parent lost and leads (first in line),
// the others hear of it from a2, and the job goes on without a1.
TEST_F(GangTreeClusterTest, TheLeaderKilledTheFirstAgentInLineLeadsAndTheJobGoesOn) {
  const std::string job = submitRunning();
  const double killed_at = unixSeconds();
  cluster_.agent("a1").kill();

  expectWentOnWithout(job, "a1", killed_at);
  expectHeard("a7", "failed: agent a1 lost");
  EXPECT_EQ(ranksOfAttempt(job, 2), 6u);
}

// A rank on a6 stops (SIGSTOP): only its stalled progress goes up the tree (a6 -> a3 -> a2 -> a1),
// and the leader names it, first as suspected, then hung.
TEST_F(GangTreeClusterTest, AStoppedRankThreeLevelsDownIsNamedByTheLeader) {
  const std::string job = submitRunning();
  const pid_t victim = rankPid(job, 5);
  ASSERT_GT(victim, 0);
  ASSERT_EQ(::kill(victim, SIGSTOP), 0);

  EXPECT_EQ(waitForOutcome(job), "succeeded") << logs();
  auto suspected = events(job, "hang_suspected");
  ASSERT_FALSE(suspected.empty()) << logs();
  EXPECT_NE(suspected[0].detail.find("rank 5 on a6 may be hung: stopped"), std::string::npos)
      << suspected[0].detail;
  auto failures = events(job, "job_failure");
  ASSERT_FALSE(failures.empty());
  EXPECT_NE(failures[0].detail.find("rank 5 on a6 hung: stopped"), std::string::npos)
      << failures[0].detail;
  EXPECT_EQ(events(job, "job_restart").size(), 1u);
}

}  // namespace
}  // namespace ringmaster::testing
