#include "worker/link_test.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "worker/metric_line.h"

namespace ringmaster::agent {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kLatencyRepeats = 100;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

Status runLinkTest(const train::LinkTestConfig& test, comm::Communicator* comm, std::FILE* out,
                   std::FILE* log) {
  if (comm == nullptr || comm->size() < 2) {
    return invalidArgument("a link test needs 2 ranks or more (world_size 2, one per agent)");
  }
  std::vector<float> one(1, 1.0f);
  std::vector<float> big(std::max<size_t>(1, test.bytes / sizeof(float)), 1.0f);
  // A first exchange of each size: connections and buffers are set up outside the clock.
  RM_RETURN_IF_ERROR(comm->allreduce(one.data(), one.size()));
  RM_RETURN_IF_ERROR(comm->allreduce(big.data(), big.size()));

  const Clock::time_point start = Clock::now();
  for (int i = 0; i < kLatencyRepeats; ++i) RM_RETURN_IF_ERROR(comm->allreduce(one.data(), 1));
  const double latency_us = secondsSince(start) / kLatencyRepeats * 1e6;

  const double n = comm->size();
  const double bus_bytes = static_cast<double>(big.size() * sizeof(float)) * 2 * (n - 1) / n;
  double best = 0;
  for (uint64_t r = 0; r < test.repeats; ++r) {
    const Clock::time_point begin = Clock::now();
    RM_RETURN_IF_ERROR(comm->allreduce(big.data(), big.size()));
    best = std::max(best, bus_bytes / secondsSince(begin));
  }
  const double gbps = best / 1e9;
  std::fprintf(log, "rank %d: link test over %s: %.1f us latency, %.3f GB/s\n", comm->rank(),
               std::string(comm->backend()).c_str(), latency_us, gbps);
  if (comm->rank() == 0) {
    MetricLine(1).add("link_latency_us", latency_us).add("link_gbps", gbps).print(out);
  }
  return comm->barrier();
}

}  // namespace ringmaster::agent
