#pragma once
// What the agent reports about its host: a static inventory and periodic health samples, read
// from /proc (Linux) and, when the NVIDIA driver is present, NVML.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nvml.h"
#include "ringmaster/job/device_plan.h"
#include "ringmaster/protocol/ringmaster.pb.h"
#include "ringmaster/util/result.h"

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

// An agent's GPU limit, e.g. from `--gpus 0,2` or the CUDA_VISIBLE_DEVICES it was started with.
struct GpuLimit {
  std::string list;  // indices or UUIDs, comma-separated (job::selectGpus)
  std::string what;  // where it came from, for error messages
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

  // Keeps only the GPUs `limit` names: inventory, health and gpus() cover those alone. With NVML
  // each entry must be one of its GPUs (error otherwise, naming it); without NVML the declared
  // list is taken as it is, with no readings. Call once, before anything else.
  Status limitGpus(const GpuLimit& limit);

  // The GPUs ranks may use: NVML's (all, or those limitGpus kept), or the declared ones.
  const std::vector<job::Gpu>& gpus() const { return gpus_; }
  int gpuCount() const { return static_cast<int>(gpus_.size()); }

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
  // Both fail with why in *error.
  bool readCpuTimes(CpuTimes& out, std::string* error = nullptr) const;
  std::optional<std::map<std::string, NetCounters>> readNetCounters(
      std::string* error = nullptr) const;

  HostSamplerOptions options_;
  bool allowed(uint32_t nvml_index) const;

  std::unique_ptr<Nvml> nvml_;
  std::vector<job::Gpu> gpus_;
  std::vector<proto::GpuInfo> declared_;  // limitGpus without NVML
  bool have_cpu_ = false;
  CpuTimes last_cpu_;
  std::map<std::string, NetCounters> last_net_;
  std::chrono::steady_clock::time_point last_time_;
};

}  // namespace ringmaster::agent
