#pragma once
// A job's gang over real agents on loopback (gang_star_test, gang_tree_cluster_test): its status
// and history as a client sees them, and the gang connections each agent holds, counted from the
// kernel's socket table.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"
#include "ringmaster/store/store.h"

namespace ringmaster::testing {

class GangCluster : public ::testing::Test {
 protected:
  using json = nlohmann::json;

  void startAgents(const std::vector<std::string>& names) {
    names_ = names;
    for (const auto& name : names) {
      std::string error;
      ASSERT_TRUE(cluster_.addAgent(name, 1, &error)) << error;
    }
  }

  std::string submit(const std::string& spec) {
    auto submitted = cluster_.ctl({"submit", cluster_.writeSpec("gang.yaml", spec)});
    EXPECT_EQ(submitted.exit_code, 0) << submitted.err;
    return submitted.firstLine();
  }
  json status(const std::string& job) {
    auto parsed = json::parse(cluster_.ctl({"status", job, "--json"}).out, nullptr, false);
    return parsed.is_object() ? parsed : json::object();
  }
  bool allRunning(const std::string& job) {
    size_t running = 0;
    for (const auto& rank : status(job).value("ranks", json::array())) {
      running += rank.value("state", "") == "running";
    }
    return running == names_.size();
  }
  pid_t rankPid(const std::string& job, int rank) {
    for (const auto& entry : status(job).value("ranks", json::array())) {
      if (entry.value("rank", -1) == rank) return entry.value("pid", -1);
    }
    return -1;
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
  size_t ranksOfAttempt(const std::string& job, int attempt) {
    auto history = store::Reader::open(cluster_.dbPath());
    if (!history.isOk()) return 0;
    auto ranks = (*history)->ranks(job, attempt);
    return ranks.isOk() ? ranks->size() : 0;
  }

  // Every rank of attempt 1 (`ranks` of them) stopped within seconds of `since`, however loaded
  // the machine, and within a second of `leader`'s own rank: the failure reached every agent at
  // once, not on a later beat.
  void expectFirstAttemptEndedTogether(const std::string& job, size_t ranks,
                                       const std::string& leader, double since) {
    auto history = store::Reader::open(cluster_.dbPath());
    ASSERT_TRUE(history.isOk());
    auto first = (*history)->ranks(job, 1);
    ASSERT_TRUE(first.isOk());
    ASSERT_EQ(first->size(), ranks);
    double leader_done = 0;
    for (const auto& rank : *first) {
      if (rank.agent == leader) leader_done = rank.finished_at;
    }
    for (const auto& rank : *first) {
      EXPECT_LT(rank.finished_at - since, 5.0) << "rank " << rank.rank << " on " << rank.agent;
      EXPECT_LT(rank.finished_at - leader_done, 1.0)
          << "rank " << rank.rank << " on " << rank.agent;
    }
  }

  // The job lost `agent` (found within 6 s of `killed_at`), went on without it after one restart
  // and succeeded.
  void expectWentOnWithout(const std::string& job, const std::string& agent, double killed_at) {
    EXPECT_EQ(waitForOutcome(job), "succeeded") << logs();
    auto failures = events(job, "job_failure");
    ASSERT_FALSE(failures.empty()) << logs();
    EXPECT_NE(failures[0].detail.find("agent " + agent + " lost"), std::string::npos)
        << failures[0].detail;
    EXPECT_LT(failures[0].time - killed_at, 6.0);
    auto restarts = events(job, "job_restart");
    ASSERT_EQ(restarts.size(), 1u) << logs();
    EXPECT_NE(restarts[0].detail.find("without " + agent), std::string::npos) << restarts[0].detail;
  }
  void expectHeard(const std::string& agent, const std::string& line) {
    EXPECT_NE(cluster_.agent(agent).stderrText().find(line), std::string::npos)
        << cluster_.agent(agent).stderrText();
  }

  std::string logs() {
    std::string text;
    for (const auto& name : names_) text += cluster_.agent(name).stderrText();
    return text;
  }

  // For each agent, the other agents it holds an established TCP connection to (its gang
  // connections: the only ones an agent opens to another agent's port).
  std::map<std::string, std::set<std::string>> gangConnections() {
    std::map<std::string, std::string> by_port;  // listening port -> agent
    std::map<pid_t, std::string> by_pid;
    for (const auto& name : names_) {
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
  std::vector<std::string> names_;
};

}  // namespace ringmaster::testing
