// An agent that restarts takes up its jobs again (gang_ledger.h): after a clean shutdown
// (SIGTERM, as `systemctl restart` sends) or a crash (SIGKILL), started again on the same port
// as systemd would, a job with restarts left trains again from its newest checkpoint, with
// every agent of the attempt. Ground truth comes from the ranks' own processes (RankTruth);
// `status` is checked against it: never `running` while no rank runs.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "harness.h"
#include "rank_truth.h"
#include "ringmaster/util/wall_clock.h"

namespace ringmaster::testing {
namespace {

using nlohmann::json;

class AgentRestartTest : public ::testing::Test {
 protected:
  void start(int agents) {
    for (int i = 1; i <= agents; ++i) {
      std::string error;
      ASSERT_TRUE(cluster_.addAgent("a" + std::to_string(i), 2, &error)) << error;
    }
    agents_ = agents;
  }
  std::string dir(const std::string& agent) { return cluster_.agent(agent).stateDir(); }
  std::string submit(int ranks, const std::string& restart) {
    auto submitted = cluster_.ctl(
        {"submit",
         cluster_.writeSpec("job.yaml", longNativeSpec("restarted", agents_, ranks, restart))});
    EXPECT_EQ(submitted.exit_code, 0) << submitted.err;
    return submitted.firstLine();
  }
  json status(const std::string& job) {
    auto parsed = json::parse(cluster_.ctl({"status", job, "--json"}).out, nullptr, false);
    return parsed.is_object() ? parsed : json::object();
  }
  std::string logs() {
    std::string text;
    for (int i = 1; i <= agents_; ++i) {
      const std::string name = "a" + std::to_string(i);
      const std::string before = dir(name) + "/../" + name + ".stderr.before-restart";
      text += "--- " + name + " (before its restart)\n" + readFile(before);
      text += "--- " + name + "\n" + cluster_.agent(name).stderrText();
    }
    return text;
  }
  void waitForTraining(const RankTruth& truth) {
    ASSERT_TRUE(waitUntil(
        [&] {
          for (int i = 1; i <= agents_; ++i) {
            if (truth.lastAdvance(dir("a" + std::to_string(i))) == 0) return false;
          }
          return true;
        },
        std::chrono::seconds(90)))
        << logs();
    std::this_thread::sleep_for(std::chrono::seconds(3));  // past the first checkpoints
  }
  // Restarts `agent` with `signal`, down for `down_for`; then every agent's ranks must train
  // in attempt 2 within 10 s of its return, and `status` must never have said `running` while
  // no rank of the job ran. Returns the job's status once it trains again.
  json expectItTrainsAgain(const std::string& job, RankTruth& truth, const std::string& agent,
                           int signal, std::chrono::milliseconds down_for) {
    // The client has followed the job, as the app or a `status` before would have.
    EXPECT_EQ(cluster_.ctl({"sync"}).exit_code, 0);
    std::atomic<bool> watching{true};
    std::string lie;  // the first status that said running with no rank running
    std::thread watcher([&] {
      while (watching) {
        const json now = status(job);
        bool any_running = false;
        for (const auto& r : now.value("ranks", json::array())) {
          any_running = any_running || r.value("state", "") == "running";
        }
        if (now.value("state", "") == "running" && !any_running && lie.empty()) lie = now.dump();
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
      }
    });
    std::string error;
    const double down_at = unixSeconds();
    EXPECT_TRUE(cluster_.restartAgent(agent, signal, down_for, &error)) << error;
    const double back_at = unixSeconds();
    for (int i = 1; i <= agents_; ++i) {
      const std::string name = "a" + std::to_string(i);
      EXPECT_TRUE(waitUntil([&] { return truth.firstAdvance(dir(name), 2, back_at) > 0; },
                            std::chrono::seconds(10)))
          << name << " did not train again within 10 s of " << agent << "'s return\n"
          << logs();
      std::printf("%s trains again %.1f s after %s is back (down %.1f s)\n", name.c_str(),
                  truth.firstAdvance(dir(name), 2, back_at) - back_at, agent.c_str(),
                  back_at - down_at);
    }
    // The status catches up with the ranks within a sync or two.
    json now;
    EXPECT_TRUE(waitUntil(
        [&] {
          now = status(job);
          return now.value("state", "") == "running" && now.value("attempt", 0) == 2;
        },
        std::chrono::seconds(10)))
        << now.dump();
    watching = false;
    watcher.join();
    EXPECT_EQ(lie, "") << "status said running while no rank ran";
    EXPECT_EQ(truth.twoCopiesAdvancing(), "");
    return now;
  }
  // `stop --wait` ends the job on every agent: no rank process of it is left.
  void expectStopEndsIt(const std::string& job, const RankTruth& truth) {
    auto stopped = cluster_.ctl({"stop", job, "--wait", "--timeout", "30"});
    EXPECT_EQ(stopped.exit_code, 0) << stopped.out << stopped.err << logs();
    EXPECT_EQ(truth.processes(), 0);
  }

  Cluster cluster_;
  int agents_ = 0;
};

// `systemctl restart` of the only agent: the ranks checkpoint and stop, and once the agent is
// back the job goes on from its checkpoint as attempt 2, without using its one restart.
TEST_F(AgentRestartTest, ACleanShutdownResumesTheJobWithoutUsingARestart) {
  start(1);
  const std::string job = submit(2, "{max_restarts: 1}");
  RankTruth truth(job);
  waitForTraining(truth);
  const json now = expectItTrainsAgain(job, truth, "a1", SIGTERM, std::chrono::seconds(1));
  EXPECT_EQ(now.value("restarts_left", -1), 1) << now.dump();
  const std::string log = readFile(dir("a1") + "/jobs/" + job + "/attempt-2/rank-0.log");
  EXPECT_NE(log.find("resumed from"), std::string::npos) << log;
  EXPECT_NE(logs().find("shut down while attempt 1 ran"), std::string::npos) << logs();
  expectStopEndsIt(job, truth);
}

// A crash of an agent in the middle of the line, back 2 s later (before the others count it
// lost): every agent trains attempt 2 together, and the restart counts.
TEST_F(AgentRestartTest, AKilledAgentTakesUpItsJobAndEveryAgentGoesOn) {
  start(3);
  const std::string job = submit(1, "{max_restarts: 2}");
  RankTruth truth(job);
  waitForTraining(truth);
  const json now = expectItTrainsAgain(job, truth, "a2", SIGKILL, std::chrono::seconds(2));
  EXPECT_EQ(now.value("restarts_left", -1), 1) << now.dump();
  EXPECT_NE(logs().find("taken up again after the agent restarted"), std::string::npos) << logs();
  expectStopEndsIt(job, truth);
}

// The first agent (the leader) crashes and stays down past the others' 4 s of silence: the
// other one finds its port refused, waits for it (the job needs both), and takes it back when it
// answers again.
TEST_F(AgentRestartTest, AKilledLeaderDownLongerThanTheSilenceLimitIsWaitedFor) {
  start(2);
  const std::string job = submit(1, "{max_restarts: 2, rejoin_timeout_seconds: 60}");
  RankTruth truth(job);
  waitForTraining(truth);
  const json now = expectItTrainsAgain(job, truth, "a1", SIGKILL, std::chrono::seconds(6));
  EXPECT_EQ(now.value("restarts_left", -1), 1) << now.dump();
  EXPECT_NE(logs().find("a1 answers again"), std::string::npos) << logs();
  expectStopEndsIt(job, truth);
}

}  // namespace
}  // namespace ringmaster::testing
