// `ringmasterctl submit` of a job that runs on Slurm: the batch script (--dry-run), sbatch, and
// --wait, which follows Slurm's state and the job's journals in its job directory.
#include <chrono>
#include <cstdio>
#include <sstream>
#include <thread>

#include "ctl.h"
#include "ringmaster/client/local_agent.h"
#include "ringmaster/client/slurm_submit.h"
#include "ringmaster/client/slurm_sync.h"
#include "ringmaster/job/job_model.h"
#include "slurm_logs.h"
#include "terminal_safe.h"

namespace ringmaster::ctl {
namespace {

using Clock = std::chrono::steady_clock;

// The last lines of the job's Slurm output file: what Slurm and an agent that never came up said.
std::string outputTail(const slurm::JobDir& dir, const std::string& slurm_job_id,
                       const slurm::Where& where, int lines) {
  auto text = slurm::jobFilesAt(where)->tail(dir.outputFile(slurm_job_id), 64 << 10);
  if (!text.isOk()) return "  | (" + text.status().message() + ")\n";
  std::vector<std::string> kept;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    kept.push_back(line);
    if (kept.size() > static_cast<size_t>(lines)) kept.erase(kept.begin());
  }
  std::string tail;
  for (const auto& l : kept) tail += "  | " + l + "\n";
  return tail;
}

std::string slurmStateText(const slurm::JobState& state) {
  std::string text = slurm::phaseName(state.phase);
  if (state.phase == slurm::Phase::kUnknown) text += " (" + state.slurm_state + ")";
  if (!state.reason.empty()) text += " (" + state.reason + ")";
  return text;
}

// Follows the job until it is over: Slurm's state as it changes, the journals into the
// history, and with follow_logs every rank's log. The job is over when its agents say so, or when
// Slurm has ended it.
int waitForSlurmJob(client::ClusterClient& cluster, const client::SlurmSubmission& job,
                    const std::string& login, bool follow_logs) {
  const auto started = Clock::now();
  auto history = cluster.history();
  auto writer = cluster.writer();
  if (!history.isOk() || !writer.isOk()) {
    printError((history.isOk() ? writer.status() : history.status()).message());
    return kExitFailure;
  }
  auto row = (*history)->slurmJob(job.job_id);
  if (!row.isOk()) {
    printError(row.status().message());
    return kExitFailure;
  }
  const slurm::Where where{login, ""};
  client::SlurmJobSync sync(job.dir, *history, *writer, where);
  job::JobModel progress(job.job_id);
  std::optional<SlurmLogPrinter> logs;
  if (follow_logs) logs.emplace(*row, where, std::nullopt);
  auto print_logs = [&] {
    if (Status stored = (*writer)->flush(); !stored.isOk()) printError(stored.message());
    auto ranks = (*history)->ranks(job.job_id);
    if (!logs || !ranks.isOk()) return;
    while (true) {
      auto read = logs->round(*ranks, /*mark_attempts=*/true);
      if (!read.isOk() || *read == 0) break;
    }
    std::fflush(stdout);
  };
  std::string last_said;
  std::optional<slurm::JobState> slurm_state;
  auto next_query = Clock::now();
  while (true) {
    auto polled = sync.poll([&](const std::string& agent, const proto::JournalRecord& record) {
      progress.apply(agent, record);
    });
    if (!polled.isOk()) printError("warning: " + polled.status().message());
    print_logs();
    if (progress.decided()) break;
    if (Clock::now() >= next_query) {
      auto state = client::refreshSlurmState(*writer, where, &*row);
      if (state.isOk()) {
        slurm_state = *state;
        const std::string said = slurmStateText(*state);
        if (said != last_said) {
          std::printf("slurm job %s: %s\n", job.slurm_job_id.c_str(), said.c_str());
          std::fflush(stdout);
          last_said = said;
        }
        if (slurm::isFinished(state->phase)) break;
      }
      next_query = Clock::now() + std::chrono::seconds(2);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  // The last records (the agents journal their outcome before Slurm ends the step).
  if (auto polled = sync.poll([&](const std::string& agent, const proto::JournalRecord& record) {
        progress.apply(agent, record);
      });
      !polled.isOk()) {
    printError("warning: " + polled.status().message());
  }
  print_logs();
  if (auto ranks = (*history)->ranks(job.job_id); logs && ranks.isOk()) logs->finish(*ranks);
  printOutcome(progress, job.job_id, std::chrono::duration<double>(Clock::now() - started).count());
  if (!progress.decided() && slurm_state) {
    std::printf("  slurm: %s; the job's agents reported no outcome. The end of %s:\n%s",
                slurmStateText(*slurm_state).c_str(), job.dir.outputFile(job.slurm_job_id).c_str(),
                terminalSafe(outputTail(job.dir, job.slurm_job_id, where, 15)).c_str());
  }
  return progress.succeeded() ? kExitOk : kExitFailure;
}

}  // namespace

std::optional<store::SlurmJobRow> catchUpSlurmJob(const Globals& globals, store::Reader& history,
                                                  store::BatchWriter& writer,
                                                  const std::string& job_id) {
  auto row = history.slurmJob(job_id);
  if (!row.isOk()) return std::nullopt;
  const client::ClientPaths paths =
      client::ClientPaths::resolve(globals.cluster_file, globals.db_file);
  const slurm::Where where{client::slurmLoginOf(paths.cluster_file, row->cluster), ""};
  client::SlurmJobSync sync(slurm::JobDir{row->job_dir}, &history, &writer, where);
  if (auto polled = sync.poll(); !polled.isOk()) {
    printError("warning: " + polled.status().message() + " (its newest records are missing)");
  }
  auto state = client::refreshSlurmState(&writer, where, &*row);
  if (!state.isOk() && state.status().code() != ErrorCode::kNotFound) {
    printError("warning: " + state.status().message() + " (showing Slurm's last known state)");
  }
  if (Status stored = writer.flush(); !stored.isOk()) printError("warning: " + stored.message());
  return *row;
}

std::string slurmRowText(const store::SlurmJobRow& row) {
  slurm::JobState state;
  state.slurm_state = row.state;
  state.phase = slurm::phaseOf(row.state);
  state.reason = row.reason;
  return "slurm job " + row.slurm_job_id + " on " + row.cluster + ": " + slurmStateText(state);
}

int runSlurmSubmit(const Globals& globals, const job::JobSpec& spec, const SubmitFlags& flags) {
  const client::ClientPaths paths =
      client::ClientPaths::resolve(globals.cluster_file, globals.db_file);
  auto clusters = client::loadSlurmClusters(paths.cluster_file);
  if (!clusters.isOk()) {
    printError(clusters.status().message());
    return kExitBadInput;
  }
  auto cluster = client::findSlurmCluster(*clusters, spec.slurm->cluster, paths.cluster_file);
  if (!cluster.isOk()) {
    printError(cluster.status().message());
    return kExitBadInput;
  }
  const std::string agent_program = client::executableDir() + "/ringmaster-agent";
  if (flags.dry_run) {
    auto plan =
        client::planSlurmSubmission(spec, *cluster, client::newJobId(spec.name), agent_program);
    if (!plan.isOk()) {
      printError(plan.status().message());
      return kExitBadInput;
    }
    std::printf("%s", plan->script.c_str());
    return kExitOk;
  }
  auto client = openCluster(globals);
  if (!client) return kExitFailure;
  auto submitted = client::submitToSlurm(*client, spec, *cluster, agent_program);
  if (!submitted.isOk()) {
    printError(submitted.status().message());
    return submitted.status().code() == ErrorCode::kInvalidArgument ? kExitBadInput : kExitFailure;
  }
  std::printf("%s\nslurm job %s on %s, job directory %s\n", submitted->job_id.c_str(),
              submitted->slurm_job_id.c_str(), cluster->name.c_str(), submitted->dir.root.c_str());
  std::fflush(stdout);
  if (!flags.wait && !flags.follow) return kExitOk;
  return waitForSlurmJob(*client, *submitted, cluster->login, flags.follow);
}

}  // namespace ringmaster::ctl
