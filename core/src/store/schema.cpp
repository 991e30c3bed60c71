#include "store/schema.h"

#include <cstddef>
#include <cstdlib>
#include <iterator>

#include "store/sqlite_util.h"

namespace ringmaster::store {
namespace {

struct Migration {
  int version;
  const char* description;
  const char* sql;
};

// Append only: a released migration never changes, so every file reaches the same schema.
constexpr Migration kMigrations[] = {
    {1, "initial schema", R"sql(
CREATE TABLE agents(
  name TEXT PRIMARY KEY,
  endpoint TEXT NOT NULL DEFAULT '',
  inventory BLOB,                        -- serialized proto::Inventory
  last_seen REAL NOT NULL DEFAULT 0
);
CREATE TABLE jobs(
  job_id TEXT PRIMARY KEY,
  name TEXT NOT NULL DEFAULT '',
  launcher TEXT NOT NULL DEFAULT '',
  world_size INTEGER NOT NULL DEFAULT 0,
  state TEXT NOT NULL DEFAULT 'submitted',
  spec_yaml TEXT NOT NULL DEFAULT '',
  submitted_at REAL NOT NULL DEFAULT 0,
  finished_at REAL NOT NULL DEFAULT 0,
  attempt INTEGER NOT NULL DEFAULT 0     -- newest attempt seen
);
CREATE TABLE attempts(
  job_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  state TEXT NOT NULL DEFAULT 'running',
  started_at REAL NOT NULL DEFAULT 0,
  finished_at REAL NOT NULL DEFAULT 0,
  PRIMARY KEY(job_id, attempt)
) WITHOUT ROWID;
CREATE TABLE ranks(
  job_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  agent TEXT NOT NULL DEFAULT '',
  local_rank INTEGER NOT NULL DEFAULT 0,
  pid INTEGER NOT NULL DEFAULT 0,
  state TEXT NOT NULL DEFAULT 'pending',
  exit_code INTEGER NOT NULL DEFAULT 0,
  signal INTEGER NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT '',
  last_step INTEGER NOT NULL DEFAULT -1,
  started_at REAL NOT NULL DEFAULT 0,
  finished_at REAL NOT NULL DEFAULT 0,
  PRIMARY KEY(job_id, attempt, rank)
) WITHOUT ROWID;
CREATE TABLE series(
  id INTEGER PRIMARY KEY,
  job_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  name TEXT NOT NULL,
  UNIQUE(job_id, attempt, rank, name)
);
CREATE TABLE metrics(
  series_id INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  step INTEGER NOT NULL,
  value REAL NOT NULL,
  time REAL NOT NULL,
  PRIMARY KEY(series_id, seq)
) WITHOUT ROWID;
CREATE TABLE health(
  agent TEXT NOT NULL,
  seq INTEGER NOT NULL,
  time REAL NOT NULL,
  cpu_percent REAL NOT NULL DEFAULT 0,
  mem_used INTEGER NOT NULL DEFAULT 0,
  mem_total INTEGER NOT NULL DEFAULT 0,
  load1 REAL NOT NULL DEFAULT 0,
  net_rx REAL NOT NULL DEFAULT 0,
  net_tx REAL NOT NULL DEFAULT 0,
  gpus BLOB,                             -- serialized proto::HealthSample holding only `gpus`
  PRIMARY KEY(agent, seq)
) WITHOUT ROWID;
CREATE TABLE cursors(
  agent TEXT NOT NULL,
  journal_id TEXT NOT NULL,
  next_seq INTEGER NOT NULL,
  PRIMARY KEY(agent, journal_id)
) WITHOUT ROWID;
)sql"},
    {2, "lifecycle events and the newest-first job index", R"sql(
CREATE TABLE events(
  job_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  source TEXT NOT NULL,
  seq INTEGER NOT NULL,
  agent TEXT NOT NULL,
  time REAL NOT NULL,
  kind TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT '',
  PRIMARY KEY(job_id, attempt, source, seq)
) WITHOUT ROWID;
CREATE INDEX jobs_by_submitted_at ON jobs(submitted_at DESC, job_id DESC);
)sql"},
    {3, "the device each rank trained on", R"sql(
ALTER TABLE ranks ADD COLUMN device TEXT NOT NULL DEFAULT '';
)sql"},
    // (agent, seq) collided when an agent's state dir was wiped (its seqs start again at 1) and
    // kept the old sample. The time tells a new sample from an old one, and is the same when a
    // sample is read again (a new journal epoch): ordered by time, ranges are index scans too.
    {4, "health samples keyed by agent, time and seq", R"sql(
CREATE TABLE health_v4(
  agent TEXT NOT NULL,
  time REAL NOT NULL,
  seq INTEGER NOT NULL,
  cpu_percent REAL NOT NULL DEFAULT 0,
  mem_used INTEGER NOT NULL DEFAULT 0,
  mem_total INTEGER NOT NULL DEFAULT 0,
  load1 REAL NOT NULL DEFAULT 0,
  net_rx REAL NOT NULL DEFAULT 0,
  net_tx REAL NOT NULL DEFAULT 0,
  gpus BLOB,
  PRIMARY KEY(agent, time, seq)
) WITHOUT ROWID;
INSERT INTO health_v4(agent, time, seq, cpu_percent, mem_used, mem_total, load1, net_rx, net_tx,
                      gpus)
  SELECT agent, time, seq, cpu_percent, mem_used, mem_total, load1, net_rx, net_tx, gpus
  FROM health;
DROP TABLE health;
ALTER TABLE health_v4 RENAME TO health;
)sql"},
    {5, "jobs queued in Slurm", R"sql(
CREATE TABLE slurm_jobs(
  job_id TEXT PRIMARY KEY,
  cluster TEXT NOT NULL,
  job_dir TEXT NOT NULL,
  slurm_job_id TEXT NOT NULL DEFAULT '',
  state TEXT NOT NULL DEFAULT '',        -- Slurm's, e.g. PENDING, RUNNING, NODE_FAIL
  reason TEXT NOT NULL DEFAULT '',       -- Slurm's reason, e.g. Priority, Resources
  updated_at REAL NOT NULL DEFAULT 0
) WITHOUT ROWID;
)sql"},
    // SQLite stores a bound NaN as NULL, which `value REAL NOT NULL` refused: a NaN loss failed
    // the whole batch. NULL in `value` now means NaN; infinities are REALs as they are.
    {6, "NaN metric values (NULL in metrics.value)", R"sql(
CREATE TABLE metrics_v6(
  series_id INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  step INTEGER NOT NULL,
  value REAL,                            -- NULL: NaN
  time REAL NOT NULL,
  PRIMARY KEY(series_id, seq)
) WITHOUT ROWID;
INSERT INTO metrics_v6(series_id, seq, step, value, time)
  SELECT series_id, seq, step, value, time FROM metrics;
DROP TABLE metrics;
ALTER TABLE metrics_v6 RENAME TO metrics;
)sql"},
    // Readers had to parse the detail text for the rank a record is about and whether it is a
    // problem. The fields are columns now; rows written before are read once, here, from their
    // text (the last time that text is parsed).
    {7, "structured event fields", R"sql(
ALTER TABLE events ADD COLUMN rank INTEGER NOT NULL DEFAULT -1;
ALTER TABLE events ADD COLUMN rank_agent TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN problem INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN exit_code INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN signal INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN cause_kind TEXT NOT NULL DEFAULT '';
UPDATE events SET rank = CAST(substr(detail, 6) AS INTEGER), rank_agent = agent,
                  problem = (kind = 'rank_exited' AND detail LIKE 'rank % failed:%')
  WHERE kind IN ('rank_started', 'rank_exited') AND detail LIKE 'rank %';
UPDATE events SET problem = 1 WHERE kind = 'job_failure' AND detail LIKE 'attempt % failed:%';
UPDATE events
  SET rank = CAST(substr(detail, instr(detail, 'failed: rank ') + 13) AS INTEGER),
      rank_agent = substr(substr(detail, instr(detail, 'failed: rank ') + 13),
                          instr(substr(detail, instr(detail, 'failed: rank ') + 13), ' on ') + 4)
  WHERE kind = 'job_failure' AND instr(detail, 'failed: rank ') > 0
    AND instr(substr(detail, instr(detail, 'failed: rank ') + 13), ' on ') > 0;
UPDATE events SET rank_agent = substr(rank_agent, 1, instr(rank_agent || ' ', ' ') - 1)
  WHERE kind = 'job_failure' AND rank_agent != '';
)sql"},
    // The end of each rank's log (RankExited.tail), so that it can be read with its agent down.
    {8, "rank log tails", R"sql(
ALTER TABLE ranks ADD COLUMN log_tail TEXT NOT NULL DEFAULT '';
)sql"},
    // Archived runs are kept whole and only left out of lists. A deleted run is first only marked
    // (deleted_at), so that an undo costs nothing and a crash before the purge loses nothing
    // half-deleted; the purge removes it with everything recorded of it.
    {9, "archived and deleted runs", R"sql(
ALTER TABLE jobs ADD COLUMN archived INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN deleted_at REAL NOT NULL DEFAULT 0;
)sql"},
    // The job model's fold (proto::JobFold) is the job's state: each batch of records goes on
    // from it, so the history never folds the records a second way. restarts_left is its word
    // for lists (-1: not known, e.g. a row from before this version).
    {10, "the job model's fold", R"sql(
ALTER TABLE jobs ADD COLUMN fold BLOB;
ALTER TABLE jobs ADD COLUMN restarts_left INTEGER NOT NULL DEFAULT -1;
)sql"},
    // A cluster preflight's report (store/preflight_report.h): its link tests are jobs like any
    // other, but the matrix and the verdict existed only on the screen that ran it.
    {11, "cluster preflight reports", R"sql(
CREATE TABLE preflights(
  id INTEGER PRIMARY KEY,
  started_at REAL NOT NULL,
  seconds REAL NOT NULL DEFAULT 0,
  median_gbps REAL NOT NULL DEFAULT 0
);
CREATE TABLE preflight_agents(
  preflight_id INTEGER NOT NULL,
  position INTEGER NOT NULL,
  agent TEXT NOT NULL,
  error TEXT NOT NULL DEFAULT '',
  cpus INTEGER NOT NULL DEFAULT 0,
  load1 REAL NOT NULL DEFAULT 0,
  memory_total INTEGER NOT NULL DEFAULT 0,
  memory_used INTEGER NOT NULL DEFAULT 0,
  state_dir TEXT NOT NULL DEFAULT '',
  disk_free INTEGER NOT NULL DEFAULT 0,
  disk_total INTEGER NOT NULL DEFAULT 0,
  clock_offset_s REAL NOT NULL DEFAULT 0,
  round_trip_ms REAL NOT NULL DEFAULT 0,
  gpus INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY(preflight_id, position)
) WITHOUT ROWID;
CREATE TABLE preflight_gpu_faults(
  preflight_id INTEGER NOT NULL,
  agent_position INTEGER NOT NULL,
  position INTEGER NOT NULL,
  gpu INTEGER NOT NULL,
  severity INTEGER NOT NULL,             -- hardware::FaultSeverity
  kind TEXT NOT NULL,
  text TEXT NOT NULL,
  PRIMARY KEY(preflight_id, agent_position, position)
) WITHOUT ROWID;
CREATE TABLE preflight_links(
  preflight_id INTEGER NOT NULL,
  position INTEGER NOT NULL,
  a TEXT NOT NULL,
  b TEXT NOT NULL,
  job_id TEXT NOT NULL DEFAULT '',
  error TEXT NOT NULL DEFAULT '',
  gbps REAL NOT NULL DEFAULT 0,
  latency_us REAL NOT NULL DEFAULT 0,
  PRIMARY KEY(preflight_id, position)
) WITHOUT ROWID;
CREATE TABLE preflight_problems(
  preflight_id INTEGER NOT NULL,
  position INTEGER NOT NULL,
  text TEXT NOT NULL,
  PRIMARY KEY(preflight_id, position)
) WITHOUT ROWID;
)sql"},
};

Result<int> userVersion(Connection& db) {
  RM_ASSIGN_OR_RETURN(Statement stmt, Statement::prepare(db.get(), "PRAGMA user_version"));
  const int rc = stmt.step();
  if (rc != SQLITE_ROW) return sqliteError(db.get(), rc, "reading the schema version");
  return static_cast<int>(stmt.columnInt64(0));
}

// Runs one migration step. REQUIRES: no transaction is open on `db`.
Status applyNext(Connection& db, const std::string& path, bool* done) {
  RM_RETURN_IF_ERROR(db.exec("BEGIN IMMEDIATE", "starting a schema migration of " + path));
  // Read the version inside the write transaction: another process may have migrated meanwhile.
  auto rollback = [&](Status status) {
    (void)db.exec("ROLLBACK", "rolling back a schema migration");  // `status` says what failed
    return status;
  };
  Result<int> version = userVersion(db);
  if (!version.isOk()) return rollback(version.status());
  const int current = currentSchemaVersion();
  if (*version > current) {
    return rollback(Status(ErrorCode::kUnsupportedVersion,
                           "history file " + path + " has schema version " +
                               std::to_string(*version) +
                               ", newer than the newest this build knows (" +
                               std::to_string(current) + "); open it with a newer Ringmaster"));
  }
  if (*version == current) {
    *done = true;
    return rollback(Status::ok());  // nothing to write
  }
  const Migration& m = kMigrations[*version];  // versions are dense from 1
  const std::string what = "migrating " + path + " to schema version " + std::to_string(m.version) +
                           " (" + m.description + ")";
  Status status = db.exec(m.sql, what);
  if (!status.isOk()) return rollback(status);
  // PRAGMA takes no parameters; the value is a compile-time constant, not input.
  const std::string set_version = "PRAGMA user_version = " + std::to_string(m.version);
  status = db.exec(set_version.c_str(), what);
  if (!status.isOk()) return rollback(status);
  return db.exec("COMMIT", what);
}

}  // namespace

int currentSchemaVersion() { return static_cast<int>(std::size(kMigrations)); }

Status migrate(Connection& db, const std::string& path) {
  for (int v = 0; v < currentSchemaVersion(); ++v) {
    if (kMigrations[v].version != v + 1) std::abort();  // broken invariant: versions dense from 1
  }
  bool done = false;
  while (!done) RM_RETURN_IF_ERROR(applyNext(db, path, &done));
  return Status::ok();
}

}  // namespace ringmaster::store
