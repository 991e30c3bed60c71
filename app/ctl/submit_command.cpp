// `ringmasterctl submit JOB.yaml [--wait] [--follow]` and the watch loop the demo shares.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "ctl.h"
#include "log_tail.h"
#include "ringmaster/client/slurm_submit.h"
#include "ringmaster/job/job_model.h"
#include "ringmaster/train/config.h"
#include "session_loop.h"
#include "terminal_safe.h"

namespace ringmaster::ctl {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

void printOutcome(const job::JobModel& job, const std::string& job_id, double seconds) {
  // The leader's word; without it (its agent is gone), the job did not succeed.
  const char* word = job::phaseName(job.decided() ? job.phase() : job::JobPhase::kFailed);
  std::printf("job %s %s: %d rank(s) in %.1fs", job_id.c_str(), word, job.worldSize(), seconds);
  if (job.attempt() > 1) std::printf(", %u attempts", job.attempt());
  std::printf("\n");
  // Which Python ran the entry point, each agent's own: "it used the wrong interpreter" is the
  // first thing to rule out when a script that works by hand fails here.
  std::map<std::string, std::set<std::string>> interpreters;  // interpreter -> agents
  for (const auto& [rank, state] : job.ranks()) {
    if (!state.interpreter.empty()) interpreters[state.interpreter].insert(state.agent);
  }
  for (const auto& [interpreter, agents] : interpreters) {
    std::string names;
    for (const std::string& agent : agents) names += (names.empty() ? "" : ", ") + agent;
    std::printf("  python on %s: %s\n", names.c_str(), interpreter.c_str());
  }
  for (const auto& [attempt, failure] : job.failures()) {
    std::printf("  attempt %u: %s\n", attempt, terminalSafe(failure.cause()).c_str());
  }
  // The root cause's own words: the end of the failing rank's output (where a traceback is).
  if (!job.succeeded() && !job.failures().empty()) {
    const proto::JobFailure& last = job.failures().rbegin()->second;
    if (last.last_lines_size() > 0) {
      std::printf("  the end of rank %d's output%s:\n", last.rank(),
                  last.agent().empty() ? "" : (" on " + last.agent()).c_str());
      for (const std::string& line : last.last_lines()) {
        std::printf("    | %s\n", terminalSafe(line).c_str());
      }
    }
  }
  if (job.outcome() && !job.outcome()->cause().empty() && !job.succeeded()) {
    std::printf("  cause: %s\n", terminalSafe(job.outcome()->cause()).c_str());
  }
  for (const auto& [rank, state] : job.ranks()) {
    if (state.going() || state.status == job::RankStatus::kSucceeded) continue;
    std::printf("  rank %d: %s", rank, job::statusName(state.status));
    if (state.signal)
      std::printf(" (signal %d)", state.signal);
    else
      std::printf(" (exit code %d)", state.exit_code);
    if (!state.error.empty()) std::printf(": %s", terminalSafe(state.error).c_str());
    std::printf("\n");
  }
  std::fflush(stdout);
}

int submitAndWatch(const client::ClientPaths& paths, const job::JobSpec& spec, bool wait,
                   bool follow, bool compact_metrics, client::SubmitOptions options) {
  const auto started = Clock::now();
  auto loop = SessionLoop::start(paths);
  if (!loop.isOk()) {
    printError(loop.status().message());
    return kExitFailure;
  }
  std::optional<Result<client::SubmittedJob>> submitted;
  std::optional<job::JobModel> progress;
  // The job's first records may come before the answer to the submission (the session watches
  // the journals on one thread, and submits on another): kept until the job's id is known.
  std::vector<std::pair<std::string, proto::JournalRecord>> early;
  (*loop)->on_submitted = [&](const Result<client::SubmittedJob>& result) {
    submitted = result;
    if (!result.isOk()) return;
    progress.emplace(result->job_id);
    for (const auto& [agent, record] : early) progress->apply(agent, record);
    early.clear();
  };
  (*loop)->on_records = [&](const std::string& agent,
                            const std::vector<proto::JournalRecord>& records) {
    for (const auto& record : records) {
      if (progress) {
        progress->apply(agent, record);
      } else if (!submitted && !record.job().empty()) {
        early.emplace_back(agent, record);
      }
    }
  };
  (*loop)->on_submit_waiting = [](const std::string& line) { printError(line); };
  client::ClusterSession& session = (*loop)->session();
  session.postSubmit(spec, std::move(options));
  while (!submitted) (*loop)->runFor(100);
  if (!submitted->isOk()) {
    const Status& error = submitted->status();
    printError(error.message());
    return error.code() == ErrorCode::kInvalidArgument ? kExitBadInput : kExitFailure;
  }
  const std::string job_id = (*submitted)->job_id;
  std::printf("%s\n", job_id.c_str());
  std::fflush(stdout);
  if (!wait && !follow) return kExitOk;

  (*loop)->reportDropouts((*submitted)->agentNames());
  std::optional<LogTail> logs;
  if (follow) logs.emplace(session, job_id, (*submitted)->shares, /*prefix=*/true, compact_metrics);
  (*loop)->on_log_chunk = [&](uint64_t token, int rank, const Result<proto::LogChunk>& chunk) {
    if (logs) logs->onChunk(token, rank, chunk);
  };

  // The job's agents handle failures among themselves (restart or gang teardown); the job is
  // over when its leader says so (JobOutcome).
  std::optional<Clock::time_point> finished_at;
  while (true) {
    if (progress->decided() && !finished_at) finished_at = Clock::now();
    // The last exits and log lines follow the outcome within moments (or never, from an agent
    // that is gone: then what was printed is what there is).
    if (finished_at && ((progress->allExited() && (!logs || logs->allFinished())) ||
                        Clock::now() - *finished_at > std::chrono::seconds(5))) {
      break;
    }
    if (logs) logs->request();
    (*loop)->runFor(100);
  }
  printOutcome(*progress, job_id, std::chrono::duration<double>(Clock::now() - started).count());
  (*loop)->finish();  // the history has the whole job before the command returns
  return progress->succeeded() ? kExitOk : kExitFailure;
}

bool checkSpec(const job::SpecParseResult& parsed) {
  if (!parsed.ok()) {
    std::fprintf(stderr, "%s", job::formatDiagnostics(parsed.errors).c_str());
    return false;
  }
  // The native: section is the trainer's to judge; it is checked here so that a mistake is
  // reported before anything reaches an agent.
  if (parsed.spec->launcher == job::Launcher::kNative) {
    auto config = train::parseNativeConfig(parsed.spec->native_yaml, parsed.spec->native_line,
                                           parsed.spec->world_size);
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
  if (!flags.slurm.empty() || flags.nodes) {
    if (flags.slurm.empty() && !parsed.spec->slurm) {
      printError("--nodes is for a job on Slurm: add --slurm NAME");
      return kExitBadInput;
    }
    const std::string cluster = flags.slurm.empty() ? parsed.spec->slurm->cluster : flags.slurm;
    const int nodes = flags.nodes          ? *flags.nodes
                      : parsed.spec->slurm ? parsed.spec->slurm->nodes
                                           : 1;
    if (Status used = client::useSlurm(&*parsed.spec, cluster, nodes); !used.isOk()) {
      printError(used.message());
      return kExitBadInput;
    }
  }
  if (parsed.spec->slurm) return runSlurmSubmit(globals, *parsed.spec, flags);
  if (flags.dry_run) {
    printError(
        "--dry-run prints a Slurm job's batch script: use it with --slurm NAME or a spec "
        "with a slurm: section");
    return kExitBadInput;
  }
  client::SubmitOptions options;
  options.timeout_ms = static_cast<int>(flags.agent_timeout_s * 1000);
  options.busy_agent_bound_ms = static_cast<int>(flags.agent_wait_s * 1000);
  return submitAndWatch(client::ClientPaths::resolve(globals.cluster_file, globals.db_file),
                        *parsed.spec, flags.wait, flags.follow, /*compact_metrics=*/false,
                        std::move(options));
}

}  // namespace ringmaster::ctl
