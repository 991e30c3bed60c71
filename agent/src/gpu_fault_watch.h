#pragma once
// Turns the agent's GPU health samples into job events: a fault (ringmaster/hardware/
// gpu_faults.h) of a GPU a running rank uses is journaled for that rank's job, once as it
// appears, so the dashboard and the history say "GPU 2 under rank 5: clocks held at 705 of
// 1980 MHz: thermal slowdown (hardware)" when it happened.

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "ringmaster/job/device_plan.h"
#include "ringmaster/protocol/ringmaster.pb.h"

namespace ringmaster::agent {

// Not thread-safe: the agent's main thread calls it after each health sample.
class GpuFaultWatch {
 public:
  explicit GpuFaultWatch(std::string agent) : agent_(std::move(agent)) {}

  // The records to journal for this sample: one per (job, GPU, fault) that is new to that job —
  // every XID; any other warning or critical fault when the job had not seen it at this severity
  // or worse since it last cleared. `gpus` are the agent's GPUs (their UUIDs name them in ranks'
  // devices); `time` is the sample's, in unix seconds.
  std::vector<proto::JournalRecord> records(const proto::HealthSample& sample,
                                            const std::vector<job::Gpu>& gpus,
                                            const std::vector<proto::RunningRank>& ranks,
                                            double time);

 private:
  // (job, attempt, GPU index) -> the faults that job has been told of: kind -> severity.
  using Key = std::tuple<std::string, uint32_t, uint32_t>;
  std::map<Key, std::map<std::string, int>> told_;
  std::string agent_;
};

// Whether a rank's device ("GPU 2 NVIDIA H100 … (GPU-…)") is that GPU.
bool rankUsesGpu(const std::string& device, const job::Gpu& gpu);

}  // namespace ringmaster::agent
