// The tensorflow and deepspeed launchers for real: 2 agents on loopback, 2 ranks each, every rank
// a script that reads what it was given as the framework's own sources read it
// (tests/integration/contracts/*.py: TensorFlow's TF_CONFIG parsing and cluster validation,
// DeepSpeed's launch.py environment, init_distributed's and the engine's checks) and then meets
// the other ranks at the addresses it was given. Neither framework is installed here: the
// contracts are tested, not the frameworks.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "harness.h"

namespace ringmaster::testing {
namespace {

using nlohmann::json;

class LauncherContractTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(cluster_.addAgent("a1", 2, &error)) << error;
    ASSERT_TRUE(cluster_.addAgent("a2", 2, &error)) << error;
  }
  // Submits `spec_tail` on 2 agents x 2 ranks and returns each rank's CONTRACT line, parsed.
  std::vector<json> runContract(const std::string& name, const std::string& spec_tail) {
    const std::string spec = cluster_.writeSpec(
        name + ".yaml", "name: " + name + "\n" + spec_tail +
                            "placement: [{agent: a1, ranks: 2}, {agent: a2, ranks: 2}]\n");
    auto submitted = cluster_.ctl({"submit", spec, "--wait"}, 120000);
    job_ = submitted.firstLine();
    std::vector<json> contracts;
    for (int rank = 0; rank < 4; ++rank) {
      const std::string log = cluster_.ctl({"logs", job_, "--rank", std::to_string(rank)}).out;
      std::smatch m;
      EXPECT_TRUE(std::regex_search(log, m, std::regex("CONTRACT (\\{.*\\})")))
          << "rank " << rank << ":\n"
          << log;
      contracts.push_back(m.empty() ? json() : json::parse(m[1].str()));
    }
    EXPECT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
    return contracts;
  }
  Cluster cluster_;
  std::string job_;
};

// A chief, two workers and a parameter server: each rank's TF_CONFIG passes TensorFlow's checks,
// every rank holds the same cluster, exactly one is the chief, and every task reached every other
// at the address the cluster gives it.
TEST_F(LauncherContractTest, TensorflowGivesEveryRankOneClusterAndItsOwnTask) {
  const auto contracts =
      runContract("tf", "launcher: tensorflow\ncommand: [" +
                            sourcePath("tests/integration/contracts/tf_config_check.py") +
                            "]\ntensorflow: {chief: true, ps: 1}\n");
  ASSERT_EQ(contracts.size(), 4u);
  const std::vector<std::pair<std::string, int>> tasks = {
      {"chief", 0}, {"worker", 0}, {"worker", 1}, {"ps", 0}};
  int chiefs = 0;
  for (int rank = 0; rank < 4; ++rank) {
    const json& c = contracts[static_cast<size_t>(rank)];
    ASSERT_TRUE(c.is_object()) << rank;
    EXPECT_EQ(c["rank"], rank);
    EXPECT_EQ(c["type"], tasks[static_cast<size_t>(rank)].first) << rank;
    EXPECT_EQ(c["index"], tasks[static_cast<size_t>(rank)].second) << rank;
    EXPECT_EQ(c["cluster"], contracts[0]["cluster"]) << "rank " << rank << " sees another cluster";
    EXPECT_EQ(c["tasks_reached"], 3);
    EXPECT_EQ(c["collective_leader"], "/job:chief/replica:0/task:0");
    chiefs += c["is_chief"].get<bool>() ? 1 : 0;
  }
  EXPECT_EQ(chiefs, 1);
  EXPECT_EQ(contracts[1]["worker_count"], 3) << "the chief is a worker too";
  EXPECT_EQ(contracts[2]["id_in_cluster"], 2);
  const json& cluster = contracts[0]["cluster"];
  EXPECT_EQ(cluster["chief"].size(), 1u);
  EXPECT_EQ(cluster["worker"].size(), 2u);
  EXPECT_EQ(cluster["ps"].size(), 1u);
}

// No roles: every rank a worker, worker 0 the chief (MultiWorkerMirroredStrategy's cluster).
TEST_F(LauncherContractTest, TensorflowWithoutRolesMakesWorkerZeroTheChief) {
  const auto contracts =
      runContract("tfw", "launcher: tensorflow\ncommand: [" +
                             sourcePath("tests/integration/contracts/tf_config_check.py") + "]\n");
  ASSERT_EQ(contracts.size(), 4u);
  for (int rank = 0; rank < 4; ++rank) {
    const json& c = contracts[static_cast<size_t>(rank)];
    ASSERT_TRUE(c.is_object()) << rank;
    EXPECT_EQ(c["type"], "worker");
    EXPECT_EQ(c["index"], rank);
    EXPECT_EQ(c["is_chief"], rank == 0);
    EXPECT_EQ(c["worker_count"], 4);
    EXPECT_EQ(c["cluster"].size(), 1u) << c["cluster"].dump();
  }
}

