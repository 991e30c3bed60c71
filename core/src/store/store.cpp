#include "ringmaster/store/store.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>

#include "ringmaster/job/job_model.h"
#include "ringmaster/util/wall_clock.h"
#include "store/metric_batch.h"
#include "store/schema.h"
#include "store/sqlite_util.h"
#include "store/wal_checkpointer.h"

namespace ringmaster::store {
namespace {

constexpr int kBusyTimeoutMs = 5000;
constexpr int kMaxBuckets = 1 << 20;
// The series-id cache is a convenience, not a registry: dropping it only costs a lookup.
constexpr size_t kMaxCachedSeries = 1 << 16;

const char* launcherName(proto::Launcher launcher) {
  switch (launcher) {
    case proto::NATIVE:
      return "native";
    case proto::TORCHRUN:
      return "torchrun";
    case proto::COMMAND:
      return "command";
    case proto::TENSORFLOW:
      return "tensorflow";
    case proto::DEEPSPEED:
      return "deepspeed";
    default:
      return "";
  }
}

// The history's words are the job model's.
const char* rankStateName(const proto::RankExited& exited) {
  return job::statusName(job::exitStatusOf(exited));
}

const char* jobStateName(proto::RankState state) {
  const std::optional<job::JobPhase> phase = job::outcomePhaseOf(state);
  return phase ? job::phaseName(*phase) : "unknown";
}

// One agent's pulled records, borrowed for the length of one transaction.
struct JournalChunk {
  const std::string* agent;
  const std::string* journal_id;
  const std::vector<proto::JournalRecord>* records;
  uint64_t next_seq;
};

// One agent's pulled records, owned, waiting in BatchWriter's queue.
// Journal records of one agent, or (when `write` is set) another write of the history, run on
// the writer's own connection in queue order.
struct Batch {
  std::string agent;
  std::string journal_id;
  std::vector<proto::JournalRecord> records;
  uint64_t next_seq = 0;
  std::function<Status(Store&)> write{};
};

std::string decisionText(uint32_t attempt, const proto::JobDecision& decision) {
  const std::string what = "attempt " + std::to_string(attempt);
  switch (decision.next()) {
    case proto::JobDecision::RESTART:
      return what + " failed: the agents restart the job (" +
             std::to_string(decision.restarts_left()) + " restart(s) left after this one)" +
             (decision.reason().empty() ? "" : ": " + decision.reason());
    case proto::JobDecision::FAIL:
      return what + " failed: the job fails" +
             (decision.reason().empty() ? "" : ": " + decision.reason());
    case proto::JobDecision::STOP:
      return what + " stopped: the job stops" +
             (decision.reason().empty() ? "" : ": " + decision.reason());
    default:
      return what + ": the leader's decision is of a kind this build does not know";
  }
}

// A lifecycle record in words, for the history's events.
std::string summarize(const std::string& agent, const proto::JournalRecord& r) {
  switch (r.kind_case()) {
    case proto::JournalRecord::kJobAccepted: {
      const auto& a = r.job_accepted();
      std::string ranks;
      for (const auto& assignment : a.ranks()) {
        if (!ranks.empty()) ranks += ',';
        ranks += std::to_string(assignment.rank());
      }
      return "accepted by " + agent + ": ranks " + (ranks.empty() ? "none" : ranks) + " of " +
             std::to_string(a.world_size()) +
             (a.interpreter().empty() ? "" : "; python: " + a.interpreter());
    }
    case proto::JournalRecord::kRankStarted: {
      const auto& s = r.rank_started();
      return "rank " + std::to_string(s.rank()) + " started on " + agent + " (pid " +
             std::to_string(s.pid()) + ", local rank " + std::to_string(s.local_rank()) + ")" +
             (s.device().empty() ? "" : ", " + s.device());
    }
    case proto::JournalRecord::kRankExited: {
      const auto& e = r.rank_exited();
      std::string detail = "rank " + std::to_string(e.rank()) + " " + rankStateName(e) + ": ";
      detail += e.signal() != 0 ? "signal " + std::to_string(e.signal())
                                : "exit code " + std::to_string(e.exit_code());
      if (!e.error().empty()) detail += ": " + e.error();
      return detail;
    }
    case proto::JournalRecord::kJobFinished: {
      const auto& f = r.job_finished();
      std::string detail =
          agent + " finished " + std::to_string(f.ranks()) + " ranks: " + jobStateName(f.state());
      if (f.leftovers_killed() > 0) {
        detail += "; ended " + std::to_string(f.leftovers_killed()) +
                  " process(es) the ranks had left running";
      }
      if (f.leftovers_stuck() > 0) {
        detail += ", " + std::to_string(f.leftovers_stuck()) + " of them still there";
      }
      return detail;
    }
    case proto::JournalRecord::kJobFailure:
      return "attempt " + std::to_string(r.attempt()) +
             (r.job_failure().kind() == "client_restart" ? " ended: " : " failed: ") +
             r.job_failure().cause();
    case proto::JournalRecord::kJobRestart: {
      const auto& restart = r.job_restart();
      std::string agents;
      for (const auto& name : restart.agents()) agents += (agents.empty() ? "" : ", ") + name;
      std::string detail = "attempt " + std::to_string(restart.next_attempt()) + " starts";
      if (restart.backoff_seconds() > 0) {
        char wait[32];
        std::snprintf(wait, sizeof wait, " in %g s", restart.backoff_seconds());
        detail += wait;
      }
      detail += " on " + agents + " (" + std::to_string(restart.world_size()) + " ranks)";
      if (!restart.left_out().empty()) {
        std::string out;
        for (const auto& name : restart.left_out()) out += (out.empty() ? "" : ", ") + name;
        detail += " without " + out;
      }
      return detail;
    }
    case proto::JournalRecord::kJobOutcome: {
      const auto& outcome = r.job_outcome();
      std::string detail = std::string("job ") + jobStateName(outcome.state()) + " after " +
                           std::to_string(outcome.attempts()) + " attempt(s)";
      if (!outcome.cause().empty()) detail += ": " + outcome.cause();
      return detail;
    }
    case proto::JournalRecord::kHangSuspicion:
      return r.hang_suspicion().cause();
    case proto::JournalRecord::kJobDecision:
      return decisionText(r.attempt(), r.job_decision());
    default:
      return {};
  }
}

// A hang watch record's kind says its stage: hang_suspected, hang_hung (on_hang: warn) or
// hang_cleared.
std::string eventKind(const proto::JournalRecord& r) {
  if (r.has_hang_suspicion()) return "hang_" + r.hang_suspicion().stage();
  switch (r.kind_case()) {
    case proto::JournalRecord::kJobAccepted:
      return "job_accepted";
    case proto::JournalRecord::kRankStarted:
      return "rank_started";
    case proto::JournalRecord::kRankExited:
      return "rank_exited";
    case proto::JournalRecord::kJobFinished:
      return "job_finished";
    case proto::JournalRecord::kJobFailure:
      return "job_failure";
    case proto::JournalRecord::kJobRestart:
      return "job_restart";
    case proto::JournalRecord::kJobOutcome:
      return "job_outcome";
    case proto::JournalRecord::kJobDecision:
      return "job_decision";
    default:
      return "";
  }
}

// A row from before the history kept the model's fold (schema 10): its fold from its words.
proto::JobFold legacyFold(const JobRow& row) {
  proto::JobFold fold;
  fold.set_attempt(row.attempt);
  fold.set_world_size(row.world_size);
  const job::JobPhase phase = job::jobPhaseNamed(row.state).value_or(job::JobPhase::kSubmitted);
  fold.set_any_started(phase != job::JobPhase::kSubmitted);
  switch (phase) {
    case job::JobPhase::kSucceeded:
      fold.set_outcome(proto::SUCCEEDED);
      break;
    case job::JobPhase::kFailed:
      fold.set_outcome(proto::FAILED);
      break;
    case job::JobPhase::kStopped:
      fold.set_outcome(proto::STOPPED);
      break;
    case job::JobPhase::kRestarting:
      fold.mutable_decision()->set_next(proto::JobDecision::RESTART);
      break;
    default:
      break;
  }
  if (fold.outcome() != proto::RANK_STATE_UNSPECIFIED) fold.set_outcome_time(row.finished_at);
  return fold;
}

}  // namespace

const char* launcherNameOf(proto::Launcher launcher) { return launcherName(launcher); }

job::StoredJob storedJobOf(const JobRow& job, const std::vector<RankRow>& ranks) {
  job::StoredJob stored;
  // A row without a fold (made by hand, or older than the fold): the fold its words describe.
  stored.fold = job.fold.attempt() == 0 && job.attempt > 0 ? legacyFold(job) : job.fold;
  for (const RankRow& row : ranks) {
    if (row.attempt != stored.fold.attempt()) continue;
    job::RankState rank;
    rank.rank = row.rank;
    rank.local_rank = row.local_rank;
    rank.agent = row.agent;
    rank.device = row.device;
    rank.pid = row.pid;
    rank.status = job::rankStatusNamed(row.state).value_or(job::RankStatus::kPending);
    rank.exit_code = row.exit_code;
    rank.signal = row.signal;
    rank.error = row.error;
    rank.log_tail = row.log_tail;
    rank.started = row.started_at;
    rank.finished = row.finished_at;
    stored.ranks.push_back(std::move(rank));
  }
  return stored;
}

EventRow eventOf(const std::string& agent, const proto::JournalRecord& r) {
  EventRow e;
  e.job_id = r.job();
  e.attempt = r.attempt();
  e.source = r.source();
  e.seq = r.seq();
  e.agent = agent;
  e.time = r.time();
  e.kind = eventKind(r);
  e.detail = summarize(agent, r);
  if (r.has_rank_started()) {
    e.rank = r.rank_started().rank();
    e.rank_agent = agent;
  } else if (r.has_rank_exited()) {
    const proto::RankExited& x = r.rank_exited();
    e.rank = x.rank();
    e.rank_agent = agent;
    e.problem = x.state() == proto::FAILED;
    e.exit_code = x.exit_code();
    e.signal = x.signal();
  } else if (r.has_job_failure()) {
    const proto::JobFailure& f = r.job_failure();
    e.rank = f.rank();
    e.rank_agent = f.agent();
    e.problem = f.kind() != "client_restart";
    e.exit_code = f.exit_code();
    e.signal = f.signal();
    e.cause_kind = f.kind();
  } else if (r.has_hang_suspicion()) {
    const proto::HangSuspicion& h = r.hang_suspicion();
    e.rank = h.rank();
    e.rank_agent = h.agent();
    e.problem = h.stage() != "cleared";
    e.cause_kind = h.stage();
  }
  return e;
}

// ---------------------------------------------------------------------------------------------
// Store::Impl: one connection and its cached statements. Not thread-safe (see Store).

class Store::Impl {
 public:
  static Result<std::unique_ptr<Impl>> open(const std::string& path);

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
  Result<std::vector<SeriesPoint>> series(const std::string& job_id, uint32_t attempt, int rank,
                                          const std::string& name, int buckets);
  Result<std::vector<HealthRow>> latestHealth();
  Result<std::vector<HealthRow>> health(const std::string& agent, double from, double to,
                                        int limit);
  Result<std::vector<EventRow>> events(const std::string& job_id);
  Result<int64_t> countMetrics(const std::string& job_id);

