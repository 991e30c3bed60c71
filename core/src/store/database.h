#pragma once
// Database: one connection to a history file and its cached statements, shared by the public
// Reader and Writer (reader.h, writer.h). Its methods are defined by concern: database.cpp (open,
// the statements), journal_apply.cpp (journal records and the job model's fold), edits.cpp (the
// client's own rows: submissions, agents, Slurm rows, archive and delete), reads.cpp.
// Not thread-safe: one thread at a time.

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ringmaster/job/job_model.h"
#include "ringmaster/store/preflight_report.h"
#include "ringmaster/store/rows.h"
#include "store/metric_batch.h"
#include "store/sqlite_util.h"

namespace ringmaster::store {

constexpr int kBusyTimeoutMs = 5000;
constexpr int kMaxBuckets = 1 << 20;
// The series-id cache is a convenience, not a registry: dropping it only costs a lookup.
constexpr size_t kMaxCachedSeries = 1 << 16;

// One agent's pulled records, borrowed for the length of one transaction.
struct JournalChunk {
  const std::string* agent;
  const std::string* journal_id;
  const std::vector<proto::JournalRecord>* records;
  uint64_t next_seq;
};

// The history's words are the job model's.
inline const char* rankStateName(const proto::RankExited& exited) {
  return job::statusName(job::exitStatusOf(exited));
}

// The file at `path` as one key whatever it is called (its canonical path): a process has one
// Writer of each file (writer.cpp), shared by its BatchWriters (batch_writer.cpp).
std::string historyFileKey(const std::string& path);

// A row from before the history kept the model's fold (schema 10): its fold from its words.
proto::JobFold legacyFold(const JobRow& row);

class Database {
 public:
  // Opens or creates the file (and its parent directories) in WAL mode, migrating an older
  // schema. `read_only`: the connection refuses every write (PRAGMA query_only), after the
  // migration.
  static Result<std::unique_ptr<Database>> open(const std::string& path, bool read_only);

  // Applies the chunks and advances their cursors in one transaction.
  Status applyChunks(const JournalChunk* chunks, size_t n);
  Result<uint64_t> cursor(const std::string& agent, const std::string& journal_id);
  // Runs `write` with its commit synced to disk (synchronous=FULL): for rows that exist
  // nowhere else (the client's submissions, Slurm rows, archive and delete edits), which a power
  // cut right after the call returns must not lose. The journal's rows stay at NORMAL (a lost
  // tail is read again from the agents' journals, past the cursor that was lost with it).
  template <typename Write>
  auto durably(Write&& write) -> decltype(write()) {
    RM_RETURN_IF_ERROR(db_.exec("PRAGMA synchronous=FULL", "syncing a client's edit"));
    auto written = write();
    const Status normal = db_.exec("PRAGMA synchronous=NORMAL", "after a client's edit");
    if (written.isOk() && !normal.isOk()) return normal;
    return written;
  }
  Status recordSubmission(const JobRow& job);
  Status recordAgent(const std::string& name, const std::string& endpoint,
                     const proto::Inventory& inv);
  Status recordSlurmJob(const SlurmJobRow& row);
  Status recordWatchEvent(const EventRow& event) { return insertEvent(event); }
  Result<SlurmJobRow> slurmJob(const std::string& job_id);
  Result<std::vector<SlurmJobRow>> slurmJobs();
  Status endUnfinishedJob(const std::string& job_id, const std::string& state, double at);
  Status setArchived(const std::vector<std::string>& job_ids, bool archived);
  Status markDeleted(const std::vector<std::string>& job_ids, double at);
  Status undelete(const std::vector<std::string>& job_ids);
  Result<int> purgeDeleted(const std::vector<std::string>* job_ids);  // null: every marked job
  Result<std::vector<AgentRow>> agents();
  Result<std::vector<JobRow>> jobs();
  Result<JobRow> job(const std::string& id_or_prefix);
  Result<std::vector<RankRow>> ranks(const std::string& job_id, std::optional<uint32_t> attempt);
  Result<std::vector<MetricRow>> metrics(const MetricQuery& q);
  Result<std::vector<SeriesRow>> jobSeries(const std::string& job_id);
  Status forEachPoint(int64_t series_id,
                      const std::function<void(int64_t step, double value, double time)>& point);
  Status forEachPointFrom(
      int64_t series_id, int64_t step, int count,
      const std::function<void(int64_t step, double value, double time)>& point);
  Result<std::vector<SeriesPoint>> series(const std::string& job_id, uint32_t attempt, int rank,
                                          const std::string& name, int buckets);
  Result<std::vector<HealthRow>> latestHealth();
  Result<std::vector<HealthRow>> health(const std::string& agent, double from, double to,
                                        int limit);
  Result<std::vector<EventRow>> events(const std::string& job_id);
  Result<int64_t> countMetrics(const std::string& job_id);
  Result<std::vector<HostRecord>> hostRecords(double since);
  Result<int64_t> recordPreflight(const PreflightReport& report);  // preflights.cpp
  Result<std::vector<PreflightReport>> preflights(int limit, int64_t id);

