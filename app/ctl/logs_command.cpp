// `ringmasterctl logs JOB [--rank R] [--follow] [--attempt N] [--stream stdout|stderr]`
#include <algorithm>
#include <cstdio>
#include <map>

#include "ctl.h"
#include "log_tail.h"
#include "ringmaster/client/slurm_submit.h"
#include "session_loop.h"
#include "terminal_safe.h"

namespace ringmaster::ctl {

int runLogs(const Globals& globals, const LogsFlags& flags) {
  auto cluster = openCluster(globals);
  if (!cluster) return kExitFailure;
  auto job = findJob(*cluster, flags.job);
  if (!job) return kExitBadInput;
  auto writer = cluster->writer();
  if (!writer.isOk()) {
    printError(writer.status().message());
    return kExitFailure;
  }
  catchUpSlurmJob(globals, **cluster->history(), **writer, job->job_id);
  if (flags.attempt && *flags.attempt > job->attempt) {
    printError("job " + job->job_id + " has " +
               (job->attempt == 1 ? std::string("one attempt")
                                  : "attempts 1-" + std::to_string(job->attempt)) +
               ", not " + std::to_string(*flags.attempt));
    return kExitBadInput;
  }
  // Each attempt's ranks, on the agents that ran them (a restart may have moved them).
  auto ranks = (*cluster->history())->ranks(job->job_id, flags.attempt);
  if (!ranks.isOk()) {
    printError(ranks.status().message());
    return kExitFailure;
  }
  std::vector<std::pair<std::string, std::vector<int>>> shares;
  std::map<int, std::string> kept_tails;  // what the history kept of each exited rank's log
  bool found = false;
  for (const auto& r : *ranks) {
    if (flags.rank && r.rank != *flags.rank) continue;
    found = true;
    if (!r.log_tail.empty()) kept_tails[r.rank] = r.log_tail;
    if (shares.empty() || shares.back().first != r.agent) shares.push_back({r.agent, {}});
    shares.back().second.push_back(r.rank);
  }
  if (!found) {
    printError(flags.rank ? "job " + job->job_id + " has no rank " + std::to_string(*flags.rank) +
                                " (world size " + std::to_string(job->world_size) + ")"
                          : "job " + job->job_id + " has no ranks recorded yet");
    return kExitBadInput;
  }
  if (auto slurm = (*cluster->history())->slurmJob(job->job_id); slurm.isOk()) {
    if (flags.attempt) {
      printError(
          "--attempt is for jobs on agents: the logs of a job on Slurm are read from its "
          "job directory, each run's in turn");
      return kExitBadInput;
    }
    if (!flags.stream.empty()) {
      printError("--stream is for jobs on agents: a job on Slurm's logs hold both streams");
      return kExitBadInput;
    }
    const auto paths = client::ClientPaths::resolve(globals.cluster_file, globals.db_file);
    const slurm::Where where{client::slurmLoginOf(paths.cluster_file, slurm->cluster), ""};
    return printSlurmLogs(**cluster->history(), **writer, *slurm, where, flags);
  }
  cluster.reset();  // the session below opens its own connections
  auto loop =
      SessionLoop::start(client::ClientPaths::resolve(globals.cluster_file, globals.db_file));
  if (!loop.isOk()) {
    printError(loop.status().message());
    return kExitFailure;
  }
  std::vector<std::string> agents;
  for (const auto& [agent, ranks_there] : shares) agents.push_back(agent);
  (*loop)->reportDropouts(agents);
  LogTail tail((*loop)->session(), job->job_id, shares, /*prefix=*/!flags.rank.has_value(),
               /*compact_metrics=*/false, flags.attempt.value_or(0));
  if (!flags.stream.empty()) tail.setStream(*client::parseLogStream(flags.stream));
  (*loop)->on_log_chunk = [&](uint64_t token, int rank, const Result<proto::LogChunk>& chunk) {
    tail.onChunk(token, rank, chunk);
  };
  // Without --follow: what each log holds now. With it: until every rank has exited and its
  // log has been printed, through agents that drop out and come back.
  while (flags.follow ? !tail.allFinished() : !tail.caughtUp()) {
    tail.request();
    (*loop)->runFor(100);
  }
  for (const auto& [rank, error] : tail.errors()) {
    printError("rank " + std::to_string(rank) + ": " + error.message());
    // Its agent is down (or the log is gone): the end the history kept when the rank exited.
    auto kept = kept_tails.find(rank);
    if (kept == kept_tails.end()) continue;
    const auto lines = std::count(kept->second.begin(), kept->second.end(), '\n');
    printError("the last " + std::to_string(lines) + " lines of rank " + std::to_string(rank) +
               "'s log, kept in the history when it exited:");
    const std::string prefix = flags.rank ? "" : "[rank " + std::to_string(rank) + "] ";
    size_t start = 0;
    for (size_t end; (end = kept->second.find('\n', start)) != std::string::npos; start = end + 1) {
      const std::string line = kept->second.substr(start, end - start);
      std::printf("%s%s\n", prefix.c_str(), (flags.rank ? line : terminalSafe(line)).c_str());
    }
  }
  return tail.errors().empty() ? kExitOk : kExitFailure;
}

}  // namespace ringmaster::ctl