  sqlite3* connection() const { return db_.get(); }  // for BatchWriter's WalCheckpointer

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

  Impl(Connection db, std::string path) : db_(std::move(db)), path_(std::move(path)) {}
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
      next_health_agent_, latest_health_, health_range_, select_events_, count_all_metrics_,
      count_job_metrics_;
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

Result<std::unique_ptr<Store::Impl>> Store::Impl::open(const std::string& path) {
  if (path.empty()) return invalidArgument("history file path is empty");
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) return ioError("creating directory " + parent.string() + ": " + ec.message());
  }
  RM_ASSIGN_OR_RETURN(Connection db, Connection::open(path));
  sqlite3_busy_timeout(db.get(), kBusyTimeoutMs);

  {
    RM_ASSIGN_OR_RETURN(Statement wal, Statement::prepare(db.get(), "PRAGMA journal_mode=WAL"));
    const int rc = wal.step();
    if (rc != SQLITE_ROW) return sqliteError(db.get(), rc, "switching " + path + " to WAL mode");
    const std::string mode = wal.columnText(0);
    if (mode != "wal") {
      return ioError("history file " + path + " cannot use WAL mode (journal mode is '" + mode +
                     "'); put it on a local file system");
    }
  }
  RM_RETURN_IF_ERROR(
      db.exec("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=OFF; "
              "PRAGMA temp_store=MEMORY; PRAGMA cache_size=-32768; "
              // After a burst the WAL is cut back to this at its next reset, not kept at its
              // high-water size for good.
              "PRAGMA journal_size_limit=16777216;",
              "configuring " + path));
  RM_RETURN_IF_ERROR(migrate(db, path));

  std::unique_ptr<Impl> impl(new Impl(std::move(db), path));
  RM_RETURN_IF_ERROR(impl->prepareAll());
  return impl;
}

