#pragma once
// What the agent reports about its host: a static inventory and periodic health samples, read
// from /proc (Linux) and, when the NVIDIA driver is present, NVML.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "nvml.h"
#include "ringmaster/protocol/ringmaster.pb.h"

namespace ringmaster::agent {

struct HostSamplerOptions {
  // Where procfs is mounted; tests point it at a fake tree (stat, meminfo, loadavg, net/dev and
  // sys/kernel/hostname).
  std::string proc_root = "/proc";
  // Load NVML for GPU inventory and health; false (or no driver) means no GPUs are reported.
  bool use_nvml = true;
  // Time source for rates; empty: std::chrono::steady_clock::now.
  std::function<std::chrono::steady_clock::time_point()> clock;
};

// Not thread-safe; owned by the agent's main thread. Unreadable or malformed /proc files leave the
// affected fields at zero; nothing throws.
class HostSampler {
 public:
  // Loads NVML (when asked) and takes the first CPU and network reading, so that the first
  // sample() reports rates since construction.
  explicit HostSampler(HostSamplerOptions options = {});
  ~HostSampler();

  // hostname, cpus, memory_total_bytes and gpus; slots and the rest are the agent's to fill.
  proto::Inventory inventory();

  // CPU % (all CPUs) and network rx/tx bytes/s (all interfaces but "lo") since the previous
  // sample (or construction); memory used = MemTotal - MemAvailable; load1; GPUs from NVML.
  proto::HealthSample sample();

  // GPUs NVML reported at construction (0 without NVML).
  int gpuCount() const;

 private:
  struct CpuTimes {
    uint64_t busy = 0;
    uint64_t total = 0;
  };
  struct NetCounters {
    uint64_t rx = 0;
    uint64_t tx = 0;
  };

  std::string path(const char* relative) const;
  std::chrono::steady_clock::time_point now() const;
  bool readCpuTimes(CpuTimes& out) const;
  std::map<std::string, NetCounters> readNetCounters() const;

  HostSamplerOptions options_;
  std::unique_ptr<Nvml> nvml_;
  int gpu_count_ = 0;
  bool have_cpu_ = false;
  CpuTimes last_cpu_;
  std::map<std::string, NetCounters> last_net_;
  std::chrono::steady_clock::time_point last_time_;
};

}  // namespace ringmaster::agent
