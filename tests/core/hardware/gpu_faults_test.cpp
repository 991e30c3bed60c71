// GPU faults named from NVML's values as an H100 and an A100 report them (nvidia-smi -q of
// healthy and faulty cards): which sample is a fault, how serious, and the words.
#include "ringmaster/hardware/gpu_faults.h"

#include <gtest/gtest.h>

namespace ringmaster::hardware {
namespace {

// An H100 SXM training at full speed: power-capped near its boost clock, PCIe Gen 5 x16.
proto::GpuHealth busyH100() {
  proto::GpuHealth gpu;
  gpu.set_utilization_percent(98);
  gpu.set_throttle_reasons(0x4);  // SwPowerCap
  gpu.set_sm_clock_mhz(1755);
  gpu.set_sm_clock_max_mhz(1980);
  gpu.set_memory_clock_mhz(2619);
  gpu.set_memory_clock_max_mhz(2619);
  gpu.set_ecc_volatile_corrected(0);
  gpu.set_ecc_volatile_uncorrected(0);
  gpu.set_ecc_aggregate_uncorrected(0);
  gpu.set_remapped_rows_uncorrectable(0);
  gpu.set_row_remap_pending(false);
  gpu.set_row_remap_failed(false);
  gpu.set_pcie_generation(5);
  gpu.set_pcie_generation_max(5);
  gpu.set_pcie_width(16);
  gpu.set_pcie_width_max(16);
  return gpu;
}

std::vector<std::string> texts(const std::vector<GpuFault>& faults) {
  std::vector<std::string> out;
  for (const GpuFault& fault : faults) out.push_back(fault.text);
  return out;
}

TEST(GpuFaults, AHealthyBusyGpuOnlyHasAPowerCapNotice) {
  const auto faults = gpuFaults(busyH100());
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0].severity, FaultSeverity::kNotice);
  EXPECT_EQ(faults[0].kind, "clocks");
  EXPECT_EQ(faults[0].text, "clocks held at 1755 of 1980 MHz: power cap");
}

TEST(GpuFaults, AnIdleGpuAtLowClocksAndGen1IsFine) {
  proto::GpuHealth gpu = busyH100();
  gpu.set_utilization_percent(0);
  gpu.set_throttle_reasons(0x1);  // GpuIdle
  gpu.set_sm_clock_mhz(345);
  gpu.set_pcie_generation(1);  // the link drops to Gen 1 when idle to save power
  EXPECT_TRUE(gpuFaults(gpu).empty()) << testing::PrintToString(texts(gpuFaults(gpu)));
  gpu.set_throttle_reasons(0x1 | 0x2 | 0x100);  // idle, application and display clocks
  EXPECT_TRUE(gpuFaults(gpu).empty());
}

TEST(GpuFaults, AThermalSlowdownIsNamedWithItsClock) {
  proto::GpuHealth gpu = busyH100();
  gpu.set_throttle_reasons(0x40 | 0x20 | 0x4);  // HW thermal, SW thermal, power cap
  gpu.set_sm_clock_mhz(705);
  const auto faults = gpuFaults(gpu);
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0].severity, FaultSeverity::kCritical);
  EXPECT_EQ(faults[0].text,
            "clocks held at 705 of 1980 MHz: thermal slowdown (hardware), thermal slowdown "
            "(driver), power cap");
  gpu.set_throttle_reasons(0x20);
  EXPECT_EQ(gpuFaults(gpu)[0].severity, FaultSeverity::kWarning);
}

TEST(GpuFaults, APowerCapFarBelowTheClockIsAWarning) {
  proto::GpuHealth gpu = busyH100();
  gpu.set_sm_clock_mhz(1100);  // 56% of max
  const auto faults = gpuFaults(gpu);
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0].severity, FaultSeverity::kWarning);
  EXPECT_EQ(faults[0].text, "clocks held at 1100 of 1980 MHz: power cap");
}

TEST(GpuFaults, ReasonsWithoutClocksStillNameTheCause) {
  proto::GpuHealth gpu;
  gpu.set_throttle_reasons(0x80 | 0x10);
  const auto faults = gpuFaults(gpu);
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0].text,
            "clocks slowed: power brake (the power supply asked for it), sync boost (held to "
            "its group's clock)");
  EXPECT_EQ(throttleReasonsText(0x8), "hardware slowdown (thermal or power brake)");
  EXPECT_EQ(throttleReasonsText(0x1 | 0x2), "");
}

