#include "host_sampler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nvml.h"
#include "ringmaster/hardware/gpu_faults.h"

namespace ringmaster::agent {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

class HostSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("rm_host_sampler_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "net");
    fs::create_directories(root_ / "sys/kernel");
    write("sys/kernel/hostname", "node-7\n");
    write("loadavg", "1.25 0.50 0.25 2/345 6789\n");
    write("meminfo",
          "MemTotal:       16000000 kB\n"
          "MemFree:         2000000 kB\n"
          "MemAvailable:   12000000 kB\n"
          "Buffers:          100000 kB\n");
    writeStat(/*user=*/1000, /*system=*/500, /*idle=*/8000, /*iowait=*/500);
    writeNetDev(/*eth_rx=*/1000, /*eth_tx=*/2000, /*wlan_rx=*/0, /*wlan_tx=*/0, /*lo=*/0);
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const std::string& relative, const std::string& text) {
    std::ofstream(root_ / relative, std::ios::trunc) << text;
  }
  // Two CPUs; guest fields are part of user time and must not be counted twice.
  void writeStat(uint64_t user, uint64_t system, uint64_t idle, uint64_t iowait) {
    write("stat", "cpu  " + std::to_string(user) + " 0 " + std::to_string(system) + " " +
                      std::to_string(idle) + " " + std::to_string(iowait) +
                      " 0 0 0 777 0\n"
                      "cpu0 1 0 1 1 0 0 0 0 0 0\n"
                      "cpu1 1 0 1 1 0 0 0 0 0 0\n"
                      "intr 12345 0 0\n"
                      "ctxt 999\n");
  }
  void writeNetDev(uint64_t eth_rx, uint64_t eth_tx, uint64_t wlan_rx, uint64_t wlan_tx,
                   uint64_t lo) {
    auto row = [](const std::string& name, uint64_t rx, uint64_t tx) {
      return name + ": " + std::to_string(rx) + " 10 0 0 0 0 0 0 " + std::to_string(tx) +
             " 20 0 0 0 0 0 0\n";
    };
    write("net/dev",
          "Inter-|   Receive                                                |  Transmit\n"
          " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets "
          "errs drop fifo colls carrier compressed\n" +
              row("    lo", lo, lo) + row("  eth0", eth_rx, eth_tx) +
              // No space after the colon happens with large counters.
              "wlan0:" + std::to_string(wlan_rx) + " 1 0 0 0 0 0 0 " + std::to_string(wlan_tx) +
              " 1 0 0 0 0 0 0\n");
  }

  HostSamplerOptions options() {
    HostSamplerOptions o;
    o.proc_root = root_.string();
    o.use_nvml = false;
    o.clock = [this] { return now_; };
    return o;
  }

  fs::path root_;
  Clock::time_point now_{std::chrono::seconds(1000)};
};

TEST_F(HostSamplerTest, InventoryFromProc) {
  HostSampler sampler(options());
  const proto::Inventory inv = sampler.inventory();
  EXPECT_EQ(inv.hostname(), "node-7");
  EXPECT_EQ(inv.cpus(), 2u);
  EXPECT_EQ(inv.memory_total_bytes(), 16000000ull * 1024);
  EXPECT_EQ(inv.gpus_size(), 0);
  EXPECT_EQ(sampler.gpuCount(), 0);
}

TEST_F(HostSamplerTest, DeclaredGpusWithoutNvmlAreTakenAsTheyAre) {
  HostSampler sampler(options());
  EXPECT_EQ(sampler.gpuCount(), 0);
  ASSERT_TRUE(sampler.limitGpus({"0, 2,GPU-7f3a", "--gpus"}).isOk());
  ASSERT_EQ(sampler.gpuCount(), 3);
  EXPECT_EQ(sampler.gpus()[1].cudaId(), "2");
  EXPECT_EQ(sampler.gpus()[2].cudaId(), "GPU-7f3a");
  proto::Inventory inv = sampler.inventory();
  ASSERT_EQ(inv.gpus_size(), 3);
  EXPECT_EQ(inv.gpus(1).index(), 2u);
  EXPECT_EQ(inv.gpus(2).uuid(), "GPU-7f3a");
  EXPECT_EQ(sampler.sample().gpus_size(), 0);  // no readings without NVML
}