Status Store::Impl::prepareAll() {
  struct Entry {
    Statement* stmt;
    const char* sql;
  };
  const Entry entries[] = {
      {&begin_, "BEGIN IMMEDIATE"},
      {&commit_, "COMMIT"},
      {&rollback_, "ROLLBACK"},
      {&insert_event_,
       "INSERT INTO events(job_id, attempt, source, seq, agent, time, kind, detail, rank, "
       "rank_agent, problem, exit_code, signal, cause_kind) "
       "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) "
       "ON CONFLICT DO NOTHING"},
      // The records are the truth: what they say replaces the submitting client's view, except
      // the submission time, which only the client knows exactly.
      {&accept_job_,
       "INSERT INTO jobs(job_id, name, launcher, world_size, state, spec_yaml, submitted_at, "
       "attempt, fold) VALUES(?1, ?2, ?3, ?4, 'submitted', ?5, ?6, ?7, X'') "
       "ON CONFLICT(job_id) DO UPDATE SET "
       "name = CASE WHEN excluded.name <> '' THEN excluded.name ELSE name END, "
       "launcher = CASE WHEN excluded.launcher <> '' THEN excluded.launcher ELSE launcher END, "
       "world_size = CASE WHEN excluded.world_size > 0 AND excluded.attempt >= attempt "
       "THEN excluded.world_size ELSE world_size END, "
       "spec_yaml = CASE WHEN excluded.spec_yaml <> '' THEN excluded.spec_yaml "
       "ELSE spec_yaml END, "
       "submitted_at = CASE WHEN submitted_at = 0 THEN excluded.submitted_at "
       "ELSE submitted_at END, "
       "attempt = max(attempt, excluded.attempt)"},
      {&ensure_job_,
       "INSERT INTO jobs(job_id, state, submitted_at, attempt, fold) "
       "VALUES(?1, 'submitted', ?2, ?3, X'') "
       "ON CONFLICT(job_id) DO UPDATE SET attempt = max(attempt, excluded.attempt), "
       "submitted_at = CASE WHEN submitted_at = 0 THEN excluded.submitted_at "
       "ELSE submitted_at END"},
      {&ensure_attempt_,
       "INSERT INTO attempts(job_id, attempt, state, started_at) VALUES(?1, ?2, 'running', ?3) "
       "ON CONFLICT DO NOTHING"},
      {&accept_rank_,
       "INSERT INTO ranks(job_id, attempt, rank, agent, local_rank) VALUES(?1, ?2, ?3, ?4, ?5) "
       "ON CONFLICT DO NOTHING"},
      {&start_rank_,
       "INSERT INTO ranks(job_id, attempt, rank, agent, local_rank, pid, state, started_at, "
       "device) VALUES(?1, ?2, ?3, ?4, ?5, ?6, 'running', ?7, ?8) ON CONFLICT DO UPDATE SET "
       "agent = excluded.agent, local_rank = excluded.local_rank, pid = excluded.pid, "
       "started_at = excluded.started_at, device = excluded.device, "
       "state = CASE WHEN state = 'pending' THEN 'running' ELSE state END"},
      {&exit_rank_,
       "INSERT INTO ranks(job_id, attempt, rank, agent, state, exit_code, signal, error, "
       "finished_at, log_tail) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT DO "
       "UPDATE SET state = excluded.state, exit_code = excluded.exit_code, "
       "signal = excluded.signal, error = excluded.error, finished_at = excluded.finished_at, "
       "log_tail = excluded.log_tail"},
      {&update_last_step_,
       "UPDATE ranks SET last_step = max(last_step, ?4) "
       "WHERE job_id = ?1 AND attempt = ?2 AND rank = ?3"},
      {&select_series_,
       "SELECT id FROM series WHERE job_id = ?1 AND attempt = ?2 AND rank = ?3 AND name = ?4"},
      {&insert_series_, "INSERT INTO series(job_id, attempt, rank, name) VALUES(?1, ?2, ?3, ?4)"},
      {&insert_health_,
       "INSERT INTO health(agent, seq, time, cpu_percent, mem_used, mem_total, load1, net_rx, "
       "net_tx, gpus) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT DO NOTHING"},
      {&upsert_cursor_,
       "INSERT INTO cursors(agent, journal_id, next_seq) VALUES(?1, ?2, ?3) "
       "ON CONFLICT DO UPDATE SET next_seq = max(next_seq, excluded.next_seq)"},
      {&select_cursor_, "SELECT next_seq FROM cursors WHERE agent = ?1 AND journal_id = ?2"},
      {&select_fold_,
       "SELECT job_id, name, launcher, state, spec_yaml, world_size, attempt, submitted_at, "
       "finished_at, archived, restarts_left, fold FROM jobs WHERE job_id = ?1"},
      {&save_fold_,
       "UPDATE jobs SET state = ?2, finished_at = ?3, restarts_left = ?4, fold = ?5 "
       "WHERE job_id = ?1"},
      {&set_attempt_state_,
       "UPDATE attempts SET state = ?3, finished_at = ?4 WHERE job_id = ?1 AND attempt = ?2"},
      {&record_submission_,
       "INSERT INTO jobs(job_id, name, launcher, world_size, state, spec_yaml, submitted_at, "
       "fold) VALUES(?1, ?2, ?3, ?4, 'submitted', ?5, ?6, X'') ON CONFLICT(job_id) DO UPDATE SET "
       "name = CASE WHEN name = '' THEN excluded.name ELSE name END, "
       "launcher = CASE WHEN launcher = '' THEN excluded.launcher ELSE launcher END, "
       "world_size = CASE WHEN world_size = 0 THEN excluded.world_size ELSE world_size END, "
       "spec_yaml = CASE WHEN spec_yaml = '' THEN excluded.spec_yaml ELSE spec_yaml END, "
       "submitted_at = CASE WHEN excluded.submitted_at > 0 THEN excluded.submitted_at "
       "ELSE submitted_at END"},
      {&record_agent_,
       "INSERT INTO agents(name, endpoint, inventory, last_seen) VALUES(?1, ?2, ?3, ?4) "
       "ON CONFLICT(name) DO UPDATE SET endpoint = excluded.endpoint, "
       "inventory = excluded.inventory, last_seen = excluded.last_seen"},
      {&select_agents_, "SELECT name, endpoint, inventory, last_seen FROM agents ORDER BY name"},
      {&select_jobs_,
       "SELECT job_id, name, launcher, state, spec_yaml, world_size, attempt, submitted_at, "
       "finished_at, archived, restarts_left, fold FROM jobs WHERE deleted_at = 0 "
       "ORDER BY submitted_at DESC, job_id DESC"},
      {&select_job_exact_,
       "SELECT job_id, name, launcher, state, spec_yaml, world_size, attempt, submitted_at, "
       "finished_at, archived, restarts_left, fold FROM jobs WHERE job_id = ?1 AND deleted_at = 0"},
      // ?2 is the first string after every string starting with ?1 (see job()).
      {&select_job_prefix_,
       "SELECT job_id, name, launcher, state, spec_yaml, world_size, attempt, submitted_at, "
       "finished_at, archived, restarts_left, fold FROM jobs WHERE job_id >= ?1 AND job_id < ?2 "
       "AND deleted_at = 0 "
       "ORDER BY job_id LIMIT 6"},
      {&select_job_attempt_, "SELECT attempt FROM jobs WHERE job_id = ?1"},
      {&select_max_rank_attempt_, "SELECT max(attempt) FROM ranks WHERE job_id = ?1"},
      {&select_ranks_,
       "SELECT job_id, attempt, rank, local_rank, agent, pid, state, exit_code, signal, error, "
       "last_step, started_at, finished_at, device, log_tail FROM ranks "
       "WHERE job_id = ?1 AND attempt = ?2 "
       "ORDER BY rank"},
      {&series_extent_, "SELECT min(step), max(step), count(*) FROM metrics WHERE series_id = ?1"},
      {&series_points_, "SELECT step, value, time FROM metrics WHERE series_id = ?1"},
      {&next_health_agent_, "SELECT agent FROM health WHERE agent > ?1 ORDER BY agent LIMIT 1"},
      {&latest_health_,
       "SELECT time, cpu_percent, mem_used, mem_total, load1, net_rx, net_tx, gpus FROM health "
       "WHERE agent = ?1 ORDER BY time DESC, seq DESC LIMIT 1"},
      {&health_range_,
       "SELECT time, cpu_percent, mem_used, mem_total, load1, net_rx, net_tx, gpus FROM health "
       "WHERE agent = ?1 AND time >= ?2 AND time <= ?3 ORDER BY time, seq LIMIT ?4"},
      {&select_events_,
       "SELECT job_id, attempt, source, seq, agent, time, kind, detail, rank, rank_agent, "
       "problem, exit_code, signal, cause_kind FROM events WHERE job_id = ?1 ORDER BY time, seq"},
      {&count_all_metrics_, "SELECT count(*) FROM metrics"},
      {&count_job_metrics_,
       "SELECT count(*) FROM series s JOIN metrics m ON m.series_id = s.id WHERE s.job_id = ?1"},
  };
  for (const Entry& e : entries) {
    RM_ASSIGN_OR_RETURN(*e.stmt, Statement::prepare(db_.get(), e.sql));
  }
  return metric_batch_.prepare(db_.get());
}

// ---------------------------------------------------------------------------------------------
// Writes

Status Store::Impl::applyChunks(const JournalChunk* chunks, size_t n) {
  RM_RETURN_IF_ERROR(begin_.run("starting a write transaction on " + path_));
  Status status = applyInTransaction(chunks, n);
  if (status.isOk()) status = commit_.run("committing journal records to " + path_);
  if (!status.isOk()) {
    // The batch's own failure is what is reported; a failed rollback leaves nothing committed.
    if (sqlite3_get_autocommit(db_.get()) == 0) (void)rollback_.run("rolling back");
    series_ids_.clear();
    metric_batch_.clear();
  }
  return status;
}

Status Store::Impl::applyInTransaction(const JournalChunk* chunks, size_t n) {
  progress_.clear();
  pending_folds_.clear();
  for (size_t c = 0; c < n; ++c) {
    const JournalChunk& chunk = chunks[c];
    for (const proto::JournalRecord& r : *chunk.records) {
      switch (r.kind_case()) {
        case proto::JournalRecord::kMetric:
          RM_RETURN_IF_ERROR(applyMetric(r));
          break;
        case proto::JournalRecord::kHealth:
          RM_RETURN_IF_ERROR(applyHealth(*chunk.agent, r));
          break;
        case proto::JournalRecord::kJobAccepted:
        case proto::JournalRecord::kRankStarted:
        case proto::JournalRecord::kRankExited:
        case proto::JournalRecord::kJobFinished:
        case proto::JournalRecord::kJobFailure:
        case proto::JournalRecord::kJobRestart:
        case proto::JournalRecord::kJobOutcome:
        case proto::JournalRecord::kJobDecision:
        case proto::JournalRecord::kHangSuspicion:
          RM_RETURN_IF_ERROR(applyLifecycle(*chunk.agent, r));
          break;
        case proto::JournalRecord::kJournalDamage:
          RM_RETURN_IF_ERROR(applyDamage(*chunk.agent, r));
          break;
        case proto::JournalRecord::KIND_NOT_SET:  // a kind this build does not know: skip it
          break;
      }
    }
    upsert_cursor_.bindText(1, *chunk.agent);
    upsert_cursor_.bindText(2, *chunk.journal_id);
    upsert_cursor_.bindInt64(3, static_cast<int64_t>(chunk.next_seq));
    RM_RETURN_IF_ERROR(upsert_cursor_.run("advancing the cursor of " + *chunk.agent));
  }
  // Nothing above reads the metrics table: holding its rows back to here changes no result.
  RM_RETURN_IF_ERROR(metric_batch_.insertAll());
  RM_RETURN_IF_ERROR(writeProgress());
  return foldJobs();
}

Result<int64_t> Store::Impl::seriesId(const std::string& job, uint32_t attempt, int rank,
                                      const std::string& name, bool create) {
  key_.assign(job);
  key_.push_back('\0');
  char fixed[sizeof attempt + sizeof rank];
  std::memcpy(fixed, &attempt, sizeof attempt);
  std::memcpy(fixed + sizeof attempt, &rank, sizeof rank);
  key_.append(fixed, sizeof fixed);
  key_.append(name);
  if (auto it = series_ids_.find(key_); it != series_ids_.end()) return it->second;

  int64_t id = -1;
  {
    ScopedReset reset(select_series_);
    select_series_.bindText(1, job);
    select_series_.bindInt64(2, attempt);
    select_series_.bindInt64(3, rank);
    select_series_.bindText(4, name);
    const int rc = select_series_.step();
    if (rc == SQLITE_ROW) {
      id = select_series_.columnInt64(0);
    } else if (rc != SQLITE_DONE) {
      return error(rc, "looking up metric series " + name);
    }
  }
  if (id < 0) {
    if (!create)
      return notFound("no metric '" + name + "' for rank " + std::to_string(rank) + " of job " +
                      job + " attempt " + std::to_string(attempt));
    insert_series_.bindText(1, job);
    insert_series_.bindInt64(2, attempt);
    insert_series_.bindInt64(3, rank);
    insert_series_.bindText(4, name);
    RM_RETURN_IF_ERROR(insert_series_.run("creating metric series " + name));
    id = sqlite3_last_insert_rowid(db_.get());
  }
  if (series_ids_.size() >= kMaxCachedSeries) series_ids_.clear();
  series_ids_.emplace(key_, id);
  return id;
}

