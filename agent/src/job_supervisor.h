#pragma once
// The agent's ranks: admission (slots, checks), launch with the launcher's environment contract,
// per-rank logs parsed for metrics, exit bookkeeping, stop (SIGTERM, then SIGKILL after a grace
// period) and local gang teardown when a rank fails. Everything it sees goes to the journal.
//
// Thread-safety: none; the agent's main thread owns it.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "job_identity.h"
#include "journal.h"
#include "launchers/launcher.h"
#include "rank_cgroups.h"
#include "rank_confinement.h"
#include "ringmaster/job/device_plan.h"
#include "ringmaster/metrics/line_parser.h"
#include "ringmaster/protocol/ringmaster.pb.h"
#include "ringmaster/util/result.h"
#include "stderr_index.h"

namespace ringmaster::agent {

struct SupervisorOptions {
  std::string agent_name;
  std::string state_dir;  // jobs live in state_dir/jobs/<job id>/
  int slots = 1;
  std::vector<job::Gpu> gpus;         // the GPUs ranks may use (job::planDevices gives them out)
  std::vector<std::string> base_env;  // the agent's environment, passed on to ranks
  std::chrono::milliseconds prepare_hold{30000};  // how long a PrepareJob reserves slots
  std::string worker_path;      // ringmaster-worker, which runs the ranks of `native` jobs
  RankConfinement confinement;  // the user ranks run as, and their limits
  // With --job-uids: each job's ranks get a uid of their own instead (job_identity.h).
  JobIdentities* identities = nullptr;
  // Job env entries that change how programs are loaded (LD_PRELOAD, LD_AUDIT,
  // LD_LIBRARY_PATH) are refused unless allowed.
  bool allow_loader_env = false;
  RankCgroups* cgroups = nullptr;  // each rank's memory limit; none: no limit
  // Metric records a rank may journal a second (bursts of twice that): a job printing metric
  // lines as fast as it can (2.3 million in 3 s) would otherwise fill the journal, the disk
  // under it, and the agent's loop. Lines past it stay in the rank's log.
  double metric_rate = 1000;
  // A rank killed by SIGTERM that the agent did not send was stopped, not failed: under Slurm,
  // scancel, preemption and the time limit signal every process of the step at once, ranks
  // included, and a rank may die before its agent has read its own SIGTERM.
  bool sigterm_is_stop = false;
  // The agent's log, for what only its operator can act on (a uid quarantined).
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

// What the gang coordinator hears from the supervisor (takeEvents()), in order.
struct AttemptEvent {
  std::string job_id;
  uint32_t attempt = 0;
  std::optional<proto::JobFailure> failure;  // the attempt's first failed rank here
  std::optional<proto::RankState> over;      // every rank of the attempt has exited here
};

class JobSupervisor {
 public:
  using Clock = std::chrono::steady_clock;

  JobSupervisor(SupervisorOptions options, Journal* journal);
  ~JobSupervisor();  // kills every rank (SIGKILL to each group)

  // Phase 1: validates the launch and reserves its slots; returns the MASTER_PORT reserved when
  // asked (0 otherwise).
  Result<uint32_t> prepare(const proto::JobLaunch& launch, bool reserve_master_port);
  // Phase 2: starts the ranks. Returns their pids. On failure, nothing keeps running.
  Result<std::vector<int>> launch(const proto::JobLaunch& launch);
  // SIGTERM to every running rank's process group; SIGKILL after `grace` (0: the job's own).
  Result<int> stop(const std::string& job_id, std::chrono::milliseconds grace);
  // A crash drill: SIGKILL to the process group of running rank `rank` of the job here, which
  // then fails as a crash would, with `why` as its error. NOT_FOUND when the job or the rank
  // does not run here.
  Status killRank(const std::string& job_id, int rank, const std::string& why);
  // SIGTERM/SIGKILL everything and wait for it (agent shutdown).
  void stopAll(std::chrono::milliseconds grace);

  // Rank output pipes, for the agent's poll loop.
  std::vector<int> outputFds() const;
  void onOutputReadable(int fd);
  // waitpid() every exited child and record it. Call when SIGCHLD arrives.
  void reapChildren();
  // Deadlines (SIGKILL after grace, expired reservations). Returns when it next needs a call.
  Clock::time_point onTimer(Clock::time_point now);

  int slotsTotal() const { return options_.slots; }
  int slotsFree() const;
  std::vector<std::string> runningJobs() const;
  // Every rank still running, in job then rank order (the inventory's running_ranks).
  std::vector<proto::RunningRank> runningRanks() const;
  // Running, or prepared and waiting for its launch.
  bool isActive(const std::string& job_id) const {
    return jobs_.count(job_id) > 0 || reservations_.count(job_id) > 0;
  }
  bool busy() const { return !jobs_.empty() || !reservations_.empty(); }

  // Per-rank log file of an attempt (0: the latest known) and whether that rank has exited.
  struct LogInfo {
    std::string path;
    bool finished = true;
  };
  Result<LogInfo> logInfo(const std::string& job_id, int rank, uint32_t attempt) const;

  // True once since the last call when something was journaled or logged (wakes long polls).
  bool takeActivity();
  std::vector<AttemptEvent> takeEvents();
  // Each rank of the job's running attempt: newest step, time since, what it does now.
  std::vector<proto::RankProgress> progress(const std::string& job_id);

