// One copy of a job whatever the network does (DESIGN.md §3 "One copy"): agents in network
// namespaces of their own, the links between them cut at the router for longer than the job's
// rejoin timeout while the client, in the root namespace, still reaches every agent. Ground
// truth comes from the ranks' own processes (RankTruth), not from `status`: only the side that
// holds a majority of the attempt's agents trains again; the other side's ranks stop and never
// start an attempt of their own; at the heal it learns it was left out and leaves; `stop --wait`
// leaves no rank anywhere.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "harness.h"
#include "namespace_network.h"
#include "rank_truth.h"
#include "ringmaster/util/wall_clock.h"

namespace ringmaster::testing {
namespace {

using nlohmann::json;

// One rank per agent, a small model: steps of a few milliseconds over the veths, for minutes.
std::string spec(int agents, const std::string& restart) {
  std::string placement;
  for (int i = 1; i <= agents; ++i) {
    placement += std::string(i > 1 ? ", " : "") + "{agent: a" + std::to_string(i) + ", ranks: 1}";
  }
  return "name: split\nlauncher: native\nplacement: [" + placement + "]\nrestart: " + restart + R"(
native:
  model: {kind: mlp, hidden: [64], activation: relu, task: classification}
  dataset: {kind: synthetic, samples: 4000, features: 16, classes: 4, seed: 3}
  batch_size: 16
  epochs: 1000
  optimizer: {name: sgd, lr: 0.05, momentum: 0.9}
  checkpoint: {every_steps: 40}
  seed: 1
)";
}

class GangPartitionTest : public ::testing::Test {
 protected:
  void start(int agents) {
    if (std::string why; !network_.create("rmsplit", agents, 40, "", &why)) {
      GTEST_SKIP() << "cannot make network namespaces here: " << why;
    }
    for (int i = 0; i < agents; ++i) {
      std::string error;
      ASSERT_TRUE(cluster_.addAgent(name(i), 1, &error, {}, network_.host(i))) << error;
    }
  }
  static std::string name(int i) { return "a" + std::to_string(i + 1); }
  std::string dir(int i) { return cluster_.agent(name(i)).stateDir(); }

