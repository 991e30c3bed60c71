#pragma once
// The cluster preflight (`ringmasterctl preflight`, the Cluster view's "Check cluster"): before a
// 64-GPU job meets a bad host 40 minutes in, every chosen agent is checked — CPU, memory, free
// disk where its jobs write, clock offset from this client, and each GPU's faults
// (hardware/gpu_faults.h) — and every pair of them runs a link test through the comm layer jobs
// use (a 2-rank native job, native: {link_test: ...}: Gloo over TCP), in rounds where no agent is
// in two pairs at once, so no link is measured while another shares its host. The verdict names
// the outliers: "link a3 <-> a7: 0.11 GB/s, the median pair 1.1 GB/s", "a5: 0.3 GiB free of
// 40 GiB in /var/lib/ringmaster-agent". The report is kept in the history. The link tests are
// ordinary jobs, each named preflight-link-A-B: lists of runs leave them out (the report holds
// their figures).

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ringmaster/client/cluster_client.h"
#include "ringmaster/hardware/gpu_faults.h"
#include "ringmaster/store/preflight_report.h"

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

// What it found: each agent, each link, the verdict (kept in the history: store::Writer::
// recordPreflight, store::Reader::preflights).
using store::AgentCheck;
using store::LinkCheck;
using store::PreflightReport;

// Runs the checks. Errors only when no agent can be named (an unknown agent, an empty cluster);
// an agent or link that fails its check is a problem in the report, not an error.
Result<PreflightReport> runPreflight(ClusterClient& cluster, const PreflightOptions& options);

using store::isPreflightJob;
using store::kPreflightJobPrefix;

// Pairs of n agents in rounds, each agent at most once per round (the circle method): n-1 rounds
// of n/2 pairs for even n, n rounds for odd n. Indices into the agents.
std::vector<std::vector<std::pair<int, int>>> pairRounds(int n);

// The pairs a preflight tests: every pair of up to kAllPairsUpTo agents (pairRounds). Past that,
// every pair would be n(n-1)/2 tests in n-1 rounds (2,016 in 63 rounds at 64 agents): instead a
// ring (each agent with its two neighbours, 2 rounds, 3 for odd n) and kSampledRounds random
// matchings (`seed`), so each agent is in about four links and a check of 64 or 1,000 agents takes
// the same five rounds. A slow link still stands out against its hosts' other links, and a host
// whose every link is slow is named as the host (preflightVerdict).
inline constexpr int kAllPairsUpTo = 16;
inline constexpr int kSampledRounds = 2;
std::vector<std::vector<std::pair<int, int>>> linkRounds(int n, uint64_t seed);

// The verdict over measured checks (runPreflight's last step): problems named, worst first. A
// host of at least two measured links, every one of them slow, is named once as the host ("a5:
// every link slow (4 of 4, 0.09-0.11 GB/s, the median pair 1.1 GB/s): its network interface or
// its switch port") instead of link by link.
std::vector<std::string> preflightVerdict(const PreflightReport& report,
                                          const PreflightOptions& options);

}  // namespace ringmaster::client