// REQUIRES: `r` outlives the transaction (metric_batch_ keeps pointers to its strings).
Status Store::Impl::applyMetric(const proto::JournalRecord& r) {
  const proto::MetricSample& m = r.metric();
  for (const proto::MetricValue& v : m.values()) {
    RM_ASSIGN_OR_RETURN(const int64_t id, seriesId(r.job(), r.attempt(), m.rank(), v.name(), true));
    metric_batch_.add(id, static_cast<int64_t>(r.seq()), m.step(), v.value(), r.time(), r.job(),
                      m.rank(), v.name());
  }
  if (m.values_size() > 0) noteProgress(r.job(), r.attempt(), m.rank(), m.step());
  return Status::ok();
}

void Store::Impl::noteProgress(const std::string& job, uint32_t attempt, int rank, int64_t step) {
  // A batch comes from one agent, so it holds few ranks: a linear search beats hashing.
  for (auto it = progress_.rbegin(); it != progress_.rend(); ++it) {
    if (it->rank == rank && it->attempt == attempt && it->job == job) {
      it->step = std::max(it->step, step);
      return;
    }
  }
  progress_.push_back({job, attempt, rank, step});
}

Status Store::Impl::writeProgress() {
  for (const RankProgress& p : progress_) {
    update_last_step_.bindText(1, p.job);
    update_last_step_.bindInt64(2, p.attempt);
    update_last_step_.bindInt64(3, p.rank);
    update_last_step_.bindInt64(4, p.step);
    RM_RETURN_IF_ERROR(update_last_step_.run("updating the last step of rank " +
                                             std::to_string(p.rank) + " of job " + p.job));
  }
  return Status::ok();
}

Status Store::Impl::applyHealth(const std::string& agent, const proto::JournalRecord& r) {
  const proto::HealthSample& h = r.health();
  Statement& s = insert_health_;
  s.bindText(1, agent);
  s.bindInt64(2, static_cast<int64_t>(r.seq()));
  s.bindDouble(3, r.time());
  s.bindDouble(4, h.cpu_percent());
  s.bindInt64(5, static_cast<int64_t>(h.memory_used_bytes()));
  s.bindInt64(6, static_cast<int64_t>(h.memory_total_bytes()));
  s.bindDouble(7, h.load1());
  s.bindDouble(8, h.net_rx_bytes_per_s());
  s.bindDouble(9, h.net_tx_bytes_per_s());
  if (h.gpus_size() > 0) {
    proto::HealthSample gpus;
    *gpus.mutable_gpus() = h.gpus();
    s.bindBlob(10, gpus.SerializeAsString());
  }
  return s.run("storing a health sample of " + agent);
}

// The agent's report of a damaged journal is kept as an event of no job (job_id ''): the records
// it lost cannot say whose they were. The placeholders of single lost records carry no detail.
Status Store::Impl::applyDamage(const std::string& agent, const proto::JournalRecord& r) {
  const proto::JournalDamage& d = r.journal_damage();
  if (d.detail().empty()) return Status::ok();
  EventRow e;
  e.source = "journal:" + agent;
  e.seq = r.seq();
  e.agent = agent;
  e.time = r.time();
  e.kind = "journal_damage";
  e.detail = std::to_string(d.lost_records()) + " record(s) lost from seq " +
             std::to_string(d.first_lost_seq()) + " (" + d.detail() +
             "); the damaged file is kept at " + d.kept_at();
  e.problem = true;
  return insertEvent(e);
}

Status Store::Impl::insertEvent(const EventRow& e) {
  Statement& s = insert_event_;
  s.bindText(1, e.job_id);
  s.bindInt64(2, e.attempt);
  s.bindText(3, e.source);
  s.bindInt64(4, static_cast<int64_t>(e.seq));
  s.bindText(5, e.agent);
  s.bindDouble(6, e.time);
  s.bindText(7, e.kind);
  s.bindText(8, e.detail);
  s.bindInt64(9, e.rank);
  s.bindText(10, e.rank_agent);
  s.bindInt64(11, e.problem ? 1 : 0);
  s.bindInt64(12, e.exit_code);
  s.bindInt64(13, e.signal);
  s.bindText(14, e.cause_kind);
  return s.run("storing an event of job '" + e.job_id + "'");
}

Status Store::Impl::applyLifecycle(const std::string& agent, const proto::JournalRecord& r) {
  if (r.job().empty()) return Status::ok();  // lifecycle records always name a job
  const std::string& job = r.job();
  const int64_t attempt = r.attempt();

  // The event row is the record's idempotency key: a replayed record changes nothing, so an old
  // RankStarted can never turn an exited rank back into a running one.
  RM_RETURN_IF_ERROR(insertEvent(eventOf(agent, r)));
  if (sqlite3_changes(db_.get()) == 0) return Status::ok();

  if (r.has_job_accepted()) {
    const proto::JobAccepted& a = r.job_accepted();
    accept_job_.bindText(1, job);
    accept_job_.bindText(2, a.name());
    accept_job_.bindText(3, launcherName(a.launcher()));
    accept_job_.bindInt64(4, a.world_size());
    accept_job_.bindText(5, a.spec_yaml());
    accept_job_.bindDouble(6, r.time());
    accept_job_.bindInt64(7, attempt);
    RM_RETURN_IF_ERROR(accept_job_.run("storing job " + job));
  } else {
    ensure_job_.bindText(1, job);
    ensure_job_.bindDouble(2, r.time());
    ensure_job_.bindInt64(3, attempt);
    RM_RETURN_IF_ERROR(ensure_job_.run("storing job " + job));
  }
  ensure_attempt_.bindText(1, job);
  ensure_attempt_.bindInt64(2, attempt);
  ensure_attempt_.bindDouble(3, r.time());
  RM_RETURN_IF_ERROR(ensure_attempt_.run("storing attempt of job " + job));

  switch (r.kind_case()) {
    case proto::JournalRecord::kJobAccepted:
      for (const proto::RankAssignment& a : r.job_accepted().ranks()) {
        accept_rank_.bindText(1, job);
        accept_rank_.bindInt64(2, attempt);
        accept_rank_.bindInt64(3, a.rank());
        accept_rank_.bindText(4, agent);
        accept_rank_.bindInt64(5, a.local_rank());
        RM_RETURN_IF_ERROR(accept_rank_.run("storing ranks of job " + job));
      }
      break;
    case proto::JournalRecord::kRankStarted: {
      const proto::RankStarted& s = r.rank_started();
      start_rank_.bindText(1, job);
      start_rank_.bindInt64(2, attempt);
      start_rank_.bindInt64(3, s.rank());
      start_rank_.bindText(4, agent);
      start_rank_.bindInt64(5, s.local_rank());
      start_rank_.bindInt64(6, s.pid());
      start_rank_.bindDouble(7, r.time());
      start_rank_.bindText(8, s.device());
      RM_RETURN_IF_ERROR(start_rank_.run("storing the start of a rank of job " + job));
      break;
    }
    case proto::JournalRecord::kRankExited: {
      const proto::RankExited& e = r.rank_exited();
      exit_rank_.bindText(1, job);
      exit_rank_.bindInt64(2, attempt);
      exit_rank_.bindInt64(3, e.rank());
      exit_rank_.bindText(4, agent);
      exit_rank_.bindText(5, rankStateName(e));
      exit_rank_.bindInt64(6, e.exit_code());
      exit_rank_.bindInt64(7, e.signal());
      exit_rank_.bindText(8, e.error());
      exit_rank_.bindDouble(9, r.time());
      std::string tail;
      for (const std::string& line : e.tail()) tail += line + "\n";
      exit_rank_.bindText(10, tail);
      RM_RETURN_IF_ERROR(exit_rank_.run("storing the exit of a rank of job " + job));
      break;
    }
    default:  // the rest is the job model's to fold (foldJobs); the event keeps it
      break;
  }
  pending_folds_[job].emplace_back(&agent, &r);
  return Status::ok();
}

Result<job::JobModel> Store::Impl::loadModel(const std::string& job_id) {
  JobRow row;
  {
    ScopedReset reset(select_fold_);
    select_fold_.bindText(1, job_id);
    const int rc = select_fold_.step();
    if (rc == SQLITE_DONE) return notFound("no job '" + job_id + "' in the history");
    if (rc != SQLITE_ROW) return error(rc, "reading the state of job " + job_id);
    row = readJob(select_fold_);
  }
  RM_ASSIGN_OR_RETURN(std::vector<RankRow> ranks, readRanks(job_id, row.fold.attempt()));
  job::JobModel model(job_id);
  model.applyStored(storedJobOf(row, ranks));
  return model;
}

