// `ringmasterctl logs JOB [--rank R] [--follow]`
#include <chrono>
#include <cstdio>
#include <thread>

#include "ctl.h"
#include "log_tail.h"

namespace ringmaster::ctl {

int runLogs(const Globals& globals, const LogsFlags& flags) {
  auto cluster = openCluster(globals);
  if (!cluster) return kExitFailure;
  syncQuietly(*cluster);
  auto store = cluster->history();
  if (!store.isOk()) {
    printError(store.status().message());
    return kExitFailure;
  }
  auto job = (*store)->job(flags.job);
  if (!job.isOk()) {
    printError(job.status().message());
    return kExitBadInput;
  }
  auto ranks = (*store)->ranks(job->job_id);
  if (!ranks.isOk()) {
    printError(ranks.status().message());
    return kExitFailure;
  }
  std::vector<std::pair<std::string, std::vector<int>>> shares;
  bool found = false;
  for (const auto& r : *ranks) {
    if (flags.rank && r.rank != *flags.rank) continue;
    found = true;
    if (shares.empty() || shares.back().first != r.agent) shares.push_back({r.agent, {}});
    shares.back().second.push_back(r.rank);
  }
  if (!found) {
    printError(flags.rank ? "job " + job->job_id + " has no rank " + std::to_string(*flags.rank) +
                                " (world size " + std::to_string(job->world_size) + ")"
                          : "job " + job->job_id + " has no ranks recorded yet");
    return kExitBadInput;
  }
  LogTail tail(*cluster, job->job_id, shares, /*prefix=*/!flags.rank.has_value());
  tail.poll();
  while (flags.follow && !tail.allFinished()) {
    if (!tail.poll(500) && !tail.errors().empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }
  for (const auto& [rank, error] : tail.errors()) {
    printError("rank " + std::to_string(rank) + ": " + error.message());
  }
  return tail.errors().empty() ? kExitOk : kExitFailure;
}

}  // namespace ringmaster::ctl