  std::string submit(int agents, const std::string& restart) {
    auto submitted =
        cluster_.ctl({"submit", cluster_.writeSpec("job.yaml", spec(agents, restart))});
    EXPECT_EQ(submitted.exit_code, 0) << submitted.err;
    return submitted.firstLine();
  }
  // Until every agent's rank has trained a while in attempt 1.
  void waitForTraining(const RankTruth& truth, int agents) {
    ASSERT_TRUE(waitUntil(
        [&] {
          int advancing = 0;
          for (int i = 0; i < agents; ++i) advancing += truth.lastAdvance(dir(i)) > 0;
          return advancing == agents;
        },
        std::chrono::seconds(90)))
        << logs(agents);
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  // Every path between the two sides dropped both ways (or let through again).
  void split(const std::vector<int>& one, const std::vector<int>& other, bool cut) {
    for (int i : one) {
      for (int j : other) {
        std::string why;
        ASSERT_TRUE(network_.setPath(i, j, !cut, &why)) << why;
        ASSERT_TRUE(network_.setPath(j, i, !cut, &why)) << why;
      }
    }
  }
  std::string logs(int agents) {
    std::string text;
    for (int i = 0; i < agents; ++i) {
      text += "--- " + name(i) + "\n" + cluster_.agent(name(i)).stderrText();
    }
    return text;
  }
  bool says(int i, const std::string& words) {
    return cluster_.agent(name(i)).stderrText().find(words) != std::string::npos;
  }
  json status(const std::string& job) {
    auto parsed = json::parse(cluster_.ctl({"status", job, "--json"}).out, nullptr, false);
    return parsed.is_object() ? parsed : json::object();
  }

  // The scenario every test runs: `minority` cut off from `majority` for `cut_for`, longer
  // than the rejoin timeout. The majority trains again within 10 s, the minority's ranks stop
  // within 5 s and never train again; at the heal the minority leaves; then `stop --wait` ends
  // the job everywhere.
  void expectOneCopyThrough(const std::vector<int>& majority, const std::vector<int>& minority,
                            const std::string& restart) {
    const int agents = static_cast<int>(majority.size() + minority.size());
    const std::string job = submit(agents, restart);
    RankTruth truth(job);
    waitForTraining(truth, agents);
    const double cut_at = unixSeconds();
    split(majority, minority, true);

    for (int i : majority) {
      EXPECT_TRUE(waitUntil([&] { return truth.firstAdvance(dir(i), 2, cut_at) > 0; },
                            std::chrono::seconds(10)))
          << name(i) << " did not train again within 10 s of the cut\n"
          << logs(agents);
    }
    for (int i : majority) {
      std::printf("%s trains again %.1f s after the cut\n", name(i).c_str(),
                  truth.firstAdvance(dir(i), 2, cut_at) - cut_at);
    }
    std::this_thread::sleep_for(std::chrono::seconds(12));  // past the rejoin timeout (5 s)
    for (int i : minority) {
      std::printf("%s last advanced %.1f s after the cut\n", name(i).c_str(),
                  truth.lastAdvance(dir(i)) - cut_at);
      EXPECT_LT(truth.lastAdvance(dir(i)), cut_at + 5) << name(i) << " trained on after the cut";
      EXPECT_EQ(truth.firstAdvance(dir(i), 2, cut_at), 0)
          << name(i) << " started an attempt of its own\n"
          << logs(agents);
    }
    // The minority's leader (its first agent in line) says why it waits.
    EXPECT_TRUE(says(minority.front(), "no majority here")) << logs(agents);
    split(majority, minority, false);
    for (int i : minority) {
      EXPECT_TRUE(
          waitUntil([&] { return says(i, "this agent leaves the job"); }, std::chrono::seconds(15)))
          << logs(agents);
    }
    EXPECT_EQ(truth.twoCopiesAdvancing(), "");
    EXPECT_NE(status(job).value("state", ""), "failed");

    auto stopped = cluster_.ctl({"stop", job, "--wait", "--timeout", "30"});
    EXPECT_EQ(stopped.exit_code, 0) << stopped.out << stopped.err;
    EXPECT_TRUE(waitUntil([&] { return truth.processes() == 0; }, std::chrono::seconds(10)))
        << truth.processes() << " rank(s) of the job still run";
    for (int i : minority) {
      EXPECT_EQ(truth.firstAdvance(dir(i), 2, cut_at), 0) << name(i) << " trained after the heal";
    }
  }

  NamespaceNetwork network_;
  Cluster cluster_;
};

constexpr const char* kGoOnWithOne =
    "{max_restarts: 3, backoff_seconds: 0.2, min_nodes: 1, rejoin_timeout_seconds: 5}";

// Before the majority rule, a3 waited out the rejoin timeout and then trained an attempt 2 of its
// own, world size 1, beside the real one.
TEST_F(GangPartitionTest, AnAgentCutOffLongerThanTheRejoinTimeoutNeverTrainsAlone) {
  start(3);
  expectOneCopyThrough({0, 1}, {2}, kGoOnWithOne);
}

// Before, the cut-off leader restarted alone at once and the other two, 60 s later, again.
TEST_F(GangPartitionTest, ALeaderCutOffWaitsAndTheOthersGoOnAtOnce) {
  start(3);
  expectOneCopyThrough({1, 2}, {0}, kGoOnWithOne);
}

// An even split: the side with the attempt's first agent goes on. Before, both halves trained.
TEST_F(GangPartitionTest, ATwoTwoSplitTrainsOnlyTheHalfWithTheFirstAgent) {
  start(4);
  expectOneCopyThrough(
      {0, 1}, {2, 3},
      "{max_restarts: 3, backoff_seconds: 0.2, min_nodes: 2, rejoin_timeout_seconds: 5}");
}

}  // namespace
}  // namespace ringmaster::testing