Status Store::Impl::saveModel(const std::string& job_id, const job::JobModel& model) {
  const char* state = job::phaseName(model.phase());
  save_fold_.bindText(1, job_id);
  save_fold_.bindText(2, state);
  save_fold_.bindDouble(3, model.endTime());
  save_fold_.bindInt64(4, model.restartsLeft());
  save_fold_.bindBlob(5, model.fold().SerializeAsString());
  RM_RETURN_IF_ERROR(save_fold_.run("updating the state of job " + job_id));
  set_attempt_state_.bindText(1, job_id);
  set_attempt_state_.bindInt64(2, model.attempt());
  set_attempt_state_.bindText(3, state);
  set_attempt_state_.bindDouble(4, model.endTime());
  return set_attempt_state_.run("updating an attempt of job " + job_id);
}

// The one fold (job::JobModel) goes on from where the last batch left it: the history never
// decides a state of its own.
Status Store::Impl::foldJobs() {
  for (const auto& [job_id, records] : pending_folds_) {
    RM_ASSIGN_OR_RETURN(job::JobModel model, loadModel(job_id));
    for (const auto& [agent, record] : records) model.apply(*agent, *record);
    RM_RETURN_IF_ERROR(saveModel(job_id, model));
  }
  return Status::ok();
}

Status Store::Impl::recordSubmission(const JobRow& job) {
  if (job.job_id.empty()) return invalidArgument("recordSubmission: job_id is empty");
  Statement& s = record_submission_;
  s.bindText(1, job.job_id);
  s.bindText(2, job.name);
  s.bindText(3, job.launcher);
  s.bindInt64(4, job.world_size);
  s.bindText(5, job.spec_yaml);
  s.bindDouble(6, job.submitted_at);
  return s.run("storing the submission of job " + job.job_id);
}

Status Store::Impl::recordAgent(const std::string& name, const std::string& endpoint,
                                const proto::Inventory& inv) {
  if (name.empty()) return invalidArgument("recordAgent: agent name is empty");
  Statement& s = record_agent_;
  s.bindText(1, name);
  s.bindText(2, endpoint);
  s.bindBlob(3, inv.SerializeAsString());
  s.bindDouble(4, unixSeconds());
  return s.run("storing agent " + name);
}

Status Store::Impl::recordSlurmJob(const SlurmJobRow& row) {
  if (row.job_id.empty()) return invalidArgument("recordSlurmJob: job_id is empty");
  RM_ASSIGN_OR_RETURN(Statement s, Statement::prepare(db_.get(), R"sql(
INSERT OR REPLACE INTO slurm_jobs(job_id, cluster, job_dir, slurm_job_id, state, reason, updated_at)
  VALUES(?, ?, ?, ?, ?, ?, ?))sql"));
  s.bindText(1, row.job_id);
  s.bindText(2, row.cluster);
  s.bindText(3, row.job_dir);
  s.bindText(4, row.slurm_job_id);
  s.bindText(5, row.state);
  s.bindText(6, row.reason);
  s.bindDouble(7, row.updated_at);
  return s.run("storing the Slurm state of job " + row.job_id);
}

namespace {

constexpr const char* kSelectSlurmJobs =
    "SELECT job_id, cluster, job_dir, slurm_job_id, state, reason, updated_at FROM slurm_jobs";

SlurmJobRow readSlurmJob(const Statement& s) {
  SlurmJobRow row;
  row.job_id = s.columnText(0);
  row.cluster = s.columnText(1);
  row.job_dir = s.columnText(2);
  row.slurm_job_id = s.columnText(3);
  row.state = s.columnText(4);
  row.reason = s.columnText(5);
  row.updated_at = s.columnDouble(6);
  return row;
}

}  // namespace

Result<SlurmJobRow> Store::Impl::slurmJob(const std::string& job_id) {
  RM_ASSIGN_OR_RETURN(Statement s, Statement::prepare(db_.get(), std::string(kSelectSlurmJobs) +
                                                                     " WHERE job_id = ?"));
  s.bindText(1, job_id);
  const int rc = s.step();
  if (rc == SQLITE_DONE) return notFound("job " + job_id + " did not run on Slurm");
  if (rc != SQLITE_ROW) return error(rc, "looking up the Slurm state of job " + job_id);
  return readSlurmJob(s);
}

Result<std::vector<SlurmJobRow>> Store::Impl::slurmJobs() {
  RM_ASSIGN_OR_RETURN(Statement s, Statement::prepare(db_.get(), std::string(kSelectSlurmJobs) +
                                                                     " ORDER BY job_id"));
  std::vector<SlurmJobRow> rows;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) rows.push_back(readSlurmJob(s));
  if (rc != SQLITE_DONE) return error(rc, "listing the jobs on Slurm");
  return rows;
}

Status Store::Impl::endUnfinishedJob(const std::string& job_id, const std::string& state,
                                     double at) {
  const std::optional<job::JobPhase> phase = job::jobPhaseNamed(state);
  if (phase != job::JobPhase::kFailed && phase != job::JobPhase::kStopped) {
    return invalidArgument("a job its scheduler ended is failed or stopped, not '" + state + "'");
  }
  RM_RETURN_IF_ERROR(begin_.run("ending job " + job_id));
  auto end = [&]() -> Status {
    Result<job::JobModel> loaded = loadModel(job_id);
    if (loaded.status().code() == ErrorCode::kNotFound) return Status::ok();
    RM_ASSIGN_OR_RETURN(job::JobModel model, std::move(loaded));
    if (model.decided()) return Status::ok();  // its leader said how it ended
    model.endedByScheduler(*phase, at);
    RM_ASSIGN_OR_RETURN(
        Statement ranks,
        Statement::prepare(db_.get(),
                           "UPDATE ranks SET state = ?3, finished_at = ?4 WHERE job_id = ?1 AND "
                           "attempt = ?2 AND state IN ('pending', 'running')"));
    ranks.bindText(1, job_id);
    ranks.bindInt64(2, model.attempt());
    ranks.bindText(3, state);
    ranks.bindDouble(4, at);
    RM_RETURN_IF_ERROR(ranks.run("ending the ranks of job " + job_id));
    return saveModel(job_id, model);
  };
  Status status = end();
  if (status.isOk()) status = commit_.run("ending job " + job_id);
  if (!status.isOk() && sqlite3_get_autocommit(db_.get()) == 0) {
    (void)rollback_.run("rolling back");  // `status` says what failed
  }
  return status;
}

// ---------------------------------------------------------------------------------------------
// Archive and delete: rare, a handful of jobs at a time, so their statements are not cached.

Status Store::Impl::forEachJob(const std::vector<std::string>& job_ids, const char* sql, double at,
                               std::string_view what) {
  RM_ASSIGN_OR_RETURN(Statement s, Statement::prepare(db_.get(), sql));
  RM_RETURN_IF_ERROR(db_.exec("BEGIN IMMEDIATE", what));
  for (const std::string& id : job_ids) {
    ScopedReset reset(s);
    s.bindText(1, id);
    s.bindDouble(2, at);
    Status status = s.run(std::string(what) + " " + id);
    if (!status.isOk()) {
      (void)db_.exec("ROLLBACK", "rolling back");  // `status` says what failed
      return status;
    }
  }
  return db_.exec("COMMIT", what);
}

Status Store::Impl::setArchived(const std::vector<std::string>& job_ids, bool archived) {
  return forEachJob(job_ids,
                    archived ? "UPDATE jobs SET archived = 1 WHERE job_id = ?1"
                             : "UPDATE jobs SET archived = 0 WHERE job_id = ?1",
                    0, archived ? "archiving job" : "unarchiving job");
}

Status Store::Impl::markDeleted(const std::vector<std::string>& job_ids, double at) {
  if (!(at > 0)) return invalidArgument("markDeleted: the time must be positive");
  return forEachJob(job_ids, "UPDATE jobs SET deleted_at = ?2 WHERE job_id = ?1", at,
                    "deleting job");
}

Status Store::Impl::undelete(const std::vector<std::string>& job_ids) {
  return forEachJob(job_ids, "UPDATE jobs SET deleted_at = 0 WHERE job_id = ?1", 0,
                    "undeleting job");
}

Status Store::Impl::purgeJob(const std::string& job_id) {
  static const char* const kDeletes[] = {
      "DELETE FROM metrics WHERE series_id IN (SELECT id FROM series WHERE job_id = ?1)",
      "DELETE FROM series WHERE job_id = ?1",
      "DELETE FROM ranks WHERE job_id = ?1",
      "DELETE FROM attempts WHERE job_id = ?1",
      "DELETE FROM events WHERE job_id = ?1",
      "DELETE FROM slurm_jobs WHERE job_id = ?1",
      "DELETE FROM jobs WHERE job_id = ?1",
  };
  for (const char* sql : kDeletes) {
    RM_ASSIGN_OR_RETURN(Statement s, Statement::prepare(db_.get(), sql));
    s.bindText(1, job_id);
    RM_RETURN_IF_ERROR(s.run("purging job " + job_id));
  }
  return Status::ok();
}

