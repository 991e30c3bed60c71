#include "store/database.h"

#include <filesystem>
#include <system_error>

#include "store/integrity.h"
#include "store/schema.h"

namespace ringmaster::store {

Result<std::unique_ptr<Database>> Database::open(const std::string& path, bool read_only) {
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
  // Named, not refused: what is readable is still worth reading (damagedHistories()).
  checkedDamage(db.get());
  RM_RETURN_IF_ERROR(migrate(db, path));
  // A reader's reads are mostly one pass over a job's rows (a long run's fill any cache): its
  // cache stays small, as 32 MB of pages held after opening a 10^5-step run were a tenth of the
  // GUI's memory. The writer keeps the large one for its indexes.
  if (read_only) {
    RM_RETURN_IF_ERROR(
        db.exec("PRAGMA query_only=ON; PRAGMA cache_size=-4096", "opening " + path + " to read"));
  }

  std::unique_ptr<Database> impl(new Database(std::move(db), path));
  RM_RETURN_IF_ERROR(impl->prepareAll());
  return impl;
}

Status Database::prepareAll() {
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
      {&series_points_, "SELECT step, value, time FROM metrics WHERE series_id = ?1 ORDER BY seq"},
      // Each an index seek, however long the series (pointsFrom's binary search).
      {&series_seq_bounds_,
       "SELECT (SELECT min(seq) FROM metrics WHERE series_id = ?1), "
       "(SELECT max(seq) FROM metrics WHERE series_id = ?1)"},
      {&series_point_at_,
       "SELECT seq, step FROM metrics WHERE series_id = ?1 AND seq >= ?2 ORDER BY seq LIMIT 1"},
      {&series_points_from_,
       "SELECT step, value, time FROM metrics WHERE series_id = ?1 AND seq >= ?2 ORDER BY seq "
       "LIMIT ?3"},
      {&select_job_series_,
       "SELECT id, attempt, rank, name FROM series WHERE job_id = ?1 ORDER BY attempt, rank, name"},
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
      // Per agent: the seconds its ranks ran (those that ended), and the failed attempts whose
      // first failing rank was on it, once per attempt (a launch failure is the spec's, a
      // restart someone asked for nobody's).
      {&host_records_,
       "SELECT agent, sum(seconds), sum(failures) FROM ("
       " SELECT r.agent AS agent, r.finished_at - r.started_at AS seconds, 0 AS failures"
       " FROM ranks r JOIN jobs j ON j.job_id = r.job_id"
       " WHERE j.deleted_at = 0 AND j.submitted_at >= ?1 AND r.started_at > 0"
       " AND r.finished_at > r.started_at"
       " UNION ALL"
       " SELECT min(e.rank_agent), 0, 1 FROM events e JOIN jobs j ON j.job_id = e.job_id"
       " WHERE j.deleted_at = 0 AND j.submitted_at >= ?1 AND e.kind = 'job_failure'"
       " AND e.problem = 1 AND e.rank_agent != '' AND e.cause_kind NOT IN ('launch', 'drill')"
       " GROUP BY e.job_id, e.attempt"
       ") GROUP BY agent ORDER BY agent"},
      {&count_job_metrics_,
       "SELECT count(*) FROM series s JOIN metrics m ON m.series_id = s.id WHERE s.job_id = ?1"},
  };
  for (const Entry& e : entries) {
    RM_ASSIGN_OR_RETURN(*e.stmt, Statement::prepare(db_.get(), e.sql));
  }
  return metric_batch_.prepare(db_.get());
}

}  // namespace ringmaster::store
