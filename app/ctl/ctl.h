#pragma once
// ringmasterctl's commands. Each returns the process exit code:
// 0 success, 1 failure (an agent, the history, a failed job), 2 bad input (spec, flags).

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ringmaster/client/cluster_client.h"
#include "ringmaster/job/job_model.h"
#include "ringmaster/slurm/command.h"

namespace ringmaster::ctl {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

struct Globals {
  std::string cluster_file;  // --cluster
  std::string db_file;       // --db
};

struct SubmitFlags {
  std::string spec_path;
  bool wait = false;
  bool follow = false;
  std::string slurm;            // --slurm NAME: run on that Slurm cluster of the cluster file
  std::optional<int> nodes;     // --nodes N (with --slurm)
  bool dry_run = false;         // print the batch script, submit nothing
  double agent_timeout_s = 10;  // --agent-timeout: then say which agents a step waits for
  double agent_wait_s = 120;    // --agent-wait: the most a step waits for an agent alive but busy
};

struct LogsFlags {
  std::string job;
  std::optional<int> rank;
  bool follow = false;
  std::optional<uint32_t> attempt;  // an earlier attempt's logs; the newest when unset
  std::string stream;               // "stdout" or "stderr" alone; both when empty
};

struct RestartFlags {
  std::string job;
  std::optional<int> rank;
  std::string agent;
  bool exclude = false;
};

struct MetricsFlags {
  std::string job;
  std::optional<int> rank;
  std::string name;
  std::string format = "csv";
};

struct ClusterAddFlags {
  std::string name;
  std::string endpoint;
  std::string server_key;
  bool replace = false;
};

int runKeys(const Globals& globals);
int runClusterAdd(const Globals& globals, const ClusterAddFlags& flags);
int runClusterRemove(const Globals& globals, const std::string& name);
int runAgents(const Globals& globals, const std::vector<std::string>& names, bool json);
int runSubmit(const Globals& globals, const SubmitFlags& flags);
int runStatus(const Globals& globals, const std::string& job, bool json);
int runLogs(const Globals& globals, const LogsFlags& flags);
int runMetrics(const Globals& globals, const MetricsFlags& flags);
struct StopFlags {
  std::string job;
  bool wait = false;      // until no rank of the job is pending or running
  double timeout_s = 60;  // of the wait
};
int runStop(const Globals& globals, const StopFlags& flags);
int runRestart(const Globals& globals, const RestartFlags& flags);
// A crash drill: SIGKILL to one rank of a running job (ClusterClient::killRank).
int runKill(const Globals& globals, const std::string& job_ref, int rank);
// Archived runs are listed only with `with_archived` (--archived), marked as archived.
// A preflight's link tests are left out unless with_link_tests (stderr says how many).
int runRuns(const Globals& globals, bool json, bool with_archived = false,
            bool with_link_tests = false);
int runSync(const Globals& globals);
// Per host and GPU over the history's runs (the last `since_days`, or all): runs, failures, who
// failed first, hangs, GPU faults, and the outliers named (ringmaster/hardware/hardware_report.h).
int runHardware(const Globals& globals, bool json, std::optional<double> since_days);

struct PreflightFlags {
  std::vector<std::string> agents;  // empty: every agent of the cluster file
  bool json = false;
  bool no_links = false;  // the agents' own checks only
  bool history = false;   // list the checks kept in the history instead
  std::string show;       // print a kept check again: its number, or "last"
};
// The cluster preflight (client::runPreflight): exit 0 all clear, 1 when a problem is named.
int runPreflightCommand(const Globals& globals, const PreflightFlags& flags);
int runDemo(const Globals& globals, const std::string& spec_path);

// Shared by submit and demo: submits and, as asked, follows logs live and/or waits for the end.
// compact_metrics: see LogTail.
int submitAndWatch(const client::ClientPaths& paths, const job::JobSpec& spec, bool wait,
                   bool follow, bool compact_metrics = false, client::SubmitOptions options = {});

// A job whose spec has a slurm: section (useSlurm applied): sbatch, or with --dry-run the script.
int runSlurmSubmit(const Globals& globals, const job::JobSpec& spec, const SubmitFlags& flags);
// A job on Slurm: its job directory's journals into the history (through `writer`, flushed
// before it returns), and Slurm's state now (stored with the job). nullopt for a job that is not
// on Slurm.
std::optional<store::SlurmJobRow> catchUpSlurmJob(const Globals& globals, store::Reader& history,
                                                  store::BatchWriter& writer,
                                                  const std::string& job_id);
// The ranks' logs of a job on Slurm, from its job directory (here, or on `where`'s login node);
// with flags.follow until the job is over.
int printSlurmLogs(store::Reader& history, store::BatchWriter& writer,
                   const store::SlurmJobRow& slurm, const slurm::Where& where,
                   const LogsFlags& flags);
// "slurm job 123 on hpc: pending (Priority)".
std::string slurmRowText(const store::SlurmJobRow& row);
// "job ID succeeded: N rank(s) in Ts", then each failed attempt's cause and each failed rank.
void printOutcome(const job::JobModel& job, const std::string& job_id, double seconds);

// Prints the spec's errors (the native: section's included) compiler style; false when any.
bool checkSpec(const job::SpecParseResult& parsed);

// Opens the cluster; prints the error and returns nullptr when it cannot.
std::unique_ptr<client::ClusterClient> openCluster(const Globals& globals);

// Pulls every agent's journal into the history, quietly; unreachable agents are warned about on
// stderr and, when `silent` is given, named there. Returns false when the history cannot be
// written.
bool syncQuietly(client::ClusterClient& cluster, const std::vector<std::string>& agents = {},
                 std::set<std::string>* silent = nullptr);
// The job JOB (an id or a unique prefix) after a sync, or nullopt with the error printed.
std::optional<store::JobRow> findJob(client::ClusterClient& cluster, const std::string& job);

// Prints "ringmasterctl: <message>" on stderr.
void printError(const std::string& message);

}  // namespace ringmaster::ctl