Result<int> Store::Impl::purgeDeleted(const std::vector<std::string>* job_ids) {
  std::vector<std::string> marked;
  {
    RM_ASSIGN_OR_RETURN(Statement s, Statement::prepare(db_.get(),
                                                        "SELECT job_id FROM jobs WHERE "
                                                        "deleted_at > 0 ORDER BY job_id"));
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) {
      std::string id = s.columnText(0);
      if (!job_ids || std::find(job_ids->begin(), job_ids->end(), id) != job_ids->end()) {
        marked.push_back(std::move(id));
      }
    }
    if (rc != SQLITE_DONE) return error(rc, "listing the deleted jobs");
  }
  if (marked.empty()) return 0;
  RM_RETURN_IF_ERROR(db_.exec("BEGIN IMMEDIATE", "purging deleted jobs"));
  for (const std::string& id : marked) {
    Status status = purgeJob(id);
    if (!status.isOk()) {
      (void)db_.exec("ROLLBACK", "rolling back");  // `status` says what failed
      return status;
    }
  }
  RM_RETURN_IF_ERROR(db_.exec("COMMIT", "purging deleted jobs"));
  // Their series ids are gone: a cached one would file a late metric under no series.
  series_ids_.clear();
  return static_cast<int>(marked.size());
}

// ---------------------------------------------------------------------------------------------
// Reads. Every cached SELECT is reset by a ScopedReset, so no snapshot outlives its call.

Result<uint64_t> Store::Impl::cursor(const std::string& agent, const std::string& journal_id) {
  ScopedReset reset(select_cursor_);
  select_cursor_.bindText(1, agent);
  select_cursor_.bindText(2, journal_id);
  const int rc = select_cursor_.step();
  if (rc == SQLITE_ROW) return static_cast<uint64_t>(select_cursor_.columnInt64(0));
  if (rc == SQLITE_DONE) return uint64_t{1};
  return error(rc, "reading the cursor of " + agent);
}

Result<std::vector<AgentRow>> Store::Impl::agents() {
  ScopedReset reset(select_agents_);
  std::vector<AgentRow> rows;
  int rc;
  while ((rc = select_agents_.step()) == SQLITE_ROW) {
    AgentRow row;
    row.name = select_agents_.columnText(0);
    row.endpoint = select_agents_.columnText(1);
    if (!row.inventory.ParseFromString(select_agents_.columnBlob(2))) {
      return ioError("history file " + path_ + ": the inventory of agent " + row.name +
                     " does not parse");
    }
    row.last_seen = select_agents_.columnDouble(3);
    rows.push_back(std::move(row));
  }
  if (rc != SQLITE_DONE) return error(rc, "listing agents");
  return rows;
}

JobRow Store::Impl::readJob(const Statement& s) {
  JobRow row;
  row.job_id = s.columnText(0);
  row.name = s.columnText(1);
  row.launcher = s.columnText(2);
  row.state = s.columnText(3);
  row.spec_yaml = s.columnText(4);
  row.world_size = static_cast<int>(s.columnInt64(5));
  row.attempt = static_cast<uint32_t>(s.columnInt64(6));
  row.submitted_at = s.columnDouble(7);
  row.finished_at = s.columnDouble(8);
  row.archived = s.columnInt64(9) != 0;
  row.restarts_left = static_cast<int>(s.columnInt64(10));
  // NULL: a row from before the history kept the fold (every new row starts with an empty one).
  if (s.columnIsNull(11) || !row.fold.ParseFromString(s.columnBlob(11))) {
    row.fold = legacyFold(row);
  }
  return row;
}

Result<std::vector<JobRow>> Store::Impl::jobs() {
  ScopedReset reset(select_jobs_);
  std::vector<JobRow> rows;
  int rc;
  while ((rc = select_jobs_.step()) == SQLITE_ROW) rows.push_back(readJob(select_jobs_));
  if (rc != SQLITE_DONE) return error(rc, "listing jobs");
  return rows;
}

Result<JobRow> Store::Impl::job(const std::string& id_or_prefix) {
  if (id_or_prefix.empty()) return invalidArgument("job id is empty");
  {
    ScopedReset reset(select_job_exact_);
    select_job_exact_.bindText(1, id_or_prefix);
    const int rc = select_job_exact_.step();
    if (rc == SQLITE_ROW) return readJob(select_job_exact_);
    if (rc != SQLITE_DONE) return error(rc, "looking up job " + id_or_prefix);
  }
  // Ids starting with P are exactly those in [P, P with its last byte incremented), once
  // trailing 0xff bytes are dropped.
  std::string upper = id_or_prefix;
  while (!upper.empty() && static_cast<unsigned char>(upper.back()) == 0xff) upper.pop_back();
  ScopedReset reset(select_job_prefix_);
  select_job_prefix_.bindText(1, id_or_prefix);
  if (upper.empty()) {
    select_job_prefix_.bindBlob(2, "");  // no upper bound: SQLite sorts all text before blobs
  } else {
    upper.back() = static_cast<char>(static_cast<unsigned char>(upper.back()) + 1);
    select_job_prefix_.bindText(2, upper);
  }
  std::vector<JobRow> matches;
  int rc;
  while ((rc = select_job_prefix_.step()) == SQLITE_ROW) {
    matches.push_back(readJob(select_job_prefix_));
  }
  if (rc != SQLITE_DONE) return error(rc, "looking up job prefix " + id_or_prefix);
  if (matches.empty()) return notFound("no job with id or id prefix '" + id_or_prefix + "'");
  if (matches.size() == 1) return std::move(matches.front());
  std::string message = "job id prefix '" + id_or_prefix + "' is ambiguous: it matches ";
  constexpr size_t kShown = 5;
  for (size_t i = 0; i < std::min(matches.size(), kShown); ++i) {
    if (i > 0) message += ", ";
    message += matches[i].job_id;
  }
  if (matches.size() > kShown) message += " and more";
  return invalidArgument(message + "; give more characters");
}

Result<std::vector<RankRow>> Store::Impl::readRanks(const std::string& job_id, uint32_t attempt) {
  ScopedReset reset(select_ranks_);
  Statement& s = select_ranks_;
  s.bindText(1, job_id);
  s.bindInt64(2, attempt);
  std::vector<RankRow> rows;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    RankRow row;
    row.job_id = s.columnText(0);
    row.attempt = static_cast<uint32_t>(s.columnInt64(1));
    row.rank = static_cast<int>(s.columnInt64(2));
    row.local_rank = static_cast<int>(s.columnInt64(3));
    row.agent = s.columnText(4);
    row.pid = static_cast<int>(s.columnInt64(5));
    row.state = s.columnText(6);
    row.exit_code = static_cast<int>(s.columnInt64(7));
    row.signal = static_cast<int>(s.columnInt64(8));
    row.error = s.columnText(9);
    row.last_step = s.columnInt64(10);
    row.started_at = s.columnDouble(11);
    row.finished_at = s.columnDouble(12);
    row.device = s.columnText(13);
    row.log_tail = s.columnText(14);
    rows.push_back(std::move(row));
  }
  if (rc != SQLITE_DONE) return error(rc, "listing the ranks of job " + job_id);
  return rows;
}

Result<std::vector<RankRow>> Store::Impl::ranks(const std::string& job_id,
                                                std::optional<uint32_t> attempt) {
  if (attempt) return readRanks(job_id, *attempt);
  {
    ScopedReset reset(select_job_attempt_);
    select_job_attempt_.bindText(1, job_id);
    const int rc = select_job_attempt_.step();
    if (rc == SQLITE_ROW) {
      const auto latest = static_cast<uint32_t>(select_job_attempt_.columnInt64(0));
      return readRanks(job_id, latest);
    }
    if (rc != SQLITE_DONE) return error(rc, "looking up job " + job_id);
  }
  ScopedReset reset(select_max_rank_attempt_);
  select_max_rank_attempt_.bindText(1, job_id);
  const int rc = select_max_rank_attempt_.step();
  if (rc != SQLITE_ROW) return error(rc, "looking up the attempts of job " + job_id);
  if (select_max_rank_attempt_.columnIsNull(0)) return notFound("no job '" + job_id + "'");
  return readRanks(job_id, static_cast<uint32_t>(select_max_rank_attempt_.columnInt64(0)));
}

