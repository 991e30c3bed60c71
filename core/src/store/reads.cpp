#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "store/database.h"

namespace ringmaster::store {

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

Result<SlurmJobRow> Database::slurmJob(const std::string& job_id) {
  RM_ASSIGN_OR_RETURN(Statement s, Statement::prepare(db_.get(), std::string(kSelectSlurmJobs) +
                                                                     " WHERE job_id = ?"));
  s.bindText(1, job_id);
  const int rc = s.step();
  if (rc == SQLITE_DONE) return notFound("job " + job_id + " did not run on Slurm");
  if (rc != SQLITE_ROW) return error(rc, "looking up the Slurm state of job " + job_id);
  return readSlurmJob(s);
}

Result<std::vector<SlurmJobRow>> Database::slurmJobs() {
  RM_ASSIGN_OR_RETURN(Statement s, Statement::prepare(db_.get(), std::string(kSelectSlurmJobs) +
                                                                     " ORDER BY job_id"));
  std::vector<SlurmJobRow> rows;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) rows.push_back(readSlurmJob(s));
  if (rc != SQLITE_DONE) return error(rc, "listing the jobs on Slurm");
  return rows;
}

// ---------------------------------------------------------------------------------------------
// Reads. Every cached SELECT is reset by a ScopedReset, so no snapshot outlives its call.

Result<uint64_t> Database::cursor(const std::string& agent, const std::string& journal_id) {
  ScopedReset reset(select_cursor_);
  select_cursor_.bindText(1, agent);
  select_cursor_.bindText(2, journal_id);
  const int rc = select_cursor_.step();
  if (rc == SQLITE_ROW) return static_cast<uint64_t>(select_cursor_.columnInt64(0));
  if (rc == SQLITE_DONE) return uint64_t{1};
  return error(rc, "reading the cursor of " + agent);
}

Result<std::vector<AgentRow>> Database::agents() {
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

JobRow Database::readJob(const Statement& s) {
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

Result<std::vector<JobRow>> Database::jobs() {
  ScopedReset reset(select_jobs_);
  std::vector<JobRow> rows;
  int rc;
  while ((rc = select_jobs_.step()) == SQLITE_ROW) rows.push_back(readJob(select_jobs_));
  if (rc != SQLITE_DONE) return error(rc, "listing jobs");
  return rows;
}

Result<JobRow> Database::job(const std::string& id_or_prefix) {
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

Result<std::vector<RankRow>> Database::readRanks(const std::string& job_id, uint32_t attempt) {
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

Result<std::vector<RankRow>> Database::ranks(const std::string& job_id,
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

Result<std::vector<MetricRow>> Database::metrics(const MetricQuery& q) {
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

Result<std::vector<SeriesRow>> Database::jobSeries(const std::string& job_id) {
  ScopedReset reset(select_job_series_);
  select_job_series_.bindText(1, job_id);
  std::vector<SeriesRow> rows;
  int rc;
  while ((rc = select_job_series_.step()) == SQLITE_ROW) {
    rows.push_back({select_job_series_.columnInt64(0),
                    static_cast<uint32_t>(select_job_series_.columnInt64(1)),
                    static_cast<int>(select_job_series_.columnInt64(2)),
                    select_job_series_.columnText(3)});
  }
  if (rc != SQLITE_DONE) return error(rc, "reading the series of job " + job_id);
  return rows;
}

Status Database::forEachPoint(
    int64_t series_id, const std::function<void(int64_t step, double value, double time)>& point) {
  ScopedReset reset(series_points_);
  series_points_.bindInt64(1, series_id);
  int rc;
  while ((rc = series_points_.step()) == SQLITE_ROW) {
    point(series_points_.columnInt64(0), series_points_.columnValue(1),
          series_points_.columnDouble(2));
  }
  if (rc != SQLITE_DONE) return error(rc, "reading series " + std::to_string(series_id));
  return Status::ok();
}

Status Database::forEachPointFrom(
    int64_t series_id, int64_t step, int count,
    const std::function<void(int64_t step, double value, double time)>& point) {
  const std::string what = "reading series " + std::to_string(series_id);
  int64_t lo = 0, hi = 0;  // the first seq whose point is at `step` or later is in [lo, hi]
  {
    ScopedReset reset(series_seq_bounds_);
    series_seq_bounds_.bindInt64(1, series_id);
    const int rc = series_seq_bounds_.step();
    if (rc != SQLITE_ROW) return error(rc, what);
    if (series_seq_bounds_.columnIsNull(0)) return Status::ok();  // no point at all
    lo = series_seq_bounds_.columnInt64(0);
    hi = series_seq_bounds_.columnInt64(1) + 1;  // past the end: no point that late
  }
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    ScopedReset reset(series_point_at_);
    series_point_at_.bindInt64(1, series_id);
    series_point_at_.bindInt64(2, mid);
    const int rc = series_point_at_.step();
    if (rc == SQLITE_DONE || (rc == SQLITE_ROW && series_point_at_.columnInt64(1) >= step)) {
      hi = mid;
    } else if (rc == SQLITE_ROW) {
      lo = series_point_at_.columnInt64(0) + 1;
    } else {
      return error(rc, what);
    }
  }
  ScopedReset reset(series_points_from_);
  series_points_from_.bindInt64(1, series_id);
  series_points_from_.bindInt64(2, lo);
  series_points_from_.bindInt64(3, count);
  int rc;
  while ((rc = series_points_from_.step()) == SQLITE_ROW) {
    point(series_points_from_.columnInt64(0), series_points_from_.columnValue(1),
          series_points_from_.columnDouble(2));
  }
  if (rc != SQLITE_DONE) return error(rc, what);
  return Status::ok();
}

Result<std::vector<SeriesPoint>> Database::series(const std::string& job_id, uint32_t attempt,
                                                  int rank, const std::string& name, int buckets) {
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

Result<std::vector<HealthRow>> Database::health(const std::string& agent, double from, double to,
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

Result<std::vector<HealthRow>> Database::latestHealth() {
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

Result<std::vector<EventRow>> Database::events(const std::string& job_id) {
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

Result<std::vector<HostRecord>> Database::hostRecords(double since) {
  Statement& s = host_records_;
  ScopedReset reset(s);
  s.bindDouble(1, since);
  std::vector<HostRecord> rows;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    rows.push_back({s.columnText(0), s.columnDouble(1), static_cast<int>(s.columnInt64(2))});
  }
  if (rc != SQLITE_DONE) return error(rc, "reading the hosts' record");
  return rows;
}

Result<int64_t> Database::countMetrics(const std::string& job_id) {
  Statement& s = job_id.empty() ? count_all_metrics_ : count_job_metrics_;
  ScopedReset reset(s);
  if (!job_id.empty()) s.bindText(1, job_id);
  const int rc = s.step();
  if (rc != SQLITE_ROW) return error(rc, "counting metrics");
  return s.columnInt64(0);
}

}  // namespace ringmaster::store
