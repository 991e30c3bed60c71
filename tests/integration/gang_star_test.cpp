// The gang of a job over four agents is a star (gang_coordinator.h): each agent talks to the
// leader and its standby only, the hubs to everyone. Real agents on loopback: the connections
// each one holds are counted from the kernel's socket table, and agents are killed for real.
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "harness.h"
#include "ringmaster/store/store.h"

namespace ringmaster::testing {
namespace {

using nlohmann::json;

// One rank per agent, a metric line every 50 ms for about 15 s; a restart starts it afresh.
constexpr const char* kSpec = R"(name: star
launcher: command
placement: [{agent: a1, ranks: 1}, {agent: a2, ranks: 1}, {agent: a3, ranks: 1}, {agent: a4, ranks: 1}]
restart: {max_restarts: 1, backoff_seconds: 0.2, min_nodes: 3}
command: [/bin/sh, -c, 'i=0; while [ $i -lt 300 ]; do echo "{\"step\": $i, \"loss\": 1}"; sleep 0.05; i=$((i+1)); done']
)";

class GangStarTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"a1", "a2", "a3", "a4"}) {
      std::string error;
      ASSERT_TRUE(cluster_.addAgent(name, 1, &error)) << error;
    }
  }

  std::string submit() {
    auto submitted = cluster_.ctl({"submit", cluster_.writeSpec("star.yaml", kSpec)});
    EXPECT_EQ(submitted.exit_code, 0) << submitted.err;
    return submitted.firstLine();
  }
  json status(const std::string& job) {
    auto parsed = json::parse(cluster_.ctl({"status", job, "--json"}).out, nullptr, false);
    return parsed.is_object() ? parsed : json::object();
  }
  bool allRunning(const std::string& job) {
    int running = 0;
    for (const auto& rank : status(job).value("ranks", json::array())) {
      running += rank.value("state", "") == "running";
    }
    return running == 4;
  }
  std::vector<store::EventRow> events(const std::string& job, const std::string& kind) {
    std::vector<store::EventRow> out;
    auto history = store::Reader::open(cluster_.dbPath());
    if (!history.isOk()) return out;
    auto rows = (*history)->events(job);
    for (const auto& row : rows.isOk() ? *rows : std::vector<store::EventRow>{}) {
      if (row.kind == kind) out.push_back(row);
    }
    return out;
  }
  std::string waitForOutcome(const std::string& job) {
    std::string state;
    waitUntil(
        [&] {
          state = status(job).value("state", "");
          return !events(job, "job_outcome").empty();
        },
        std::chrono::seconds(90));
    return state;
  }
  std::string logs() {
    std::string text;
    for (const char* name : {"a1", "a2", "a3", "a4"}) text += cluster_.agent(name).stderrText();
    return text;
  }

  // For each agent, the other agents it holds an established TCP connection to (its gang
  // connections: the only ones an agent opens to another agent's port).
  std::map<std::string, std::set<std::string>> gangConnections() {
    std::map<std::string, std::string> by_port;  // listening port -> agent
    std::map<pid_t, std::string> by_pid;
    for (const char* name : {"a1", "a2", "a3", "a4"}) {
      const AgentProcess& agent = cluster_.agent(name);
      by_port[agent.endpoint().substr(agent.endpoint().rfind(':') + 1)] = name;
      by_pid[agent.pid()] = name;
    }
    std::map<std::string, std::set<std::string>> out;
    std::istringstream table(runCommand({"/usr/bin/ss", "-tnpH", "state", "established"}).out);
    std::string line;
    while (std::getline(table, line)) {
      std::istringstream fields(line);
      std::string recv_q, send_q, local, peer, users;
      fields >> recv_q >> send_q >> local >> peer;
      std::getline(fields, users);
      auto to = by_port.find(peer.substr(peer.rfind(':') + 1));
      if (to == by_port.end()) continue;
      for (const auto& [pid, name] : by_pid) {
        if (users.find("pid=" + std::to_string(pid) + ",") != std::string::npos) {
          out[name].insert(to->second);
        }
      }
    }
    return out;
  }

  Cluster cluster_;
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

  EXPECT_EQ(waitForOutcome(job), "succeeded") << logs();
  auto failures = events(job, "job_failure");
  ASSERT_FALSE(failures.empty()) << logs();
  EXPECT_NE(failures[0].detail.find("agent a4 lost"), std::string::npos) << failures[0].detail;
  EXPECT_LT(failures[0].time - killed_at, 6.0);
  auto restarts = events(job, "job_restart");
  ASSERT_EQ(restarts.size(), 1u);
  EXPECT_NE(restarts[0].detail.find("without a4"), std::string::npos) << restarts[0].detail;
  EXPECT_NE(cluster_.agent("a3").stderrText().find("failed: agent a4 lost"), std::string::npos)
      << cluster_.agent("a3").stderrText();
}

// A rank on a4 fails: a3, which never talks to a4, stops its rank within a second of the leader,
// because the hubs pass the failure on the moment they hear it (not on their next beat, nor
// never: quiet agents get no beats from the hubs).
TEST_F(GangStarTest, ARankFailureReachesEveryAgentThroughTheHubsAtOnce) {
  const std::string job = submit();
  ASSERT_TRUE(waitUntil([&] { return allRunning(job); }, std::chrono::seconds(20))) << logs();
  pid_t victim = -1;
  for (const auto& rank : status(job).value("ranks", json::array())) {
    if (rank.value("rank", -1) == 3) victim = rank.value("pid", -1);
  }
  ASSERT_GT(victim, 0);
  const double killed_at = unixSeconds();
  ASSERT_EQ(::kill(victim, SIGKILL), 0);

  EXPECT_EQ(waitForOutcome(job), "succeeded") << logs();
  auto history = store::Reader::open(cluster_.dbPath());
  ASSERT_TRUE(history.isOk());
  auto first = (*history)->ranks(job, 1);
  ASSERT_TRUE(first.isOk());
  ASSERT_EQ(first->size(), 4u);
  // Seconds after the kill, however loaded the machine (a4 must first see its rank die); and
  // a3's rank within a second of the leader's own, which it hears first.
  double leader_done = 0;
  for (const auto& rank : *first) {
    if (rank.agent == "a1") leader_done = rank.finished_at;
  }
  for (const auto& rank : *first) {
    EXPECT_LT(rank.finished_at - killed_at, 5.0) << "rank " << rank.rank << " on " << rank.agent;
    EXPECT_LT(rank.finished_at - leader_done, 1.0) << "rank " << rank.rank << " on " << rank.agent;
  }
}

// The leader dies: its standby leads, the next agent in line becomes the standby, and the job
// goes on without the leader.
TEST_F(GangStarTest, TheLeaderKilledItsStandbyTakesOver) {
  const std::string job = submit();
  ASSERT_TRUE(waitUntil([&] { return allRunning(job); }, std::chrono::seconds(20))) << logs();
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

  EXPECT_EQ(waitForOutcome(job), "succeeded") << logs();
  auto failures = events(job, "job_failure");
  ASSERT_FALSE(failures.empty()) << logs();
  EXPECT_NE(failures[0].detail.find("agent a1 lost"), std::string::npos) << failures[0].detail;
  auto restarts = events(job, "job_restart");
  ASSERT_EQ(restarts.size(), 1u);
  EXPECT_NE(restarts[0].detail.find("without a1"), std::string::npos) << restarts[0].detail;
}

}  // namespace
}  // namespace ringmaster::testing
