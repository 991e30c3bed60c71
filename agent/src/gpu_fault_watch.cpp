#include "gpu_fault_watch.h"

#include <set>

#include "ringmaster/hardware/gpu_faults.h"

namespace ringmaster::agent {

bool rankUsesGpu(const std::string& device, const job::Gpu& gpu) {
  if (!gpu.uuid.empty()) return device.find("(" + gpu.uuid + ")") != std::string::npos;
  const std::string index = "GPU " + std::to_string(gpu.index);
  return device == index || device.starts_with(index + " ");
}

std::vector<proto::JournalRecord> GpuFaultWatch::records(
    const proto::HealthSample& sample, const std::vector<job::Gpu>& gpus,
    const std::vector<proto::RunningRank>& ranks, double time) {
  std::vector<proto::JournalRecord> out;
  std::set<Key> seen;
  for (const proto::GpuHealth& health : sample.gpus()) {
    const job::Gpu* gpu = nullptr;
    for (const job::Gpu& g : gpus) {
      if (g.index == static_cast<int>(health.index())) gpu = &g;
    }
    if (gpu == nullptr) continue;
    // The job's ranks on this GPU, by (job, attempt).
    std::map<std::pair<std::string, uint32_t>, std::vector<int>> users;
    for (const proto::RunningRank& rank : ranks) {
      if (!rankUsesGpu(rank.device(), *gpu)) continue;
      users[{rank.job(), rank.attempt()}].push_back(rank.rank());
    }
    if (users.empty()) continue;
    const std::vector<hardware::GpuFault> faults = hardware::gpuFaults(health);
    for (const auto& [job, job_ranks] : users) {
      const Key key{job.first, job.second, health.index()};
      seen.insert(key);
      std::map<std::string, int>& told = told_[key];
      std::map<std::string, int> now;
      for (const hardware::GpuFault& fault : faults) {
        if (fault.severity == hardware::FaultSeverity::kNotice) continue;
        const int severity = static_cast<int>(fault.severity);
        const auto before = told.find(fault.kind);
        const bool is_new =
            fault.kind == "xid" || before == told.end() || before->second < severity;
        now[fault.kind] = std::max(now[fault.kind], severity);
        if (!is_new) continue;
        proto::JournalRecord& record = out.emplace_back();
        record.set_time(time);
        record.set_job(job.first);
        record.set_attempt(job.second);
        record.set_source("host:" + agent_);
        proto::GpuFaultSeen& seen_fault = *record.mutable_gpu_fault();
        seen_fault.set_gpu_index(health.index());
        seen_fault.set_gpu_uuid(gpu->uuid);
        seen_fault.set_kind(fault.kind);
        seen_fault.set_severity(hardware::severityName(fault.severity));
        seen_fault.set_text(fault.text);
        for (int rank : job_ranks) seen_fault.add_ranks(rank);
      }
      told = std::move(now);  // a fault no longer there may be told again when it comes back
    }
  }
  std::erase_if(told_, [&](const auto& entry) { return !seen.contains(entry.first); });
  return out;
}

}  // namespace ringmaster::agent