 private:
  struct Rank {
    int rank = 0;
    int local_rank = 0;
    pid_t pid = -1;
    int output_fd = -1;  // stdout's pipe
    int stderr_fd = -1;  // stderr's pipe
    int log_fd = -1;     // both, as they come
    uint64_t log_bytes = 0;
    StderrIndexWriter stderr_index;  // which of the log's bytes came from stderr
    std::string device;              // what it trains on (RankStarted.device)
    double started_at = 0;           // unix seconds
    std::string phase_file;          // kept by native workers (job/rank_phase.h)
    std::string error_file;          // TORCHELASTIC_ERROR_FILE (torch_error_file.h)
    std::string pending_line;        // of stdout: lines are split per stream
    std::string pending_stderr_line;
    int64_t next_step = 0;            // per-rank counter for metric lines without "step"
    int64_t last_step = -1;           // newest step seen; progress is a step above it
    Clock::time_point last_progress;  // when it started, or reached last_step
    double slowest_step = 0;      // the longest wait for a new step so far, seconds (slowestAfter)
    double slowest_pause = 0;     // the longest that ended in a line of the same step (an
                                  // evaluation's, a checkpoint's): a pause, not a step
    double metric_tokens = 0;     // metric records it may journal now (see handleLine)
    Clock::time_point tokens_at;  // when metric_tokens was last refilled
    uint64_t lines_not_parsed = 0;  // lines past the metric rate, kept in the log only
    std::string cgroup;             // its cgroup's name (SupervisorOptions::cgroups)
    uint64_t cpu_ticks = 0;         // at cpu_sampled (for "computing" or "waiting")
    Clock::time_point cpu_sampled;
    bool stop_requested = false;
    std::string killed_because;  // killRank's reason: the error its exit is recorded with
    bool exited = false;
  };
  struct Job {
    proto::JobLaunch launch;
    const Launcher* launcher = nullptr;  // its contract (launchers/launcher.h)
    std::string interpreter;             // what runs its .py entry point (describeInterpreter)
    RankConfinement confinement;         // who its ranks run as
    std::vector<Rank> ranks;
    std::optional<metrics::PatternMatcher> patterns;
    std::optional<Clock::time_point> kill_at;
    bool any_failed = false;
    bool any_stopped = false;
    // Ranks still running when the job was first asked to stop (by a client or its gang), so a
    // client's stop that arrives after the gang's reports what the stop ended, not 0.
    int ranks_stopped = -1;
  };
  struct FinishedAttempt {
    uint32_t attempt = 0;
    int ranks_stopped = 0;
  };
  void reportFailure(Job& job, const Rank& rank, const proto::RankExited& exited);
  struct Reservation {
    int slots = 0;
    Clock::time_point expires;
  };

  // Where an attempt's files are (made by launch()).
  struct AttemptFiles {
    std::string dir;          // state_dir/jobs/<id>
    std::string attempt_dir;  // dir/attempt-N: logs, phase and error files, the secret
    std::string checkpoint_dir;
    std::string workdir;              // where its ranks run
    std::string rendezvous_key_file;  // empty: the job has no rendezvous
    gid_t readers = 0;                // the group its ranks read the agent's files as
  };
  Status writeAttemptFiles(const proto::JobLaunch& launch, const RankConfinement& ranks,
                           AttemptFiles* files) const;
  Status journalAccepted(const Job& job);
  Result<Rank> startRank(Job& job, const AttemptFiles& files,
                         const proto::RankAssignment& assignment, const job::RankDevices& device,
                         EnvEntries launcher_env);
  Status validate(const proto::JobLaunch& launch) const;
  Result<job::DevicePlan> devicePlan(const proto::JobLaunch& launch) const;
  // The program and arguments `rank` runs, as its launcher says.
  std::vector<std::string> rankArgv(const Launcher& launcher, const proto::JobLaunch& launch,
                                    const proto::RankAssignment& rank) const;
  std::string jobDir(const std::string& job_id) const;
  std::string workdirOf(const proto::JobLaunch& launch) const;  // where its ranks run
  std::string logPath(const std::string& job_id, uint32_t attempt, int rank) const;
  // Appends a record. Most callers go on whatever happens: an I/O failure is logged by the
  // journal's next flush. A record refused as too large is not written at all.
  Status journal(proto::JournalRecord& record);
  void appendRecord(proto::JournalRecord& record);  // a failure is not the caller's to handle
  // With per-job uids: the job's uid is ended and freed, its directories taken back.
  void releaseIdentity(const std::string& job_id);
  void handleOutput(Job& job, Rank& rank, const char* data, size_t size, bool from_stderr);
  void handleLine(Job& job, Rank& rank, std::string_view line);
  void drainOutput(Job& job, Rank& rank, bool final);  // both pipes
  void drainPipe(Job& job, Rank& rank, bool from_stderr, bool final);
  void recordExit(Job& job, Rank& rank, int wait_status);
  void finishIfDone(const std::string& job_id);
  void signalJob(Job& job, int signal);

  SupervisorOptions options_;
  Journal* journal_;
  std::map<std::string, Job> jobs_;  // running jobs
  std::map<std::string, Reservation> reservations_;
  std::map<std::string, FinishedAttempt> finished_attempts_;  // job id -> latest one
  bool activity_ = false;
  std::vector<AttemptEvent> events_;
};

// The first of `count` consecutive TCP ports that were all free a moment ago (MASTER_PORT of a
// job; a tensorflow job's tasks take MASTER_PORT + rank). Taken below the kernel's ephemeral
// range (ip_local_port_range): outgoing connections are given ports from there, so one picked
// there (bind to port 0) could be taken by a connection before the job binds it, and was, in CI.
// With every block below it taken, one port comes from the kernel; a block is refused
// (RESOURCE_EXHAUSTED, naming the range and the way out), not placed there silently.
Result<uint32_t> reserveFreePort(uint32_t count = 1);

// [A-Za-z0-9._-]{1,128}, not "." or "..": safe as a directory name.
bool isValidJobId(const std::string& job_id);

}  // namespace ringmaster::agent
