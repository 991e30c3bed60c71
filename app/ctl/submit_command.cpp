// `ringmasterctl submit JOB.yaml [--wait] [--follow]` and the watch loop the demo shares.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <thread>

#include "ctl.h"
#include "log_tail.h"
#include "ringmaster/client/job_progress.h"
#include "ringmaster/train/config.h"

namespace ringmaster::ctl {
namespace {

using Clock = std::chrono::steady_clock;

void printOutcome(const client::JobProgress& progress, const std::string& job_id, double seconds) {
  std::string state = progress.succeeded() ? "succeeded" : "failed";
  if (!progress.succeeded() && !progress.anyFailed()) state = "stopped";
  std::printf("job %s %s: %d rank(s) in %.1fs\n", job_id.c_str(), state.c_str(),
              progress.worldSize(), seconds);
  for (const auto& [rank, exit] : progress.exits()) {
    if (exit.state() == proto::SUCCEEDED) continue;
    std::printf("  rank %d: %s", rank, proto::RankState_Name(exit.state()).c_str());
    if (exit.signal())
      std::printf(" (signal %d)", exit.signal());
    else
      std::printf(" (exit code %d)", exit.exit_code());
    if (!exit.error().empty()) std::printf(": %s", exit.error().c_str());
    std::printf("\n");
  }
  std::fflush(stdout);
}

}  // namespace

int submitAndWatch(client::ClusterClient& cluster, const job::JobSpec& spec, bool wait, bool follow,
                   bool compact_metrics) {
  const auto started = Clock::now();
  auto submitted = cluster.submit(spec);
  if (!submitted.isOk()) {
    printError(submitted.status().message());
    return submitted.status().code() == ErrorCode::kInvalidArgument ? kExitBadInput : kExitFailure;
  }
  std::printf("%s\n", submitted->job_id.c_str());
  std::fflush(stdout);
  if (!wait && !follow) return kExitOk;

  client::JobProgress progress(submitted->job_id);
  bool stop_sent = false;
  // A failed rank fails the attempt: take the other agents' ranks down too (gang semantics).
  auto stopIfFailed = [&] {
    if (progress.anyFailed() && !progress.finished() && !stop_sent) {
      stop_sent = true;
      cluster.stop(submitted->job_id, 2000);
    }
  };
  client::SyncOptions sync;
  sync.on_record = [&](const std::string&, const proto::JournalRecord& r) { progress.observe(r); };
  sync.timeout_ms = 0;

  if (follow) {
    LogTail logs(cluster, submitted->job_id, submitted->shares, /*prefix=*/true, compact_metrics);
    while (true) {
      auto synced = cluster.sync(submitted->agentNames(), sync);
      if (!synced.isOk()) {
        printError(synced.status().message());
        return kExitFailure;
      }
      for (const auto& [agent, error] : synced->agent_errors) {
        printError("agent '" + agent + "': " + error.message());
      }
      stopIfFailed();
      bool printed = logs.poll();
      if (progress.finished() && logs.allFinished()) break;
      if (!printed) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  } else {
    sync.follow = true;
    sync.poll_wait_ms = 1000;
    sync.until = [&] { return progress.finished() || (progress.anyFailed() && !stop_sent); };
    while (!progress.finished()) {
      auto synced = cluster.sync(submitted->agentNames(), sync);
      if (!synced.isOk()) {
        printError(synced.status().message());
        return kExitFailure;
      }
      if (!synced->agent_errors.empty()) {
        for (const auto& [agent, error] : synced->agent_errors) printError(error.message());
        return kExitFailure;
      }
      stopIfFailed();
    }
  }
  printOutcome(progress, submitted->job_id,
               std::chrono::duration<double>(Clock::now() - started).count());
  return progress.succeeded() ? kExitOk : kExitFailure;
}

bool checkSpec(const job::SpecParseResult& parsed) {
  if (!parsed.ok()) {
    std::fprintf(stderr, "%s", job::formatDiagnostics(parsed.errors).c_str());
    return false;
  }
  // The native: section is the trainer's to judge; it is checked here so that a mistake is
  // reported before anything reaches an agent.
  if (parsed.spec->launcher == job::Launcher::kNative) {
    auto config = train::parseNativeConfig(parsed.spec->native_yaml, parsed.spec->native_line);
    if (!config.isOk()) {
      std::istringstream lines(config.status().message());
      std::string line;
      while (std::getline(lines, line)) {
        std::fprintf(stderr, "%s: error: %s\n", parsed.spec->file.c_str(), line.c_str());
      }
      return false;
    }
  }
  return true;
}

int runSubmit(const Globals& globals, const SubmitFlags& flags) {
  job::SpecParseResult parsed = job::loadJobSpec(flags.spec_path);
  if (!checkSpec(parsed)) return kExitBadInput;
  auto cluster = openCluster(globals);
  if (!cluster) return kExitFailure;
  return submitAndWatch(*cluster, *parsed.spec, flags.wait, flags.follow);
}

}  // namespace ringmaster::ctl
