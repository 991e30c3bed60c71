// The agent's GPU fault events: a fault of a GPU under a running rank becomes one record for that
// rank's job as it appears, again only when it clears and comes back or grows worse, and every
// XID is told.
#include "gpu_fault_watch.h"

#include <gtest/gtest.h>

namespace ringmaster::agent {
namespace {

const std::vector<job::Gpu> kGpus = {{0, "GPU-aaaa", "NVIDIA H100"},
                                     {1, "GPU-bbbb", "NVIDIA H100"}};

proto::RunningRank rankOn(const std::string& job, int rank, const job::Gpu& gpu,
                          uint32_t attempt = 1) {
  proto::RunningRank r;
  r.set_job(job);
  r.set_rank(rank);
  r.set_attempt(attempt);
  r.set_device(gpu.describe());
  return r;
}

proto::HealthSample sampleWith(uint32_t index, uint64_t throttle, uint32_t clock) {
  proto::HealthSample sample;
  for (uint32_t i = 0; i < 2; ++i) {
    proto::GpuHealth& gpu = *sample.add_gpus();
    gpu.set_index(i);
    gpu.set_utilization_percent(95);
    gpu.set_sm_clock_mhz(1900);
    gpu.set_sm_clock_max_mhz(1980);
    if (i == index) {
      gpu.set_throttle_reasons(throttle);
      gpu.set_sm_clock_mhz(clock);
    }
  }
  return sample;
}

TEST(RankUsesGpu, MatchesByUuidElseByIndex) {
  EXPECT_TRUE(rankUsesGpu(kGpus[1].describe(), kGpus[1]));
  EXPECT_FALSE(rankUsesGpu(kGpus[1].describe(), kGpus[0]));
  const job::Gpu declared{2, "", ""};
  EXPECT_TRUE(rankUsesGpu("GPU 2", declared));
  EXPECT_FALSE(rankUsesGpu("GPU 21", declared));
  EXPECT_FALSE(rankUsesGpu("CPU: no GPU on this agent", declared));
}

TEST(GpuFaultWatch, AFaultIsToldOnceToTheJobOnThatGpu) {
  GpuFaultWatch watch("gpu07");
  const std::vector<proto::RunningRank> ranks = {rankOn("a", 0, kGpus[0]), rankOn("b", 0, kGpus[1]),
                                                 rankOn("b", 1, kGpus[1])};
  auto records = watch.records(sampleWith(1, 0x40, 705), kGpus, ranks, 100);
  ASSERT_EQ(records.size(), 1u);
  const proto::JournalRecord& r = records[0];
  EXPECT_EQ(r.job(), "b");
  EXPECT_EQ(r.attempt(), 1u);
  EXPECT_EQ(r.source(), "host:gpu07");
  EXPECT_EQ(r.time(), 100);
  EXPECT_EQ(r.gpu_fault().gpu_index(), 1u);
  EXPECT_EQ(r.gpu_fault().gpu_uuid(), "GPU-bbbb");
  EXPECT_EQ(r.gpu_fault().kind(), "clocks");
  EXPECT_EQ(r.gpu_fault().severity(), "critical");
  EXPECT_EQ(r.gpu_fault().text(), "clocks held at 705 of 1980 MHz: thermal slowdown (hardware)");
  EXPECT_EQ(std::vector<int>(r.gpu_fault().ranks().begin(), r.gpu_fault().ranks().end()),
            (std::vector<int>{0, 1}));

  // Still there at another clock: nothing new.
  EXPECT_TRUE(watch.records(sampleWith(1, 0x40, 690), kGpus, ranks, 105).empty());
  // Cleared, then back: told again.
  EXPECT_TRUE(watch.records(sampleWith(1, 0, 1900), kGpus, ranks, 110).empty());
  EXPECT_EQ(watch.records(sampleWith(1, 0x40, 700), kGpus, ranks, 115).size(), 1u);
}

TEST(GpuFaultWatch, AWorseningFaultIsToldAndNoticesAreNot) {
  GpuFaultWatch watch("gpu07");
  const std::vector<proto::RunningRank> ranks = {rankOn("a", 3, kGpus[0])};
  // A power cap near the clock is a notice: no event.
  EXPECT_TRUE(watch.records(sampleWith(0, 0x4, 1800), kGpus, ranks, 1).empty());
  auto warning = watch.records(sampleWith(0, 0x20, 1200), kGpus, ranks, 2);
  ASSERT_EQ(warning.size(), 1u);
  EXPECT_EQ(warning[0].gpu_fault().severity(), "warning");
  auto critical = watch.records(sampleWith(0, 0x60, 900), kGpus, ranks, 3);
  ASSERT_EQ(critical.size(), 1u);
  EXPECT_EQ(critical[0].gpu_fault().severity(), "critical");
  EXPECT_TRUE(watch.records(sampleWith(0, 0x20, 1200), kGpus, ranks, 4).empty());
}

TEST(GpuFaultWatch, EveryXidIsToldAndANewAttemptHearsOfAStandingFault) {
  GpuFaultWatch watch("gpu07");
  std::vector<proto::RunningRank> ranks = {rankOn("a", 0, kGpus[0])};
  proto::HealthSample sample = sampleWith(0, 0x40, 705);
  sample.mutable_gpus(0)->add_xids(79);
  EXPECT_EQ(watch.records(sample, kGpus, ranks, 1).size(), 2u);  // the XID and the clocks
  auto again = watch.records(sample, kGpus, ranks, 2);
  ASSERT_EQ(again.size(), 1u);  // another XID 79: told; the clocks: not
  EXPECT_EQ(again[0].gpu_fault().kind(), "xid");
  EXPECT_EQ(again[0].gpu_fault().text(), "XID 79: the GPU has fallen off the bus");

  ranks = {rankOn("a", 0, kGpus[0], 2)};  // the job restarted on the same GPU
  sample.mutable_gpus(0)->clear_xids();
  auto restarted = watch.records(sample, kGpus, ranks, 3);
  ASSERT_EQ(restarted.size(), 1u);
  EXPECT_EQ(restarted[0].attempt(), 2u);
  EXPECT_TRUE(watch.records(sample, {}, ranks, 4).empty());  // a GPU it does not know: nothing
}

}  // namespace
}  // namespace ringmaster::agent