  sqlite3* connection() const { return db_.get(); }  // for BatchWriter's WalCheckpointer
  const std::string& path() const { return path_; }

 private:
  // A rank's highest step in the current batch; written once per batch (ranks.last_step).
  struct RankProgress {
    std::string job;
    uint32_t attempt;
    int rank;
    int64_t step;
  };
  // A job's lifecycle records of the current batch (new ones only), in journal order: the job
  // model folds them at the batch's end (foldJobs).
  using Pending = std::vector<std::pair<const std::string*, const proto::JournalRecord*>>;

  Database(Connection db, std::string path) : db_(std::move(db)), path_(std::move(path)) {}
  Status prepareAll();
  Status error(int rc, std::string_view what) { return sqliteError(db_.get(), rc, what); }
  // Runs `sql` once per job id (bound to ?1, `at` to ?2), all in one transaction.
  Status forEachJob(const std::vector<std::string>& job_ids, const char* sql, double at,
                    std::string_view what);
  Status purgeJob(const std::string& job_id);  // REQUIRES: a write transaction is open

  // REQUIRES: a write transaction is open (applies to the *InTransaction helpers below).
  Status applyInTransaction(const JournalChunk* chunks, size_t n);
  Status applyMetric(const proto::JournalRecord& r);
  Status applyHealth(const std::string& agent, const proto::JournalRecord& r);
  Status applyLifecycle(const std::string& agent, const proto::JournalRecord& r);
  Status applyDamage(const std::string& agent, const proto::JournalRecord& r);
  Status insertEvent(const EventRow& e);
  Status writeProgress();
  // The job's model as the history has it: its row's fold and its newest attempt's ranks.
  Result<job::JobModel> loadModel(const std::string& job_id);
  // Persists the model's fold and the words lists read (state, finished_at, restarts_left).
  Status saveModel(const std::string& job_id, const job::JobModel& model);
  Status foldJobs();
  Result<int64_t> seriesId(const std::string& job, uint32_t attempt, int rank,
                           const std::string& name, bool create);
  void noteProgress(const std::string& job, uint32_t attempt, int rank, int64_t step);

  static JobRow readJob(const Statement& s);
  Result<std::vector<RankRow>> readRanks(const std::string& job_id, uint32_t attempt);

  Connection db_;
  std::string path_;

  Statement begin_, commit_, rollback_;
  Statement insert_event_, accept_job_, ensure_job_, ensure_attempt_, accept_rank_, start_rank_,
      exit_rank_, update_last_step_, select_series_, insert_series_, insert_health_, upsert_cursor_,
      select_cursor_, select_fold_, save_fold_, set_attempt_state_, record_submission_,
      record_agent_, select_agents_, select_jobs_, select_job_exact_, select_job_prefix_,
      select_job_attempt_, select_max_rank_attempt_, select_ranks_, series_extent_, series_points_,
      series_seq_bounds_, series_point_at_, series_points_from_, select_job_series_,
      next_health_agent_, latest_health_, health_range_, select_events_, count_all_metrics_,
      count_job_metrics_, host_records_;
  // The metric values of the open write transaction, inserted at its end (insertAll()).
  MetricBatch metric_batch_;
  // metrics() statements by which filters are set (bit 0 job, 1 rank, 2 name, 3 attempt).
  std::array<Statement, 16> metric_queries_;

  // (job, attempt, rank, name) -> series id. Cleared on rollback: the ids of series created in
  // a rolled-back transaction do not exist.
  std::unordered_map<std::string, int64_t> series_ids_;
  std::string key_;  // scratch for series_ids_ lookups, reused to avoid allocating per value
  std::vector<RankProgress> progress_;
  std::map<std::string, Pending> pending_folds_;
};

}  // namespace ringmaster::store
