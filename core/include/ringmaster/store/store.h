#pragma once
// The client-side history: a SQLite file (WAL) holding what the agents' journals reported, so the
// GUI and CLI can show jobs, ranks, metrics and host health after the fact.
//
// Records are keyed like the journal, (job, attempt, source, seq); applying a batch twice stores
// everything once. Job and rank states are derived from the records alone, so a job submitted by
// another client shows up with the right state.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/job/job_model.h"
#include "ringmaster/protocol/ringmaster.pb.h"
#include "ringmaster/util/result.h"

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

// A job lifecycle record as stored: kind is "job_accepted", "rank_started", "rank_exited" or
// "job_finished"; detail is a human-readable summary.
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
                             // | client_restart; a hang watch's stage
};

// The model of a job as the history has it (its row and its newest attempt's ranks).
job::StoredJob storedJobOf(const JobRow& job, const std::vector<RankRow>& ranks);

// The event the history stores for a lifecycle record (job_accepted, rank_started, rank_exited,
// job_finished, job_failure, job_restart, job_outcome, hang_*), kind "" for other records. Live
// views use it so that they say the same as the history, field for field.
EventRow eventOf(const std::string& agent, const proto::JournalRecord& record);
// "native", "torchrun", "command" ("" when unset), as JobRow::launcher says it.
const char* launcherNameOf(proto::Launcher launcher);

// A SQLite history file. Not thread-safe: one Store object per thread for reads; writes go through
// one writer (the object's own connection, or BatchWriter below). Readers in other threads or
// processes see each committed batch as a whole (WAL).
class Store {
 public:
  // Opens or creates the file (and its parent directories), in WAL mode, migrating an older
  // schema. A file from a newer build gives kUnsupportedVersion.
  static Result<std::unique_ptr<Store>> open(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // The schema version this build writes (PRAGMA user_version of the files it opens).
  static int schemaVersion();

  // Applies pulled journal records of one agent and advances that agent's cursor to next_seq, in
  // ONE transaction, so a crash can never store records without the cursor or vice versa.
  // Idempotent: records already stored are skipped. The cursor never moves backwards.
  Status applyJournal(const std::string& agent, const std::string& journal_id,
                      const std::vector<proto::JournalRecord>& records, uint64_t next_seq);
  // The next seq to pull from the agent's journal; 1 when unknown (seq starts at 1).
  Result<uint64_t> cursor(const std::string& agent, const std::string& journal_id);

  // The submitting client's view (state "submitted"), before any record arrives; later records
  // fill in the rest. Fields the records already set are kept, except submitted_at (the client's
  // time of submission wins); job.state is ignored. Replaying a submission changes nothing.
  Status recordSubmission(const JobRow& job);
  // Remembers an agent's endpoint and latest inventory; last_seen is now.
  Status recordAgent(const std::string& name, const std::string& endpoint,
                     const proto::Inventory& inv);

  // Inserts or replaces the job's Slurm row.
  Status recordSlurmJob(const SlurmJobRow& row);
  // The Slurm row of a job; kNotFound for a job that did not run on Slurm.
  Result<SlurmJobRow> slurmJob(const std::string& job_id);
  Result<std::vector<SlurmJobRow>> slurmJobs();  // every job on Slurm, by job id
  // A job that its scheduler ended while the history still has it submitted or running (its
  // agents were killed before they could say how it ended): the job, and its ranks that are
  // still pending or running, get `state` ("failed", "stopped"). Other jobs are left alone.
  Status endUnfinishedJob(const std::string& job_id, const std::string& state, double at);

  // Archives or unarchives the jobs (ids not in the history are skipped), in one transaction.
  Status setArchived(const std::vector<std::string>& job_ids, bool archived);
  // Deleting is two steps, so that undo costs nothing and a crash between them loses nothing
  // half-deleted: markDeleted hides the jobs from jobs() and job() at once; undelete shows them
  // again, whole; purgeDeleted removes those of `job_ids` still marked, with everything recorded
  // of them (ranks, attempts, events, metrics, the Slurm row), and purgeAllDeleted every marked
  // job (a client's next start, after a crash inside the undo window). Each one transaction;
  // the purges return how many jobs they removed.
  Status markDeleted(const std::vector<std::string>& job_ids, double at);
  Status undelete(const std::vector<std::string>& job_ids);
  Result<int> purgeDeleted(const std::vector<std::string>& job_ids);
  Result<int> purgeAllDeleted();

  Result<std::vector<AgentRow>> agents();  // by name
  // Newest first; archived jobs included (JobRow::archived), jobs marked deleted left out.
  Result<std::vector<JobRow>> jobs();
  // The job whose id is `id_or_unique_prefix` or starts with it (not one marked deleted).
  // kNotFound when none matches, kInvalidArgument ("ambiguous ...", naming the candidates) when
  // several do.
  Result<JobRow> job(const std::string& id_or_unique_prefix);
  // Ranks of one attempt by rank; default: the job's latest attempt.
  Result<std::vector<RankRow>> ranks(const std::string& job_id,
                                     std::optional<uint32_t> attempt = {});
  // Ordered by attempt, rank, name, then journal order.
  Result<std::vector<MetricRow>> metrics(const MetricQuery& q);
  // The series decimated to at most `buckets` points: min/max/last per bucket of equal step
  // range. Lossless (one point per step) when the series spans no more than `buckets` steps.
  Result<std::vector<SeriesPoint>> series(const std::string& job_id, uint32_t attempt, int rank,
                                          const std::string& name, int buckets);
  Result<std::vector<HealthRow>> latestHealth();  // newest per agent, by agent
  // An agent's samples with time in [from, to], oldest first, at most `limit`.
  Result<std::vector<HealthRow>> health(const std::string& agent, double from, double to,
                                        int limit);
  Result<std::vector<EventRow>> events(const std::string& job_id);  // by time, then seq
  Result<int64_t> countMetrics(const std::string& job_id = "");     // for tests/benchmarks

 private:
  friend class BatchWriter;
  class Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The one writer thread: callers enqueue batches (non-blocking up to a bounded queue, then they
// wait = backpressure); the thread commits each batch (or several coalesced into one transaction)
// as Store::applyJournal does. flush() waits until everything enqueued is committed and returns
// the first error since the previous flush(). The records of committed batches are freed by the
// next enqueue() or flush(), on the caller's thread: the thread that parsed them.
//
// After an error the writer drops every later batch until flush() has reported it: a later batch
// would advance a cursor past the records of the failed one. The caller then pulls again from
// Store::cursor(). Thread-safe: any thread may enqueue() and flush().
class BatchWriter {
 public:
  static Result<std::unique_ptr<BatchWriter>> open(const std::string& path,
                                                   size_t max_queued_batches = 8);
  void enqueue(std::string agent, std::string journal_id, std::vector<proto::JournalRecord> records,
               uint64_t next_seq);
  // Any other write of the history (an agent's inventory, a submission), run on the writer's
  // connection after what is queued before it: a client process has one writer. Its failure is
  // reported by the next flush().
  void enqueueWrite(std::function<Status(Store&)> write);
  // Waits until everything queued so far is committed, and returns (and clears) the first
  // failure since the last flush.
  Status flush();
  // Waits until everything queued before the call is committed (or dropped after a failure),
  // while other threads may go on queueing; the failure is left for flush(). For readers on
  // other connections that must see what was queued before them.
  void waitWritten();
  ~BatchWriter();  // flushes and joins
  BatchWriter(const BatchWriter&) = delete;
  BatchWriter& operator=(const BatchWriter&) = delete;

 private:
  class Impl;
  explicit BatchWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ringmaster::store
