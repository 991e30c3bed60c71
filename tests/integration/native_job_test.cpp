// `launcher: native` end to end: ringmaster-worker ranks on two agents rendezvous through rank 0's
// agent, train an MLP data-parallel with Gloo allreduces, and report metrics into SQLite.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "harness.h"

namespace ringmaster::testing {
namespace {

using nlohmann::json;

const char* kNativeSpec = R"(name: native4
launcher: native
placement: [{agent: a1, ranks: 2}, {agent: a2, ranks: 2}]
native:
  model: {kind: mlp, hidden: [64, 32], activation: relu, task: classification}
  dataset: {kind: synthetic, samples: 8000, features: 16, classes: 4, seed: 3}
  batch_size: 32
  epochs: 3
  optimizer: {name: sgd, lr: 0.05, momentum: 0.9, warmup_steps: 10, schedule: cosine}
  checkpoint: {every_steps: 50}
  seed: 1
)";

class NativeJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(cluster_.addAgent("a1", 2, &error)) << error;
    ASSERT_TRUE(cluster_.addAgent("a2", 2, &error)) << error;
  }
  json metric(const std::string& job, const std::string& name) {
    return json::parse(cluster_.ctl({"metrics", job, "--name", name, "--format", "json"}).out);
  }
  Cluster cluster_;
};

TEST_F(NativeJobTest, FourRanksOnTwoAgentsTrainToHighAccuracyWithIdenticalParameters) {
  auto submitted =
      cluster_.ctl({"submit", cluster_.writeSpec("native.yaml", kNativeSpec), "--wait"}, 240000);
  const std::string job = submitted.firstLine();
  ASSERT_EQ(submitted.exit_code, 0)
      << submitted.out << submitted.err << cluster_.ctl({"logs", job}).out;

  // Every rank ends with bit-identical parameters.
  json checksums = metric(job, "param_checksum");
  ASSERT_EQ(checksums.size(), 4u);
  std::set<double> distinct;
  for (const auto& c : checksums) distinct.insert(c["value"].get<double>());
  EXPECT_EQ(distinct.size(), 1u) << checksums.dump();

  // Held-out accuracy after the last epoch, on every rank.
  json accuracy = metric(job, "accuracy");
  ASSERT_EQ(accuracy.size(), 4u * 3u);  // 4 ranks x 3 epochs
  for (const auto& a : accuracy) {
    if (a["step"] == checksums[0]["step"]) {
      EXPECT_GE(a["value"].get<double>(), 0.95) << a.dump();
    }
  }
  // Loss, lr, throughput and timing every step, stored once each; loss falls.
  json loss = metric(job, "loss");
  const int steps = checksums[0]["step"].get<int>();
  EXPECT_EQ(loss.size(), 4u * static_cast<size_t>(steps));
  EXPECT_LT(loss[static_cast<size_t>(steps) - 1]["value"].get<double>(),
            loss[0]["value"].get<double>());
  for (const char* name : {"lr", "samples_per_sec", "step_time", "comm_time"}) {
    EXPECT_EQ(metric(job, name).size(), 4u * static_cast<size_t>(steps)) << name;
  }
  // Every rank says when it saved a checkpoint (the dashboard's events): every 50 steps and at
  // the end.
  json saved = metric(job, "checkpoint");
  EXPECT_GE(saved.size(), 4u * (static_cast<size_t>(steps) / 50)) << saved.dump();
  for (const auto& point : saved) {
    const int step = point["step"].get<int>();
    EXPECT_TRUE(step % 50 == 0 || step == steps) << point.dump();
  }
  // Checkpoints were written on both hosts.
  for (const char* agent : {"a1", "a2"}) {
    const std::string dir = cluster_.agent(agent).stateDir() + "/jobs/" + job + "/checkpoints";
    size_t files = 0;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
      files += entry.path().extension() == ".rmck" ? 1 : 0;
    }
    EXPECT_GT(files, 0u) << dir;
  }
}

// A rank 0 killed between making its shared-memory segment and unlinking it (the moment every
// rank has mapped it) left the segment in /dev/shm, RAM until reboot, 8 times in 10: its agent
// now removes what a rank made when the rank is gone. A watcher kills rank 0 the instant its
// segment appears, twenty jobs in a row (issue 34); none leaves a segment.
TEST_F(NativeJobTest, ARank0KilledAtItsSegmentsCreationLeavesNoSegment) {
  namespace fs = std::filesystem;
  const std::string spec = cluster_.writeSpec(
      "shm.yaml",
      std::string(kNativeSpec).replace(std::string(kNativeSpec).find("native4"), 7, "shmkill"));
  int caught = 0;
  for (int run = 0; run < 20; ++run) {
    auto submitted = cluster_.ctl({"submit", spec});
    ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
    const std::string job = submitted.firstLine();
    std::atomic<bool> done{false};
    std::set<pid_t> killed;
    std::thread watcher([&] {
      while (!done) {
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator("/dev/shm", ec)) {
          const std::string name = entry.path().filename().string();
          if (name.rfind("ringmaster-", 0) != 0) continue;
          const pid_t pid = std::atoi(name.c_str() + 11);
          const std::string env = readFile("/proc/" + std::to_string(pid) + "/environ");
          if (killed.count(pid) ||
              env.find("RINGMASTER_JOB_ID=" + job + '\0') == std::string::npos) {
            continue;
          }
          ::kill(pid, SIGKILL);
          killed.insert(pid);
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
    const bool over = waitUntil(
        [&] {
          const std::string state =
              json::parse(cluster_.ctl({"status", job, "--json"}).out).value("state", "");
          return state == "failed" || state == "succeeded";
        },
        std::chrono::seconds(60));
    done = true;
    watcher.join();
    ASSERT_TRUE(over);
    caught += static_cast<int>(killed.size());
    for (pid_t pid : killed) {
      std::error_code ec;
      for (const auto& entry : fs::directory_iterator("/dev/shm", ec)) {
        EXPECT_NE(
            entry.path().filename().string().rfind("ringmaster-" + std::to_string(pid) + "-", 0),
            0u)
            << entry.path() << " outlived rank 0 (pid " << pid << ")";
      }
    }
  }
  EXPECT_GT(caught, 0) << "the watcher never caught a segment: the test proved nothing";
}

TEST_F(NativeJobTest, BadNativeSectionIsRejectedBeforeAnyAgentSeesIt) {
  auto spec = cluster_.writeSpec("bad-native.yaml",
                                 "name: bad\nlauncher: native\nworld_size: 2\nnative:\n"
                                 "  model: {kind: mlp, hidden: [64], activation: swish}\n"
                                 "  optimizer: {name: sgd, lr: -1}\n  epochs: 1\n");
  auto result = cluster_.ctl({"submit", spec});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("activation"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("lr"), std::string::npos) << result.err;
  EXPECT_EQ(json::parse(cluster_.ctl({"runs", "--json"}).out).size(), 0u);
}

}  // namespace
}  // namespace ringmaster::testing
