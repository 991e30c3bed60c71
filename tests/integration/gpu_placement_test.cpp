// GPU placement end to end, on any machine: an agent limited to four GPUs with `--gpus 0,1,2,3`
// (declared: on a host without NVML the list is taken as it is) shows each torchrun rank the
// same four devices with LOCAL_RANK 0-3, refuses a backend nccl job of 8 ranks at submit naming
// the agent, its GPUs and the ranks, and puts a backend auto job with more ranks than GPUs on the
// CPU, with `ringmasterctl status` saying why.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "harness.h"

namespace ringmaster::testing {
namespace {

using nlohmann::json;

class GpuPlacementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    if (!cluster_.addAgent("gpu4", 8, &error, {"--gpus", "0,1,2,3"})) {
      const std::string why = readFile(cluster_.dir() + "/agents/gpu4.stderr");
      // With NVML the list must name real GPUs: a host with fewer than four cannot run this.
      if (why.find("is not one of its GPUs") != std::string::npos) GTEST_SKIP() << why;
      FAIL() << error << why;
    }
  }
  Cluster cluster_;
};

TEST_F(GpuPlacementTest, TorchrunRanksSeeTheAgentsFourGpusAndLocalRankPicks) {
  const std::string spec = cluster_.writeSpec("torchrun.yaml", R"(name: visible
launcher: torchrun
world_size: 4
backend: nccl
command: [/bin/sh, -c, 'echo "visible=$CUDA_VISIBLE_DEVICES local=$LOCAL_RANK order=$CUDA_DEVICE_ORDER"']
)");
  auto submitted = cluster_.ctl({"submit", spec, "--wait"}, 60000);
  const std::string job = submitted.firstLine();
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  std::set<std::string> lines;
  for (int rank = 0; rank < 4; ++rank) {
    auto log = cluster_.ctl({"logs", job, "--rank", std::to_string(rank)});
    ASSERT_EQ(log.exit_code, 0) << log.err;
    lines.insert(log.out.substr(0, log.out.find('\n')));
  }
  EXPECT_EQ(lines, (std::set<std::string>{"visible=0,1,2,3 local=0 order=PCI_BUS_ID",
                                          "visible=0,1,2,3 local=1 order=PCI_BUS_ID",
                                          "visible=0,1,2,3 local=2 order=PCI_BUS_ID",
                                          "visible=0,1,2,3 local=3 order=PCI_BUS_ID"}));
  // The history names the GPU each rank used.
  json status = json::parse(cluster_.ctl({"status", job, "--json"}).out);
  ASSERT_EQ(status["ranks"].size(), 4u);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(status["ranks"][rank]["device"], "GPU " + std::to_string(rank)) << status.dump();
  }
}

TEST_F(GpuPlacementTest, NcclJobOfEightRanksIsRefusedAtSubmitNamingAgentGpusAndRanks) {
  // Eight ranks, placed explicitly or by world_size; the rest of the spec does not matter.
  const std::string rest =
      "backend: nccl\nnative:\n  model: {kind: mlp, hidden: [8]}\n"
      "  dataset: {kind: synthetic, samples: 256, features: 4, classes: 2}\n  epochs: 1\n";
  const std::string placed = cluster_.writeSpec(
      "placed.yaml",
      "name: too-many\nlauncher: native\nplacement: [{agent: gpu4, ranks: 8}]\n" + rest);
  auto refused = cluster_.ctl({"submit", placed});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("backend nccl needs one GPU per rank, and agent 'gpu4' has 4 GPUs "
                             "for 8 ranks"),
            std::string::npos)
      << refused.err;

  const std::string sized =
      cluster_.writeSpec("sized.yaml", "name: too-many\nlauncher: native\nworld_size: 8\n" + rest);
  refused = cluster_.ctl({"submit", sized});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("asks for 8 ranks on agents with 4 GPUs in all (gpu4: 4)"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(cluster_.ctl({"runs"}).out.find("too-many"), std::string::npos);  // nothing ran
}

TEST_F(GpuPlacementTest, AutoWithMoreRanksThanGpusTrainsOnTheCpuAndStatusSaysWhy) {
  const std::string spec = cluster_.writeSpec("auto.yaml", R"(name: auto-cpu
launcher: native
world_size: 6
backend: auto
native:
  model: {kind: mlp, hidden: [16]}
  dataset: {kind: synthetic, samples: 1200, features: 4, classes: 2, seed: 1}
  batch_size: 50
  epochs: 1
)");
  auto submitted = cluster_.ctl({"submit", spec, "--wait"}, 120000);
  const std::string job = submitted.firstLine();
  ASSERT_EQ(submitted.exit_code, 0)
      << submitted.out << submitted.err << cluster_.ctl({"logs", job}).out;
  auto status = cluster_.ctl({"status", job});
  EXPECT_NE(status.out.find("on the CPU: agent 'gpu4' has 4 GPUs for 6 ranks, so backend auto "
                            "trains on the CPU with Gloo"),
            std::string::npos)
      << status.out;
  EXPECT_NE(status.out.find("gpu4   CPU"), std::string::npos) << status.out;
}

TEST(GpuLimit, AnAgentRefusesToStartWithAGpuListItCannotUse) {
  TempDir dir;
  AgentProcess agent;
  std::string error;
  EXPECT_FALSE(agent.start("bad", dir.path() + "/state", 2, &error, {"--gpus", "0,0"}));
  EXPECT_NE(agent.stderrText().find("--gpus names GPU '0' twice"), std::string::npos)
      << error << agent.stderrText();
}

}  // namespace
}  // namespace ringmaster::testing
