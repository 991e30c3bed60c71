#pragma once
// The cluster preflight (`ringmasterctl preflight`, the Cluster view's "Check cluster"): before a
// 64-GPU job meets a bad host 40 minutes in, every chosen agent is checked — CPU, memory, free
// disk where its jobs write, clock offset from this client, and each GPU's faults
// (hardware/gpu_faults.h) — and every pair of them runs a link test through the comm layer jobs
// use (a 2-rank native job, native: {link_test: ...}: Gloo over TCP), in rounds where no agent is
// in two pairs at once, so no link is measured while another shares its host. The verdict names
// the outliers: "link a3 <-> a7: 0.11 GB/s, the median pair 1.1 GB/s", "a5: 0.3 GiB free of
// 40 GiB in /var/lib/ringmaster-agent". The link tests are ordinary jobs: they stay in the
// history, each named preflight-link-A-B.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ringmaster/client/cluster_client.h"
#include "ringmaster/hardware/gpu_faults.h"

namespace ringmaster::client {

// The default share of the median pair's bandwidth below which a link is named. A quarter: two
// healthy pairs measured on hosts that also run other work differ by up to 2.3x (0.32 against a
// median of 0.72 GB/s in preflight_test under the suite's load); a link that negotiated a lower
// speed or drops packets is 4x to 100x slower.
inline constexpr double kSlowLinkShare = 0.25;

struct PreflightOptions {
  std::vector<std::string> agents;  // empty: every agent of the cluster file
  size_t link_bytes = size_t{8} << 20;
  uint64_t link_repeats = 3;
  std::chrono::seconds round_timeout{25};  // for one round of link tests
  bool links = true;                       // false: the agents' own checks only
  // Named in the verdict: a link below this share of the median pair's bandwidth, a disk with
  // less than this share or this many bytes free, a clock further off than this.
  double slow_link_share = kSlowLinkShare;
  double min_free_share = 0.05;
  uint64_t min_free_bytes = uint64_t{1} << 30;
  double max_clock_offset_s = 1.0;
  // What it is doing now ("link tests, round 2 of 3: a1 <-> a3, a2 <-> a4"); any thread.
  std::function<void(const std::string&)> progress;
};

struct AgentCheck {
  std::string agent;
  std::string error;  // why it could not be checked; "" when it was
  uint32_t cpus = 0;
  double load1 = 0;
  uint64_t memory_total = 0, memory_used = 0;
  std::string state_dir;
  uint64_t disk_free = 0, disk_total = 0;
  double clock_offset_s = 0;  // the agent's clock minus this client's
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
  std::vector<AgentCheck> agents;
  std::vector<LinkCheck> links;
  double median_gbps = 0;             // over the measured pairs
  std::vector<std::string> problems;  // the verdict, one line each; empty: all clear
  double seconds = 0;
};

// Runs the checks. Errors only when no agent can be named (an unknown agent, an empty cluster);
// an agent or link that fails its check is a problem in the report, not an error.
Result<PreflightReport> runPreflight(ClusterClient& cluster, const PreflightOptions& options);

// The link tests' job names begin so ("preflight-link-a1-a3"): views that announce new jobs
// leave them out (a preflight of 64 agents runs 2,016 of them).
inline constexpr const char* kPreflightJobPrefix = "preflight-link-";
inline bool isPreflightJob(const std::string& job_name) {
  return job_name.starts_with(kPreflightJobPrefix);
}

// Pairs of n agents in rounds, each agent at most once per round (the circle method): n-1 rounds
// of n/2 pairs for even n, n rounds for odd n. Indices into the agents.
std::vector<std::vector<std::pair<int, int>>> pairRounds(int n);

// The verdict over measured checks (runPreflight's last step): problems named, worst first.
std::vector<std::string> preflightVerdict(const PreflightReport& report,
                                          const PreflightOptions& options);

}  // namespace ringmaster::client
