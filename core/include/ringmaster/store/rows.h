#pragma once
// The rows of the client-side history (reader.h reads them): jobs, ranks, metrics, host health,
// agents, Slurm rows and lifecycle events, as the agents' journals reported them.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/job/job_model.h"
#include "ringmaster/protocol/ringmaster.pb.h"

namespace ringmaster::store {

// Job states are the job model's words (job::phaseName of JobModel::phase): "submitted",
// "running", "restarting", "succeeded", "failed", "stopped". The history persists the model's
// fold (`fold`) and never decides a state itself.
struct JobRow {
  std::string job_id{}, name{}, launcher{}, state{}, spec_yaml{};
  int world_size = 0;
  uint32_t attempt = 0;                      // newest attempt seen
  double submitted_at = 0, finished_at = 0;  // unix seconds; finished_at 0 while running
  bool archived = false;   // kept whole, left out of lists unless asked for (Store::setArchived)
  int restarts_left = -1;  // JobModel::restartsLeft(); -1 before any record
  proto::JobFold fold{};   // the model's fold (for rows from before it was kept: from `state`)
};

// Rank states: "pending" (assigned, not started), "running", "succeeded", "failed", "stopped".
struct RankRow {
  std::string job_id{};
  uint32_t attempt = 0;
  int rank = 0;
  int local_rank = 0;
  std::string agent{};
  int pid = 0;
  std::string state{};
  int exit_code = 0;
  int signal = 0;
  std::string error{};
  int64_t last_step = -1;  // highest metric step stored for the rank; -1 when none
  double started_at = 0, finished_at = 0;
  std::string device{};  // what it trained on (proto::RankStarted.device)
  // The end of its log when it exited (its last 100 lines), one line per '\n'; "" until then.
  std::string log_tail{};
};

// One stored series: a metric of one rank in one attempt, and the id its points are read by.
struct SeriesRow {
  int64_t id = 0;
  uint32_t attempt = 0;
  int rank = 0;
  std::string name{};
};

struct MetricRow {
  std::string job_id{};
  uint32_t attempt = 0;
  int rank = 0;
  int64_t step = 0;
  std::string name{};
  double value = 0;
  double time = 0;
};

// Unset filters match everything; an empty job_id matches every job.
struct MetricQuery {
  std::string job_id{};
  std::optional<int> rank{};
  std::optional<std::string> name{};
  std::optional<uint32_t> attempt{};
};

// One bucket of a decimated series: the min and max value in the bucket, and the value, step and
// time of its last point (highest step, then newest record).
struct SeriesPoint {
  int64_t step = 0;
  double min = 0, max = 0, last = 0;
  double time = 0;
};

struct HealthRow {
  std::string agent{};
  double time = 0;
  proto::HealthSample sample{};
};

struct AgentRow {
  std::string name{}, endpoint{};
  proto::Inventory inventory{};
  double last_seen = 0;  // unix seconds of the last recordAgent()
};

// A job queued in Slurm: where it is, and what Slurm last said of it.
struct SlurmJobRow {
  std::string job_id{}, cluster{}, job_dir{}, slurm_job_id{}, state{}, reason{};
  double updated_at = 0;
};

// A job lifecycle record as stored: kind is "job_accepted", "rank_started", "rank_exited",
// "job_finished", "job_failure", "job_restart", "job_outcome", "job_decision", "hang_<stage>" or
// "gpu_fault" (cause_kind: the fault's kind; problem: a critical one); detail is for people.
struct EventRow {
  std::string job_id{};
  uint32_t attempt = 0;
  std::string source{};
  uint64_t seq = 0;
  std::string agent{};  // the agent that journaled it
  double time = 0;
  std::string kind{}, detail{};  // detail: for people; code reads the fields below
  int rank = -1;                 // the rank it is about (a failure's culprit); -1: the job
  std::string rank_agent{};      // that rank's agent (a failure's culprit's), "" when none
  bool problem = false;          // a rank failed, an attempt failed, or a hang
  int exit_code = 0, signal = 0;
  std::string cause_kind{};  // a failure's kind: exited | signalled | hung | agent_lost | launch
                             // | drill (ringmasterctl kill) | client_restart; a hang watch's
                             // stage
};

// A host's record in the history: the rank-seconds its ranks ran (ranks that ended), and the
// failed attempts whose first failing rank was on it (launch failures and crash drills left
// out). Their ratio is the host's failure rate, for checkpoint economics
// (ringmaster/hardware/checkpoint_economics.h).
struct HostRecord {
  std::string agent{};
  double rank_seconds = 0;
  int failures = 0;
};

// The model of a job as the history has it (its row and its newest attempt's ranks).
job::StoredJob storedJobOf(const JobRow& job, const std::vector<RankRow>& ranks);

// The event the history stores for a lifecycle record (job_accepted, rank_started, rank_exited,
// job_finished, job_failure, job_restart, job_outcome, hang_*), kind "" for other records. Live
// views use it so that they say the same as the history, field for field.
EventRow eventOf(const std::string& agent, const proto::JournalRecord& record);
// "native", "torchrun", "command" ("" when unset), as JobRow::launcher says it.
const char* launcherNameOf(proto::Launcher launcher);

}  // namespace ringmaster::store