// launch.py's environment per rank, --local_rank=N right after the script and before its own
// arguments, ranks numbered node by node, and the world meeting at MASTER_ADDR:MASTER_PORT.
TEST_F(LauncherContractTest, DeepspeedGivesEachRankLaunchPysEnvironmentAndLocalRank) {
  const auto contracts =
      runContract("ds", "launcher: deepspeed\ncommand: [" +
                            sourcePath("tests/integration/contracts/deepspeed_env_check.py") +
                            ", --steps, \"3\"]\n");
  ASSERT_EQ(contracts.size(), 4u);
  for (int rank = 0; rank < 4; ++rank) {
    const json& c = contracts[static_cast<size_t>(rank)];
    ASSERT_TRUE(c.is_object()) << rank;
    EXPECT_EQ(c["rank"], rank);
    EXPECT_EQ(c["local_rank"], rank % 2);
    EXPECT_EQ(c["args_local_rank"], rank % 2);
    EXPECT_EQ(c["cross_rank"], rank / 2);
    EXPECT_EQ(c["cross_size"], 2);
    EXPECT_EQ(c["local_size"], 2);
    EXPECT_EQ(c["world_size"], 4);
    EXPECT_EQ(c["steps"], 3);
    EXPECT_EQ(c["argv"], json({"--local_rank=" + std::to_string(rank % 2), "--steps", "3"}));
    // launch.py numbers ranks node by node: RANK = CROSS_RANK * LOCAL_SIZE + LOCAL_RANK here.
    EXPECT_EQ(rank, c["cross_rank"].get<int>() * 2 + c["local_rank"].get<int>());
  }
  EXPECT_EQ(contracts[0]["met"], json({1, 2, 3}));
}

// A .py entry point without python: runs under the first python3 on the job's own PATH; the
// launch records which (path, file, version), and a rank that dies because that interpreter has
// no torch says so rather than "exited with code 1".
TEST_F(LauncherContractTest, AnInterpreterWithoutTorchIsNamedAsTheCause) {
  auto real = runCommand({"/usr/bin/python3", "-c",
                          "import os, sys; print(os.path.realpath(sys.executable), end='')"});
  ASSERT_EQ(real.exit_code, 0) << real.err;
  const std::string bin = cluster_.dir() + "/job-bin";
  std::filesystem::create_directories(bin);
  std::filesystem::create_symlink(real.out, bin + "/python3");
  // The real interpreter, with its packages out of reach: a Python that has no torch.
  const std::string script = cluster_.writeSpec(
      "no_torch.py",
      "import sys\nsys.path = [p for p in sys.path if 'packages' not in p]\nimport torch\n");
  const std::string spec = cluster_.writeSpec(
      "notorch.yaml", "name: notorch\nlauncher: torchrun\ncommand: [" + script +
                          "]\nplacement: [{agent: a1, ranks: 1}]\nenv: {PATH: \"" + bin +
                          ":/usr/bin:/bin\"}\n");
  auto submitted = cluster_.ctl({"submit", spec, "--wait"}, 60000);
  EXPECT_NE(submitted.exit_code, 0);
  const std::string version =
      std::regex_replace(real.out, std::regex(".*python([0-9]+\\.[0-9]+)$"), "$1");
  const std::string expected =
      "interpreter " + bin + "/python3 -> " + real.out + ", Python " + version + " has no torch";
  EXPECT_NE(submitted.out.find(expected), std::string::npos) << expected << "\n"
                                                             << submitted.out << submitted.err;
  // submit --wait says which Python ran, on which agent.
  EXPECT_NE(submitted.out.find("python on a1: " + bin + "/python3 -> " + real.out + ", Python " +
                               version + "\n"),
            std::string::npos)
      << submitted.out;
  auto status = cluster_.ctl({"status", submitted.firstLine()});
  EXPECT_NE(status.out.find("has no torch"), std::string::npos) << status.out;
}

}  // namespace
}  // namespace ringmaster::testing