TEST_F(HostSamplerTest, AGpuListWithMistakesIsRefusedNamingThem) {
  HostSampler twice(options());
  Status status = twice.limitGpus({"1,1", "--gpus"});
  EXPECT_EQ(status.message(), "--gpus names GPU '1' twice");
  HostSampler empty_entry(options());
  status = empty_entry.limitGpus({"0,,1", "CUDA_VISIBLE_DEVICES"});
  EXPECT_EQ(status.message(), "CUDA_VISIBLE_DEVICES has an empty entry in '0,,1'");
}

TEST_F(HostSamplerTest, RatesFromDeltasBetweenSamples) {
  HostSampler sampler(options());  // first reading at t=1000s

  // 2 s later: +300 user, +100 system, +500 idle, +100 iowait -> 400 busy of 1000 = 40 %.
  // eth0 +4000 rx / +1000 tx, wlan0 +2000 rx / +3000 tx, lo +1e9 (ignored).
  now_ += std::chrono::seconds(2);
  writeStat(1300, 600, 8500, 600);
  writeNetDev(5000, 3000, 2000, 3000, 1000000000);
  proto::HealthSample s = sampler.sample();
  EXPECT_DOUBLE_EQ(s.cpu_percent(), 40.0);
  EXPECT_DOUBLE_EQ(s.net_rx_bytes_per_s(), 3000.0);  // (4000 + 2000) / 2
  EXPECT_DOUBLE_EQ(s.net_tx_bytes_per_s(), 2000.0);  // (1000 + 3000) / 2
  EXPECT_EQ(s.memory_total_bytes(), 16000000ull * 1024);
  EXPECT_EQ(s.memory_used_bytes(), 4000000ull * 1024);  // MemTotal - MemAvailable
  EXPECT_DOUBLE_EQ(s.load1(), 1.25);
  EXPECT_EQ(s.gpus_size(), 0);

  // The next sample measures from the previous one, not from construction: 0.5 s, all idle.
  now_ += std::chrono::milliseconds(500);
  writeStat(1300, 600, 9500, 600);
  writeNetDev(5500, 3000, 2000, 3000, 2000000000);
  s = sampler.sample();
  EXPECT_DOUBLE_EQ(s.cpu_percent(), 0.0);
  EXPECT_DOUBLE_EQ(s.net_rx_bytes_per_s(), 1000.0);
  EXPECT_DOUBLE_EQ(s.net_tx_bytes_per_s(), 0.0);
}

TEST_F(HostSamplerTest, CounterResetAndNoElapsedTimeGiveZeroNotGarbage) {
  HostSampler sampler(options());
  // Interface counters went backwards (driver reload): no negative or huge rate.
  now_ += std::chrono::seconds(1);
  writeNetDev(10, 20, 0, 0, 0);
  proto::HealthSample s = sampler.sample();
  EXPECT_DOUBLE_EQ(s.net_rx_bytes_per_s(), 0.0);
  EXPECT_DOUBLE_EQ(s.net_tx_bytes_per_s(), 0.0);
  // No CPU time elapsed and no wall time elapsed: rates are zero.
  s = sampler.sample();
  EXPECT_DOUBLE_EQ(s.cpu_percent(), 0.0);
  EXPECT_DOUBLE_EQ(s.net_rx_bytes_per_s(), 0.0);
}

// What cannot be read is named, with why, rather than reported as 0 (a host out of descriptors
// used to read CPU 0 and memory 0).
TEST_F(HostSamplerTest, MissingFilesAreReportedUnmeasuredNotZero) {
  fs::remove_all(root_);
  HostSampler sampler(options());
  now_ += std::chrono::seconds(1);
  const proto::HealthSample s = sampler.sample();
  EXPECT_EQ(std::vector<std::string>(s.unmeasured().begin(), s.unmeasured().end()),
            (std::vector<std::string>{"cpu", "memory", "load", "network"}));
  EXPECT_NE(s.error().find((root_ / "stat").string() + ": No such file or directory"),
            std::string::npos)
      << s.error();
  EXPECT_NE(s.error().find((root_ / "net/dev").string() + ": No such file or directory"),
            std::string::npos);
  const proto::Inventory inv = sampler.inventory();
  EXPECT_FALSE(inv.hostname().empty());  // falls back to gethostname()
  EXPECT_GT(inv.cpus(), 0u);             // falls back to sysconf
  EXPECT_EQ(inv.memory_total_bytes(), 0u);
}