Result<std::vector<MetricRow>> Store::Impl::metrics(const MetricQuery& q) {
  const int mask =
      (q.job_id.empty() ? 0 : 1) | (q.rank ? 2 : 0) | (q.name ? 4 : 0) | (q.attempt ? 8 : 0);
  Statement& s = metric_queries_[mask];
  if (s.get() == nullptr) {
    // Assembled from constant fragments only; the values are bound below.
    std::string sql =
        "SELECT s.job_id, s.attempt, s.rank, s.name, m.step, m.value, m.time "
        "FROM series s JOIN metrics m ON m.series_id = s.id WHERE 1";
    if (mask & 1) sql += " AND s.job_id = ?1";
    if (mask & 2) sql += " AND s.rank = ?2";
    if (mask & 4) sql += " AND s.name = ?3";
    if (mask & 8) sql += " AND s.attempt = ?4";
    sql += " ORDER BY s.job_id, s.attempt, s.rank, s.name, m.seq";
    RM_ASSIGN_OR_RETURN(s, Statement::prepare(db_.get(), sql));
  }
  ScopedReset reset(s);
  if (mask & 1) s.bindText(1, q.job_id);
  if (mask & 2) s.bindInt64(2, *q.rank);
  if (mask & 4) s.bindText(3, *q.name);
  if (mask & 8) s.bindInt64(4, *q.attempt);
  std::vector<MetricRow> rows;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    MetricRow row;
    row.job_id = s.columnText(0);
    row.attempt = static_cast<uint32_t>(s.columnInt64(1));
    row.rank = static_cast<int>(s.columnInt64(2));
    row.name = s.columnText(3);
    row.step = s.columnInt64(4);
    row.value = s.columnValue(5);
    row.time = s.columnDouble(6);
    rows.push_back(std::move(row));
  }
  if (rc != SQLITE_DONE) return error(rc, "reading metrics");
  return rows;
}

Result<std::vector<SeriesPoint>> Store::Impl::series(const std::string& job_id, uint32_t attempt,
                                                     int rank, const std::string& name,
                                                     int buckets) {
  if (buckets < 1 || buckets > kMaxBuckets) {
    return invalidArgument("series: buckets must be in [1, " + std::to_string(kMaxBuckets) +
                           "], got " + std::to_string(buckets));
  }
  RM_ASSIGN_OR_RETURN(const int64_t id, seriesId(job_id, attempt, rank, name, false));
  int64_t min_step = 0, max_step = 0;
  {
    ScopedReset reset(series_extent_);
    series_extent_.bindInt64(1, id);
    const int rc = series_extent_.step();
    if (rc != SQLITE_ROW) return error(rc, "reading the extent of metric " + name);
    if (series_extent_.columnInt64(2) == 0) return std::vector<SeriesPoint>{};
    min_step = series_extent_.columnInt64(0);
    max_step = series_extent_.columnInt64(1);
  }
  // 128-bit arithmetic: steps may span the whole int64 range.
  const auto span = static_cast<unsigned __int128>(static_cast<__int128>(max_step) - min_step) + 1;
  const auto n = static_cast<size_t>(std::min<unsigned __int128>(span, buckets));
  struct Bucket {
    bool used = false;
    int64_t step = 0;
    double min = 0, max = 0, last = 0, time = 0;
  };
  std::vector<Bucket> bins(n);

  ScopedReset reset(series_points_);
  series_points_.bindInt64(1, id);
  int rc;
  while ((rc = series_points_.step()) == SQLITE_ROW) {  // journal (seq) order
    const int64_t step = series_points_.columnInt64(0);
    // Points committed after the extent was read may fall outside it; the next call shows them.
    if (step < min_step || step > max_step) continue;
    const double value = series_points_.columnValue(1);
    const auto offset = static_cast<unsigned __int128>(static_cast<__int128>(step) - min_step);
    Bucket& b = bins[static_cast<size_t>(offset * n / span)];
    if (!b.used) {
      b = {true, step, value, value, value, series_points_.columnDouble(2)};
      continue;
    }
    b.min = std::fmin(b.min, value);  // NaN is skipped unless the bucket holds nothing else
    b.max = std::fmax(b.max, value);
    if (step >= b.step) {
      b.step = step;
      b.last = value;
      b.time = series_points_.columnDouble(2);
    }
  }
  if (rc != SQLITE_DONE) return error(rc, "reading metric " + name);
  std::vector<SeriesPoint> points;
  for (const Bucket& b : bins) {
    if (b.used) points.push_back({b.step, b.min, b.max, b.last, b.time});
  }
  return points;
}

// One health row from a statement selecting time, cpu_percent, mem_used, mem_total, load1,
// net_rx, net_tx, gpus.
static Result<HealthRow> healthRowFrom(const Statement& s, const std::string& agent,
                                       const std::string& path) {
  HealthRow row;
  row.agent = agent;
  row.time = s.columnDouble(0);
  if (!row.sample.ParseFromString(s.columnBlob(7))) {  // first: parsing clears the message
    return ioError("history file " + path + ": GPU health of " + agent + " does not parse");
  }
  row.sample.set_cpu_percent(s.columnDouble(1));
  row.sample.set_memory_used_bytes(static_cast<uint64_t>(s.columnInt64(2)));
  row.sample.set_memory_total_bytes(static_cast<uint64_t>(s.columnInt64(3)));
  row.sample.set_load1(s.columnDouble(4));
  row.sample.set_net_rx_bytes_per_s(s.columnDouble(5));
  row.sample.set_net_tx_bytes_per_s(s.columnDouble(6));
  return row;
}

Result<std::vector<HealthRow>> Store::Impl::health(const std::string& agent, double from, double to,
                                                   int limit) {
  ScopedReset reset(health_range_);
  Statement& s = health_range_;
  s.bindText(1, agent);
  s.bindDouble(2, from);
  s.bindDouble(3, to);
  s.bindInt64(4, limit);
  std::vector<HealthRow> rows;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    RM_ASSIGN_OR_RETURN(HealthRow row, healthRowFrom(s, agent, path_));
    rows.push_back(std::move(row));
  }
  if (rc != SQLITE_DONE) return error(rc, "reading the health of " + agent);
  return rows;
}

Result<std::vector<HealthRow>> Store::Impl::latestHealth() {
  std::vector<HealthRow> rows;
  std::string agent;  // walks the distinct agents through the (agent, seq) key
  while (true) {
    {
      ScopedReset reset(next_health_agent_);
      next_health_agent_.bindText(1, agent);
      const int rc = next_health_agent_.step();
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return error(rc, "listing agents with health samples");
      agent = next_health_agent_.columnText(0);
    }
    ScopedReset reset(latest_health_);
    Statement& s = latest_health_;
    s.bindText(1, agent);
    const int rc = s.step();
    if (rc == SQLITE_DONE) continue;
    if (rc != SQLITE_ROW) return error(rc, "reading the health of " + agent);
    RM_ASSIGN_OR_RETURN(HealthRow row, healthRowFrom(s, agent, path_));
    rows.push_back(std::move(row));
  }
  return rows;
}

Result<std::vector<EventRow>> Store::Impl::events(const std::string& job_id) {
  ScopedReset reset(select_events_);
  Statement& s = select_events_;
  s.bindText(1, job_id);
  std::vector<EventRow> rows;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    EventRow row;
    row.job_id = s.columnText(0);
    row.attempt = static_cast<uint32_t>(s.columnInt64(1));
    row.source = s.columnText(2);
    row.seq = static_cast<uint64_t>(s.columnInt64(3));
    row.agent = s.columnText(4);
    row.time = s.columnDouble(5);
    row.kind = s.columnText(6);
    row.detail = s.columnText(7);
    row.rank = static_cast<int>(s.columnInt64(8));
    row.rank_agent = s.columnText(9);
    row.problem = s.columnInt64(10) != 0;
    row.exit_code = static_cast<int>(s.columnInt64(11));
    row.signal = static_cast<int>(s.columnInt64(12));
    row.cause_kind = s.columnText(13);
    rows.push_back(std::move(row));
  }
  if (rc != SQLITE_DONE) return error(rc, "listing the events of job " + job_id);
  return rows;
}

Result<int64_t> Store::Impl::countMetrics(const std::string& job_id) {
  Statement& s = job_id.empty() ? count_all_metrics_ : count_job_metrics_;
  ScopedReset reset(s);
  if (!job_id.empty()) s.bindText(1, job_id);
  const int rc = s.step();
  if (rc != SQLITE_ROW) return error(rc, "counting metrics");
  return s.columnInt64(0);
}

// ---------------------------------------------------------------------------------------------
// Store

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::~Store() = default;

Result<std::unique_ptr<Store>> Store::open(const std::string& path) {
  RM_ASSIGN_OR_RETURN(std::unique_ptr<Impl> impl, Impl::open(path));
  return std::unique_ptr<Store>(new Store(std::move(impl)));
}

int Store::schemaVersion() { return currentSchemaVersion(); }

Status Store::applyJournal(const std::string& agent, const std::string& journal_id,
                           const std::vector<proto::JournalRecord>& records, uint64_t next_seq) {
  const JournalChunk chunk{&agent, &journal_id, &records, next_seq};
  return impl_->applyChunks(&chunk, 1);
}

