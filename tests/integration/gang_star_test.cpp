// The gang of a job over four agents is a star (gang_coordinator.h): each agent talks to the
// leader and its standby only, the hubs to everyone. Real agents on loopback: the connections
// each one holds are counted from the kernel's socket table, and agents are killed for real.
#include <signal.h>

#include "gang_cluster.h"

namespace ringmaster::testing {
namespace {

// One rank per agent, a metric line every 50 ms for about 15 s; a restart starts it afresh.
constexpr const char* kSpec = R"(name: star
launcher: command
placement: [{agent: a1, ranks: 1}, {agent: a2, ranks: 1}, {agent: a3, ranks: 1}, {agent: a4, ranks: 1}]
restart: {max_restarts: 1, backoff_seconds: 0.2, min_nodes: 3}
command: [/bin/sh, -c, 'i=0; while [ $i -lt 300 ]; do echo "{\"step\": $i, \"loss\": 1}"; sleep 0.05; i=$((i+1)); done']
)";

class GangStarTest : public GangCluster {
 protected:
  void SetUp() override { startAgents({"a1", "a2", "a3", "a4"}); }
  std::string submit() { return GangCluster::submit(kSpec); }
};

TEST_F(GangStarTest, EachAgentTalksToTheLeaderAndItsStandbyOnly) {
  const std::string job = submit();
  ASSERT_TRUE(waitUntil([&] { return allRunning(job); }, std::chrono::seconds(20))) << logs();
  std::map<std::string, std::set<std::string>> connections;
  // Let every agent open what it will (a peer's handshake takes a moment) and look again.
  waitUntil(
      [&] {
        connections = gangConnections();
        return connections["a1"].size() == 3 && connections["a2"].size() == 3;
      },
      std::chrono::seconds(5));
  EXPECT_EQ(connections["a1"], (std::set<std::string>{"a2", "a3", "a4"}));  // the leader
  EXPECT_EQ(connections["a2"], (std::set<std::string>{"a1", "a3", "a4"}));  // its standby
  EXPECT_EQ(connections["a3"], (std::set<std::string>{"a1", "a2"}));
  EXPECT_EQ(connections["a4"], (std::set<std::string>{"a1", "a2"}));
  ASSERT_EQ(cluster_.ctl({"stop", job, "--wait"}).exit_code, 0);
  EXPECT_EQ(waitForOutcome(job), "stopped") << logs();
}

// a4 talks to the hubs only, and a3 never hears from a4: the hubs find it lost, and a3 stops
// its rank because the hubs pass the failure on.
TEST_F(GangStarTest, AnAgentOutsideTheHubsKilledIsFoundByTheHubsAndEveryoneStops) {
  const std::string job = submit();
  ASSERT_TRUE(waitUntil([&] { return allRunning(job); }, std::chrono::seconds(20))) << logs();
  const double killed_at = unixSeconds();
  cluster_.agent("a4").kill();

  expectWentOnWithout(job, "a4", killed_at);
  expectHeard("a3", "failed: agent a4 lost");
}

// A rank on a4 fails: a3, which never talks to a4, stops its rank within a second of the leader,
// because the hubs pass the failure on the moment they hear it (not on their next beat, nor
// never: quiet agents get no beats from the hubs).
TEST_F(GangStarTest, ARankFailureReachesEveryAgentThroughTheHubsAtOnce) {
  const std::string job = submit();
  ASSERT_TRUE(waitUntil([&] { return allRunning(job); }, std::chrono::seconds(20))) << logs();
  const pid_t victim = rankPid(job, 3);
  ASSERT_GT(victim, 0);
  const double killed_at = unixSeconds();
  ASSERT_EQ(::kill(victim, SIGKILL), 0);

  EXPECT_EQ(waitForOutcome(job), "succeeded") << logs();
  // a4 must first see its rank die; a3 hears of it from the hubs.
  expectFirstAttemptEndedTogether(job, 4, "a1", killed_at);
}

// The leader dies: its standby leads, the next agent in line becomes the standby, and the job
// goes on without the leader.
TEST_F(GangStarTest, TheLeaderKilledItsStandbyTakesOver) {
  const std::string job = submit();
  ASSERT_TRUE(waitUntil([&] { return allRunning(job); }, std::chrono::seconds(20))) << logs();
  const double killed_at = unixSeconds();
  cluster_.agent("a1").kill();
  // Attempt 2 on a2, a3 and a4: a2 leads, a3 is its standby and talks to a4 as well.
  std::map<std::string, std::set<std::string>> connections;
  waitUntil(
      [&] {
        connections = gangConnections();
        return status(job).value("attempt", 0) == 2 &&
               connections["a4"] == std::set<std::string>{"a2", "a3"};
      },
      std::chrono::seconds(30));
  EXPECT_EQ(connections["a4"], (std::set<std::string>{"a2", "a3"})) << logs();
  EXPECT_EQ(connections["a3"], (std::set<std::string>{"a2", "a4"})) << logs();

  expectWentOnWithout(job, "a1", killed_at);
}

}  // namespace
}  // namespace ringmaster::testing
