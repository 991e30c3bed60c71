#pragma once
// A link test instead of training (native: {link_test: ...}, train::LinkTestConfig): the ranks
// measure what joins them through the communicator jobs use — the latency of a one-float
// allreduce and the bandwidth of a large one — and rank 0 prints the figures as a metric line
// {"step": 1, "link_latency_us": ..., "link_gbps": ...}. The cluster preflight runs one per pair
// of agents (ringmaster/client/preflight.h).

#include <cstdio>

#include "ringmaster/comm/communicator.h"
#include "ringmaster/train/config.h"
#include "ringmaster/util/result.h"

namespace ringmaster::agent {

// `comm` joins 2 or more ranks. Bandwidth is the allreduce's bus bandwidth (bytes x 2(n-1)/n per
// second, as nccl-tests count it: for 2 ranks, what each sent), in GB/s (10^9 bytes), the best
// of test.repeats; latency the mean of 100 one-float allreduces.
Status runLinkTest(const train::LinkTestConfig& test, comm::Communicator* comm, std::FILE* out,
                   std::FILE* log);

}  // namespace ringmaster::agent