TEST(GpuFaults, ASlowClockUnderLoadWithoutAReasonIsShown) {
  proto::GpuHealth gpu = busyH100();
  gpu.set_throttle_reasons(0);
  gpu.set_sm_clock_mhz(810);
  ASSERT_EQ(gpuFaults(gpu).size(), 1u);
  EXPECT_EQ(gpuFaults(gpu)[0].text,
            "clocks at 810 of 1980 MHz under load, with no reason from the driver");
  gpu.set_utilization_percent(3);  // an idle GPU may clock down as it likes
  EXPECT_TRUE(gpuFaults(gpu).empty());
}

TEST(GpuFaults, EccErrorsAndRowRemapsAreOrderedBySeverity) {
  proto::GpuHealth gpu = busyH100();
  gpu.set_throttle_reasons(0);
  gpu.set_ecc_volatile_corrected(12);
  gpu.set_ecc_volatile_uncorrected(2);
  gpu.set_ecc_aggregate_uncorrected(5);
  gpu.set_row_remap_pending(true);
  const auto faults = gpuFaults(gpu);
  ASSERT_EQ(faults.size(), 3u) << testing::PrintToString(texts(faults));
  EXPECT_EQ(faults[0].text,
            "2 uncorrectable ECC errors since the driver loaded: results on it may be wrong");
  EXPECT_EQ(faults[0].severity, FaultSeverity::kCritical);
  EXPECT_EQ(faults[1].text,
            "a row remap waits for a GPU reset: the faulty memory is in use until then");
  EXPECT_EQ(faults[1].severity, FaultSeverity::kWarning);
  EXPECT_EQ(faults[2].text, "12 corrected ECC errors since the driver loaded");
  EXPECT_EQ(worstSeverity(faults), FaultSeverity::kCritical);

  gpu.set_ecc_volatile_uncorrected(0);  // after a reset: only the lifetime count remains
  gpu.set_ecc_volatile_corrected(0);
  gpu.set_row_remap_pending(false);
  gpu.set_row_remap_failed(true);
  EXPECT_EQ(texts(gpuFaults(gpu)),
            (std::vector<std::string>{
                "a row remap failed: its memory cannot be repaired, the GPU needs servicing",
                "5 uncorrectable ECC errors in its lifetime"}));
}

TEST(GpuFaults, RetiredPagesOfAVoltaCard) {
  proto::GpuHealth gpu;
  gpu.set_retired_pages(3);
  EXPECT_EQ(texts(gpuFaults(gpu)), std::vector<std::string>{"3 memory pages retired"});
  gpu.set_retired_pages_pending(true);
  EXPECT_EQ(gpuFaults(gpu)[0].severity, FaultSeverity::kWarning);
}

TEST(GpuFaults, ANarrowedPcieLinkIsAWarningEvenWhenIdle) {
  proto::GpuHealth gpu = busyH100();
  gpu.set_throttle_reasons(0);
  gpu.set_pcie_width(8);
  EXPECT_EQ(texts(gpuFaults(gpu)),
            std::vector<std::string>{"PCIe link Gen 5 x8, capable of Gen 5 x16"});
  gpu.set_pcie_width(16);
  gpu.set_pcie_generation(3);  // busy and not at its generation: a riser or slot fault
  EXPECT_EQ(texts(gpuFaults(gpu)),
            std::vector<std::string>{"PCIe link Gen 3 x16 under load, capable of Gen 5 x16"});
}

TEST(GpuFaults, XidsAreCountedPerCodeWithTheirMeaning) {
  proto::GpuHealth gpu;
  gpu.add_xids(13);
  gpu.add_xids(79);
  gpu.add_xids(13);
  const auto faults = gpuFaults(gpu);
  ASSERT_EQ(faults.size(), 2u);
  EXPECT_EQ(faults[0].text, "XID 79: the GPU has fallen off the bus");
  EXPECT_EQ(faults[0].severity, FaultSeverity::kCritical);
  EXPECT_EQ(faults[1].text,
            "XID 13: graphics engine exception (usually the application: an illegal access) "
            "(2 times)");
  EXPECT_EQ(faults[1].severity, FaultSeverity::kNotice);
  EXPECT_EQ(xidMeaning(9999), "see NVIDIA's XID catalogue");
  EXPECT_EQ(xidSeverity(9999), FaultSeverity::kWarning);
}

TEST(GpuFaults, ASampleWithoutNvmlHealthFieldsHasNoFault) {
  proto::GpuHealth gpu;
  gpu.set_utilization_percent(100);
  gpu.set_temperature_c(60);
  EXPECT_TRUE(gpuFaults(gpu).empty());
  EXPECT_STREQ(severityName(worstSeverity({})), "notice");
}

}  // namespace
}  // namespace ringmaster::hardware
