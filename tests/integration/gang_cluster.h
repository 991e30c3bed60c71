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
