#pragma once
// What a cluster preflight found (ringmaster/client/preflight.h runs it), as the history keeps
// it: every agent's own checks, every link test's figures, and the verdict. Kept so that the
// matrix of last night's check can be read again this morning, and so that a link's or a host's
// figures can be followed from check to check.

#include <cstdint>
#include <string>
#include <vector>

#include "ringmaster/hardware/gpu_faults.h"

namespace ringmaster::store {

struct AgentCheck {
  std::string agent;
  std::string error;  // why it could not be checked; "" when it was
  uint32_t cpus = 0;
  double load1 = 0;
  uint64_t memory_total = 0, memory_used = 0;
  std::string state_dir;
  uint64_t disk_free = 0, disk_total = 0;
  double clock_offset_s = 0;  // the agent's clock minus the client's
  double round_trip_ms = 0;   // of the inventory request that measured it
  int gpus = 0;
  struct Fault {
    uint32_t gpu = 0;
    hardware::GpuFault fault;
  };
  std::vector<Fault> gpu_faults;  // warnings and critical faults only
};

struct LinkCheck {
  std::string a, b;
  std::string job_id;
  std::string error;  // why it has no figures; "" when measured
  double gbps = 0, latency_us = 0;
};

struct PreflightReport {
  int64_t id = 0;         // its row in the history; 0 until stored
  double started_at = 0;  // unix seconds
  std::vector<AgentCheck> agents;
  std::vector<LinkCheck> links;
  double median_gbps = 0;             // over the measured pairs
  std::vector<std::string> problems;  // the verdict, one line each; empty: all clear
  double seconds = 0;
};

// The link tests' job names begin so ("preflight-link-a1-a3"): lists of runs, the hardware
// report and views that announce new jobs leave them out (the report holds their figures).
inline constexpr const char* kPreflightJobPrefix = "preflight-link-";
inline bool isPreflightJob(const std::string& job_name) {
  return job_name.starts_with(kPreflightJobPrefix);
}

}  // namespace ringmaster::store