TEST(HostSampler, SaneOnTheRealProc) {
  if (!fs::exists("/proc/stat")) GTEST_SKIP() << "no procfs on this host";
  HostSampler sampler;  // real /proc, real clock, NVML when present
  const proto::Inventory inv = sampler.inventory();
  EXPECT_FALSE(inv.hostname().empty());
  EXPECT_GT(inv.cpus(), 0u);
  EXPECT_GT(inv.memory_total_bytes(), 0u);
  EXPECT_EQ(inv.gpus_size(), sampler.gpuCount());

  usleep(50 * 1000);
  const proto::HealthSample s = sampler.sample();
  EXPECT_GE(s.cpu_percent(), 0.0);
  EXPECT_LE(s.cpu_percent(), 100.0);
  EXPECT_GT(s.memory_used_bytes(), 0u);
  EXPECT_LE(s.memory_used_bytes(), s.memory_total_bytes());
  EXPECT_EQ(s.memory_total_bytes(), inv.memory_total_bytes());
  EXPECT_GE(s.load1(), 0.0);
  EXPECT_GE(s.net_rx_bytes_per_s(), 0.0);
  EXPECT_GE(s.net_tx_bytes_per_s(), 0.0);
  EXPECT_EQ(s.gpus_size(), sampler.gpuCount());
  EXPECT_EQ(s.unmeasured_size(), 0) << s.error();
}

// The build machines have no NVIDIA driver: load() must then return nullptr without crashing.
// On a GPU host the same test checks that the devices NVML lists are described.
TEST(Nvml, LoadIsNullWithoutDriverAndDescribesDevicesWithOne) {
  auto nvml = Nvml::load();
  if (!nvml) {
    HostSamplerOptions o;
    o.use_nvml = true;
    HostSampler sampler(o);
    EXPECT_EQ(sampler.gpuCount(), 0);
    EXPECT_EQ(sampler.sample().gpus_size(), 0);
    return;
  }
  const auto devices = nvml->devices();
  for (size_t i = 0; i < devices.size(); ++i) {
    EXPECT_EQ(devices[i].index(), i);
    EXPECT_FALSE(devices[i].name().empty());
    EXPECT_FALSE(devices[i].uuid().empty());
    EXPECT_GT(devices[i].memory_total_bytes(), 0u);
  }
  const auto health = nvml->sample();
  ASSERT_EQ(health.size(), devices.size());
  for (const auto& gpu : health) {
    EXPECT_LE(gpu.utilization_percent(), 100.0);
    EXPECT_LE(gpu.memory_used_bytes(), gpu.memory_total_bytes());
    // What names a fault, as a datacenter GPU reports it (tests/gpu/run.sh runs this there):
    // clocks under their maximum, a PCIe link within its own, and every fault in words.
    ASSERT_TRUE(gpu.has_sm_clock_mhz() && gpu.has_sm_clock_max_mhz());
    EXPECT_GT(gpu.sm_clock_max_mhz(), 0u);
    EXPECT_LE(gpu.sm_clock_mhz(), gpu.sm_clock_max_mhz());
    EXPECT_TRUE(gpu.has_throttle_reasons());
    if (gpu.has_pcie_width()) {
      EXPECT_LE(gpu.pcie_width(), gpu.pcie_width_max());
    }
    std::printf(
        "GPU %u: SM %u/%u MHz, memory %u/%u MHz, PCIe Gen %u x%u (max Gen %u x%u), "
        "throttle 0x%llx, ECC uncorrectable %llu (volatile) %llu (lifetime), "
        "remapped rows %u%s\n",
        gpu.index(), gpu.sm_clock_mhz(), gpu.sm_clock_max_mhz(), gpu.memory_clock_mhz(),
        gpu.memory_clock_max_mhz(), gpu.pcie_generation(), gpu.pcie_width(),
        gpu.pcie_generation_max(), gpu.pcie_width_max(),
        static_cast<unsigned long long>(gpu.throttle_reasons()),
        static_cast<unsigned long long>(gpu.ecc_volatile_uncorrected()),
        static_cast<unsigned long long>(gpu.ecc_aggregate_uncorrected()),
        gpu.remapped_rows_uncorrectable(), gpu.row_remap_pending() ? ", remap pending" : "");
    for (const auto& fault : hardware::gpuFaults(gpu)) {
      std::printf("  %s: %s\n", hardware::severityName(fault.severity), fault.text.c_str());
    }
  }
}

}  // namespace
}  // namespace ringmaster::agent
