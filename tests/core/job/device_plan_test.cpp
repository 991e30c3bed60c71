#include "ringmaster/job/device_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ringmaster::job {
namespace {

std::vector<Gpu> gpus(int n) {
  std::vector<Gpu> out;
  for (int i = 0; i < n; ++i) {
    out.push_back({i, "GPU-" + std::to_string(i) + "aaaaaaa-0000", "NVIDIA H100 80GB HBM3"});
  }
  return out;
}

DeviceRequest request(Launcher launcher, Backend backend) {
  DeviceRequest r;
  r.launcher = launcher;
  r.backend = backend;
  return r;
}

TEST(DevicePlan, NativeRanksEachGetTheirOwnGpuByUuid) {
  auto plan = planDevices(request(Launcher::kNative, Backend::kAuto), {{"node1", gpus(8), 8}});
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  EXPECT_TRUE(plan->gpus);
  EXPECT_EQ(plan->cpu_reason, "");
  ASSERT_EQ(plan->ranks.size(), 1u);
  ASSERT_EQ(plan->ranks[0].size(), 8u);
  for (int local = 0; local < 8; ++local) {
    const RankDevices& rank = plan->ranks[0][static_cast<size_t>(local)];
    EXPECT_EQ(rank.cuda_visible_devices, "GPU-" + std::to_string(local) + "aaaaaaa-0000");
    EXPECT_EQ(rank.device, "GPU " + std::to_string(local) + " NVIDIA H100 80GB HBM3 (GPU-" +
                               std::to_string(local) + "aaaaaaa-0000)");
  }
}

TEST(DevicePlan, TorchrunRanksAllSeeEveryGpuAndLocalRankPicks) {
  auto plan = planDevices(request(Launcher::kTorchrun, Backend::kNccl), {{"node1", gpus(4), 4}});
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  const std::string all = "GPU-0aaaaaaa-0000,GPU-1aaaaaaa-0000,GPU-2aaaaaaa-0000,GPU-3aaaaaaa-0000";
  for (int local = 0; local < 4; ++local) {
    EXPECT_EQ(plan->ranks[0][static_cast<size_t>(local)].cuda_visible_devices, all);
    EXPECT_EQ(plan->ranks[0][static_cast<size_t>(local)].device.substr(0, 5),
              "GPU " + std::to_string(local));
  }
}

// deepspeed.launcher.launch shows each rank every GPU of its node, as torchrun does; TensorFlow's
// workers each get one (a worker uses every GPU it sees).
TEST(DevicePlan, DeepspeedRanksSeeEveryGpuAndTensorflowRanksOneEach) {
  auto deepspeed =
      planDevices(request(Launcher::kDeepspeed, Backend::kNccl), {{"node1", gpus(2), 2}});
  auto tensorflow =
      planDevices(request(Launcher::kTensorflow, Backend::kAuto), {{"node1", gpus(2), 2}});
  ASSERT_TRUE(deepspeed.isOk()) << deepspeed.status().toString();
  ASSERT_TRUE(tensorflow.isOk()) << tensorflow.status().toString();
  for (size_t local = 0; local < 2; ++local) {
    EXPECT_EQ(deepspeed->ranks[0][local].cuda_visible_devices,
              "GPU-0aaaaaaa-0000,GPU-1aaaaaaa-0000");
    EXPECT_EQ(tensorflow->ranks[0][local].cuda_visible_devices,
              "GPU-" + std::to_string(local) + "aaaaaaa-0000");
  }
}

TEST(DevicePlan, GpusDeclaredWithoutNvmlAreNamedByIndex) {
  auto plan = planDevices(request(Launcher::kNative, Backend::kAuto),
                          {{"node1", {{0, "", ""}, {2, "", ""}}, 2}});
  ASSERT_TRUE(plan.isOk());
  EXPECT_EQ(plan->ranks[0][0].cuda_visible_devices, "0");
  EXPECT_EQ(plan->ranks[0][1].cuda_visible_devices, "2");
  EXPECT_EQ(plan->ranks[0][1].device, "GPU 2");
}

TEST(DevicePlan, NcclWithMoreRanksThanGpusIsRefusedNamingAgentGpusAndRanks) {
  auto plan = planDevices(request(Launcher::kNative, Backend::kNccl), {{"node1", gpus(4), 8}});
  ASSERT_FALSE(plan.isOk());
  EXPECT_EQ(plan.status().code(), ErrorCode::kInvalidArgument);
  const std::string message = plan.status().message();
  EXPECT_NE(message.find("backend nccl needs one GPU per rank"), std::string::npos) << message;
  EXPECT_NE(message.find("agent 'node1' has 4 GPUs for 8 ranks"), std::string::npos) << message;
}

TEST(DevicePlan, AutoWithMoreRanksThanGpusTrainsEveryRankOnTheCpuAndSaysWhy) {
  auto plan = planDevices(request(Launcher::kNative, Backend::kAuto),
                          {{"node1", gpus(8), 8}, {"node2", gpus(1), 2}});
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  EXPECT_FALSE(plan->gpus);
  EXPECT_EQ(plan->cpu_reason,
            "agent 'node2' has 1 GPU for 2 ranks, so backend auto trains on the CPU with Gloo");
  for (const auto& agent : plan->ranks) {
    for (const RankDevices& rank : agent) {
      EXPECT_EQ(rank.cuda_visible_devices, "");  // every GPU hidden, on node1 too
      EXPECT_EQ(rank.device, "CPU: " + plan->cpu_reason);
    }
  }
}

TEST(DevicePlan, AnAgentWithoutGpuFollowsTheSameRules) {
  const std::vector<AgentDevices> agents = {{"gpu1", gpus(2), 2}, {"cpu1", {}, 1}};
  auto nccl = planDevices(request(Launcher::kTorchrun, Backend::kNccl), agents);
  ASSERT_FALSE(nccl.isOk());
  EXPECT_NE(nccl.status().message().find("agent 'cpu1' has no GPU for 1 rank"), std::string::npos)
      << nccl.status().message();
  auto automatic = planDevices(request(Launcher::kTorchrun, Backend::kAuto), agents);
  ASSERT_TRUE(automatic.isOk());
  EXPECT_FALSE(automatic->gpus);
  EXPECT_EQ(automatic->ranks[0][0].cuda_visible_devices, "");
  EXPECT_NE(automatic->cpu_reason.find("agent 'cpu1' has no GPU for 1 rank"), std::string::npos);
}

TEST(DevicePlan, AutoOnAgentsWithoutAnyGpuIsTheCpuWithNothingToExplain) {
  auto plan = planDevices(request(Launcher::kNative, Backend::kAuto), {{"cpu1", {}, 2}});
  ASSERT_TRUE(plan.isOk());
  EXPECT_FALSE(plan->gpus);
  EXPECT_EQ(plan->cpu_reason, "");
  EXPECT_FALSE(plan->ranks[0][1].cuda_visible_devices.has_value());
  EXPECT_EQ(plan->ranks[0][1].device, "CPU");
  auto command = planDevices(request(Launcher::kCommand, Backend::kAuto), {{"cpu1", {}, 1}});
  ASSERT_TRUE(command.isOk());
  EXPECT_EQ(command->ranks[0][0].device, "");
}

TEST(DevicePlan, GlooLeavesTheEnvironmentAlone) {
  auto plan = planDevices(request(Launcher::kNative, Backend::kGloo), {{"node1", gpus(2), 4}});
  ASSERT_TRUE(plan.isOk());
  EXPECT_FALSE(plan->gpus);
  EXPECT_EQ(plan->cpu_reason, "");
  EXPECT_FALSE(plan->ranks[0][3].cuda_visible_devices.has_value());
  EXPECT_EQ(plan->ranks[0][3].device, "CPU (backend gloo)");
}

TEST(DevicePlan, TheJobsOwnCudaVisibleDevicesIsKeptAndCountsAsItsGpus) {
  DeviceRequest r = request(Launcher::kNative, Backend::kNccl);
  r.job_visible_devices = "2, GPU-3";
  auto plan = planDevices(r, {{"node1", gpus(4), 2}});
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  EXPECT_TRUE(plan->gpus);
  EXPECT_FALSE(plan->ranks[0][0].cuda_visible_devices.has_value());  // the job's env applies
  EXPECT_EQ(plan->ranks[0][0].device.substr(0, 5), "GPU 2");
  EXPECT_EQ(plan->ranks[0][1].device.substr(0, 5), "GPU 3");

  r.job_visible_devices = "1";
  auto too_few = planDevices(r, {{"node1", gpus(4), 2}});
  ASSERT_FALSE(too_few.isOk());
  EXPECT_NE(too_few.status().message().find(
                "agent 'node1' has 1 GPU in the job's CUDA_VISIBLE_DEVICES for 2 ranks"),
            std::string::npos)
      << too_few.status().message();
}

TEST(DevicePlan, AJobGpuTheAgentDoesNotHaveIsAnErrorNamingIt) {
  DeviceRequest r = request(Launcher::kTorchrun, Backend::kAuto);
  r.job_visible_devices = "0,5";
  auto plan = planDevices(r, {{"node1", gpus(2), 1}});
  ASSERT_FALSE(plan.isOk());
  EXPECT_EQ(plan.status().message(),
            "the job's env CUDA_VISIBLE_DEVICES on agent 'node1' names GPU '5', which is not one "
            "of its GPUs (its GPUs: 0 (GPU-0aaaaaaa-0000), 1 (GPU-1aaaaaaa-0000))");
}

TEST(SelectGpus, IndicesUuidPrefixesEmptyListsAndMistakes) {
  const std::vector<Gpu> all = gpus(3);
  auto picked = selectGpus(" 2 ,GPU-0", all, "--gpus");
  ASSERT_TRUE(picked.isOk()) << picked.status().toString();
  ASSERT_EQ(picked->size(), 2u);
  EXPECT_EQ((*picked)[0].index, 2);
  EXPECT_EQ((*picked)[1].index, 0);
  auto none = selectGpus("", all, "--gpus");
  ASSERT_TRUE(none.isOk());
  EXPECT_TRUE(none->empty());
  EXPECT_FALSE(selectGpus("0,", all, "--gpus").isOk());
  EXPECT_FALSE(selectGpus("1,1", all, "--gpus").isOk());
  auto ambiguous = selectGpus("GPU-", all, "--gpus");
  ASSERT_FALSE(ambiguous.isOk());
  EXPECT_NE(ambiguous.status().message().find("matches more than one"), std::string::npos);
}

}  // namespace
}  // namespace ringmaster::job