Result<uint64_t> Store::cursor(const std::string& agent, const std::string& journal_id) {
  return impl_->cursor(agent, journal_id);
}
Status Store::recordSubmission(const JobRow& job) {
  return impl_->durably([&] { return impl_->recordSubmission(job); });
}
Status Store::recordAgent(const std::string& name, const std::string& endpoint,
                          const proto::Inventory& inv) {
  return impl_->recordAgent(name, endpoint, inv);
}
Status Store::recordSlurmJob(const SlurmJobRow& row) {
  return impl_->durably([&] { return impl_->recordSlurmJob(row); });
}
Result<SlurmJobRow> Store::slurmJob(const std::string& job_id) { return impl_->slurmJob(job_id); }
Result<std::vector<SlurmJobRow>> Store::slurmJobs() { return impl_->slurmJobs(); }
Status Store::endUnfinishedJob(const std::string& job_id, const std::string& state, double at) {
  return impl_->durably([&] { return impl_->endUnfinishedJob(job_id, state, at); });
}
Status Store::setArchived(const std::vector<std::string>& job_ids, bool archived) {
  return impl_->durably([&] { return impl_->setArchived(job_ids, archived); });
}
Status Store::markDeleted(const std::vector<std::string>& job_ids, double at) {
  return impl_->durably([&] { return impl_->markDeleted(job_ids, at); });
}
Status Store::undelete(const std::vector<std::string>& job_ids) {
  return impl_->durably([&] { return impl_->undelete(job_ids); });
}
Result<int> Store::purgeDeleted(const std::vector<std::string>& job_ids) {
  return impl_->durably([&] { return impl_->purgeDeleted(&job_ids); });
}
Result<int> Store::purgeAllDeleted() {
  return impl_->durably([&] { return impl_->purgeDeleted(nullptr); });
}
Result<std::vector<AgentRow>> Store::agents() { return impl_->agents(); }
Result<std::vector<JobRow>> Store::jobs() { return impl_->jobs(); }
Result<JobRow> Store::job(const std::string& id_or_unique_prefix) {
  return impl_->job(id_or_unique_prefix);
}
Result<std::vector<RankRow>> Store::ranks(const std::string& job_id,
                                          std::optional<uint32_t> attempt) {
  return impl_->ranks(job_id, attempt);
}
Result<std::vector<MetricRow>> Store::metrics(const MetricQuery& q) { return impl_->metrics(q); }
Result<std::vector<SeriesPoint>> Store::series(const std::string& job_id, uint32_t attempt,
                                               int rank, const std::string& name, int buckets) {
  return impl_->series(job_id, attempt, rank, name, buckets);
}
Result<std::vector<HealthRow>> Store::latestHealth() { return impl_->latestHealth(); }
Result<std::vector<HealthRow>> Store::health(const std::string& agent, double from, double to,
                                             int limit) {
  return impl_->health(agent, from, to, limit);
}
Result<std::vector<EventRow>> Store::events(const std::string& job_id) {
  return impl_->events(job_id);
}
Result<int64_t> Store::countMetrics(const std::string& job_id) {
  return impl_->countMetrics(job_id);
}

// ---------------------------------------------------------------------------------------------
// BatchWriter: one background thread owns the writing connection. SQLite allows one writer per
// file at a time; funnelling every insert through one thread keeps callers (network and GUI
// threads) from ever waiting on the file lock, and lets it commit many batches per transaction.

class BatchWriter::Impl {
  using SpentRecords = std::vector<std::vector<proto::JournalRecord>>;

 public:
  Impl(std::unique_ptr<Store> store, std::unique_ptr<WalCheckpointer> checkpointer,
       size_t max_queued)
      : store_(std::move(store)),
        checkpointer_(std::move(checkpointer)),
        max_queued_(std::max<size_t>(max_queued, 1)) {
    thread_ = std::thread([this] { run(); });
  }

  ~Impl() {
    (void)flush();  // its owner's last flush() reported any failure
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  // `take_back_spent`: free the committed batches' records here, on the caller's thread (see
  // spent_); false for callers that did not parse them (enqueueWrite, from any thread).
  void enqueue(Batch batch, bool take_back_spent) {
    SpentRecords spent;  // destroyed last, after the lock is released
    std::unique_lock<std::mutex> lock(mu_);
    // Backpressure: wait for room. The writer always makes progress (SQLite's busy timeout
    // bounds each transaction), and stopping_ ends the wait.
    cv_.wait(lock, [&] { return queue_.size() < max_queued_ || stopping_; });
    if (stopping_) return;
    queue_.push_back(std::move(batch));
    ++queued_total_;
    if (take_back_spent) spent.swap(spent_);
    lock.unlock();
    cv_.notify_all();
  }

  Status flush() {
    SpentRecords spent;  // destroyed last, after the lock is released
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return (queue_.empty() && in_flight_ == 0) || stopping_; });
    spent.swap(spent_);
    return std::exchange(first_error_, Status::ok());
  }

  void waitWritten() {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t target = queued_total_;
    cv_.wait(lock, [&] { return written_total_ >= target || stopping_; });
  }

 private:
  void run() {
    std::vector<Batch> taken;
    std::vector<JournalChunk> chunks;
    SpentRecords returned;
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything is written
      // Coalesce everything queued into one transaction: one commit (and one fsync of the WAL
      // at checkpoints) for many small batches.
      taken.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
      queue_.clear();
      in_flight_ = taken.size();
      const bool drop = !first_error_.isOk();
      lock.unlock();
      cv_.notify_all();  // room in the queue

      // Runs of journal batches go in one transaction each; other writes in between keep their
      // place in the queue.
      Status status;
      for (size_t i = 0; i < taken.size() && !drop && status.isOk();) {
        if (taken[i].write) {
          status = taken[i++].write(*store_);
          continue;
        }
        chunks.clear();
        for (; i < taken.size() && !taken[i].write; ++i) {
          const Batch& b = taken[i];
          chunks.push_back({&b.agent, &b.journal_id, &b.records, b.next_seq});
        }
        status = store_->impl_->applyChunks(chunks.data(), chunks.size());
      }
      const size_t committed = taken.size();
      for (Batch& b : taken) {
        if (!b.records.empty()) returned.push_back(std::move(b.records));
      }
      taken.clear();
      checkpointer_->throttle();  // the WAL stays bounded

      lock.lock();
      for (auto& records : returned) spent_.push_back(std::move(records));
      returned.clear();
      if (!status.isOk() && first_error_.isOk()) first_error_ = std::move(status);
      in_flight_ = 0;
      written_total_ += committed;
      cv_.notify_all();
    }
  }

  std::unique_ptr<Store> store_;  // used by thread_ only
  // Checkpoints store_'s WAL beside thread_; declared after store_, so it goes first.
  std::unique_ptr<WalCheckpointer> checkpointer_;
  const size_t max_queued_;
  std::mutex mu_;
  std::condition_variable cv_;  // queue changed, batches committed, or stopping
  std::deque<Batch> queue_;     // GUARDED_BY(mu_)
  size_t in_flight_ = 0;        // GUARDED_BY(mu_): batches being committed
  uint64_t queued_total_ = 0;   // GUARDED_BY(mu_): batches ever queued
  uint64_t written_total_ = 0;  // GUARDED_BY(mu_): batches ever committed or dropped
  Status first_error_;          // GUARDED_BY(mu_): since the last flush()
  // Committed batches' records, freed by the next enqueue() of records or flush(), on the thread
  // that parsed them. Freed on this thread, their millions of small blocks each took the lock of
  // that thread's malloc arena from under it: in bench_metrics_pipeline that cost more than the
  // inserts. It holds no more than the queue did: each enqueue() empties it.
  SpentRecords spent_;     // GUARDED_BY(mu_)
  bool stopping_ = false;  // GUARDED_BY(mu_)
  std::thread thread_;
};

BatchWriter::BatchWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BatchWriter::~BatchWriter() = default;

Result<std::unique_ptr<BatchWriter>> BatchWriter::open(const std::string& path,
                                                       size_t max_queued_batches) {
  RM_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, Store::open(path));
  RM_ASSIGN_OR_RETURN(std::unique_ptr<WalCheckpointer> checkpointer,
                      WalCheckpointer::start(path, store->impl_->connection()));
  return std::unique_ptr<BatchWriter>(new BatchWriter(
      std::make_unique<Impl>(std::move(store), std::move(checkpointer), max_queued_batches)));
}

void BatchWriter::enqueue(std::string agent, std::string journal_id,
                          std::vector<proto::JournalRecord> records, uint64_t next_seq) {
  impl_->enqueue({std::move(agent), std::move(journal_id), std::move(records), next_seq}, true);
}

void BatchWriter::enqueueWrite(std::function<Status(Store&)> write) {
  Batch batch;
  batch.write = std::move(write);
  impl_->enqueue(std::move(batch), false);
}

Status BatchWriter::flush() { return impl_->flush(); }
void BatchWriter::waitWritten() { impl_->waitWritten(); }

}  // namespace ringmaster::store
