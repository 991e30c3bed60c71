// One copy of a job whatever the network does (DESIGN.md §3 "One copy"): agents in network
// namespaces of their own, the links between them cut at the router for longer than the job's
// rejoin timeout while the client, in the root namespace, still reaches every agent. Ground
// truth comes from the ranks' own processes (RankTruth), not from `status`: only the side that
// holds a majority of the attempt's agents trains again; the other side's ranks stop and never
// start an attempt of their own; at the heal it learns it was left out and leaves; `stop --wait`
// leaves no rank anywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "harness.h"
#include "namespace_network.h"
#include "rank_truth.h"
#include "ringmaster/store/reader.h"
#include "ringmaster/util/wall_clock.h"

namespace ringmaster::testing {
namespace {

using nlohmann::json;

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
    auto submitted = cluster_.ctl(
        {"submit", cluster_.writeSpec("job.yaml", longNativeSpec("split", agents, 1, restart))});
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
  // Every path between the two sides dropped both ways (or let through again); with
  // `one_way`, only what `other` sends to `one`.
  void split(const std::vector<int>& one, const std::vector<int>& other, bool cut,
             bool one_way = false) {
    for (int i : one) {
      for (int j : other) {
        std::string why;
        if (!one_way) ASSERT_TRUE(network_.setPath(i, j, !cut, &why)) << why;
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
                            const std::string& restart, bool one_way = false) {
    const int agents = static_cast<int>(majority.size() + minority.size());
    const std::string job = submit(agents, restart);
    RankTruth truth(job);
    waitForTraining(truth, agents);
    const double cut_at = unixSeconds();
    split(majority, minority, true, one_way);

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
    split(majority, minority, false, one_way);
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

// One-way loss: what a3 sends is dropped, what it is sent arrives (its TCP acknowledgements do
// not). The others lose it as in a cut; a3 still hears the first agent's beats for a while, then
// nothing: it never trains alone either.
TEST_F(GangPartitionTest, AnAgentWhoseOwnPacketsAreLostIsCutOffAndNeverTrainsAlone) {
  start(3);
  expectOneCopyThrough({0, 1}, {2}, kGoOnWithOne, /*one_way=*/true);
}

// The client cut off from every agent (the agents still reach each other): the job reads
// unknown while its agents cannot be asked, its ranks train on without a pause or a restart,
// and once the client reaches them again it reads what the agents say.
TEST_F(GangPartitionTest, AClientCutOffFromEveryAgentSeesUnknownAndTrainingNeverPauses) {
  start(3);
  const std::string job = submit(3, kGoOnWithOne);
  RankTruth truth(job);
  waitForTraining(truth, 3);
  ASSERT_EQ(status(job).value("state", ""), "running");
  const double cut_at = unixSeconds();
  for (int i = 0; i < 3; ++i) {
    std::string why;
    ASSERT_TRUE(network_.setClientPath(i, false, &why)) << why;
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const json cut_off = status(job);
  EXPECT_EQ(cut_off.value("state", ""), "unknown") << cut_off.dump();
  std::this_thread::sleep_for(std::chrono::seconds(12));
  const double heal_at = unixSeconds();
  for (int i = 0; i < 3; ++i) {
    std::string why;
    ASSERT_TRUE(network_.setClientPath(i, true, &why)) << why;
  }
  json healed;
  EXPECT_TRUE(waitUntil(
      [&] {
        healed = status(job);
        return healed.value("state", "") == "running";
      },
      std::chrono::seconds(20)))
      << healed.dump();
  EXPECT_EQ(healed.value("attempt", 0), 1) << healed.dump();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(truth.firstAdvance(dir(i), 2, cut_at), 0) << name(i) << " restarted\n" << logs(3);
    EXPECT_GT(truth.lastAdvance(dir(i)), heal_at - 1) << name(i) << " stopped training";
  }
  // Steps went on through the cut: no gap of more than 2 s between two readings that advanced.
  double last = cut_at, widest = 0;
  for (const auto& advance : truth.advances()) {
    if (advance.agent_dir != dir(0) || advance.time < cut_at || advance.time > heal_at) continue;
    widest = std::max(widest, advance.time - last);
    last = advance.time;
  }
  EXPECT_LT(widest, 2.0) << "a1's rank paused during the cut";
  auto stopped = cluster_.ctl({"stop", job, "--wait", "--timeout", "30"});
  EXPECT_EQ(stopped.exit_code, 0) << stopped.out << stopped.err;
}

// A cut between the first two agents alone, each still hearing the third: both see themselves
// with a majority (2 of 3, the third counted by each). The third adopts one attempt 2 and refuses
// the other, whose proposer leaves: one copy trains, and nobody waits at a rendezvous that cannot
// fill.
TEST_F(GangPartitionTest, ACutBetweenTheFirstTwoAgentsAloneTrainsOneCopy) {
  start(3);
  const std::string job = submit(3, kGoOnWithOne);
  RankTruth truth(job);
  waitForTraining(truth, 3);
  const double cut_at = unixSeconds();
  split({0}, {1}, true);
  EXPECT_TRUE(waitUntil([&] { return truth.firstAdvance(dir(2), 2, cut_at) > 0; },
                        std::chrono::seconds(10)))
      << "a3 did not train again within 10 s of the cut\n"
      << logs(3);
  // The monitor reads each rank's files in turn: a3's partner may be read advancing a moment
  // after a3 itself.
  const auto trains = [&](int agent) { return truth.firstAdvance(dir(agent), 2, cut_at) > 0; };
  EXPECT_TRUE(waitUntil([&] { return trains(0) || trains(1); }, std::chrono::seconds(5)))
      << "a3 trains alone\n"
      << logs(3);
  const bool a1_trains = trains(0);
  const bool a2_trains = trains(1);
  EXPECT_NE(a1_trains, a2_trains) << "one of a1 and a2 trains with a3\n" << logs(3);
  const int left_out = a1_trains ? 1 : 0;
  EXPECT_TRUE(waitUntil([&] { return says(left_out, "this agent leaves the job"); },
                        std::chrono::seconds(10)))
      << logs(3);
  std::this_thread::sleep_for(std::chrono::seconds(5));
  EXPECT_EQ(truth.firstAdvance(dir(left_out), 2, cut_at), 0) << logs(3);
  EXPECT_EQ(truth.twoCopiesAdvancing(), "");
  split({0}, {1}, false);
  auto stopped = cluster_.ctl({"stop", job, "--wait", "--timeout", "30"});
  EXPECT_EQ(stopped.exit_code, 0) << stopped.out << stopped.err;
  EXPECT_TRUE(waitUntil([&] { return truth.processes() == 0; }, std::chrono::seconds(10)))
      << truth.processes() << " rank(s) of the job still run";
  // The history holds one attempt 2: the proposal a3 refused left no record (its proposer
  // journals an attempt only once a majority took it up).
  ASSERT_EQ(cluster_.ctl({"sync"}).exit_code, 0);
  auto history = store::Reader::open(cluster_.dbPath());
  ASSERT_TRUE(history.isOk()) << history.status().message();
  int restarts = 0;
  for (const auto& event : (*history)->events(job).value()) {
    if (event.kind == "job_restart") {
      ++restarts;
      EXPECT_NE(event.agent, name(left_out)) << event.detail;
    }
  }
  EXPECT_EQ(restarts, 1);
  for (const auto& rank : (*history)->ranks(job, 2).value()) {
    EXPECT_NE(rank.agent, name(left_out)) << "rank " << rank.rank << " of the refused proposal";
  }
}

}  // namespace
}  // namespace ringmaster::testing
