#pragma once
// The client-side history: a SQLite file (WAL) holding what the agents' journals reported, so the
// GUI and CLI can show jobs, ranks, metrics and host health after the fact.
//
// Reader reads it; Writer (writer.h) is a Reader that also writes, one per file in a process,
// and BatchWriter (batch_writer.h) is the thread that owns it. A Reader's connection refuses
// writes (PRAGMA query_only), so code that holds only a Reader cannot write, by type or by SQL.
//
// Records are keyed like the journal, (job, attempt, source, seq); applying a batch twice stores
// everything once. Job and rank states are the job model's fold of the records alone, so a job
// submitted by another client shows up with the right state.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/store/preflight_report.h"
#include "ringmaster/store/rows.h"
#include "ringmaster/util/result.h"

namespace ringmaster::store {

class Database;

// The history files this process opened whose pages SQLite found damaged (PRAGMA quick_check,
// at most hourly per file): one sentence each, naming the file and how to recover what is
// readable. Every front end says them: a damaged file is still opened and read.
std::vector<std::string> damagedHistories();

// Not thread-safe: one Reader per thread. Readers in other threads or processes see each
// committed batch as a whole (WAL).
class Reader {
 public:
  // Opens or creates the file (and its parent directories), in WAL mode, migrating an older
  // schema. A file from a newer build gives kUnsupportedVersion.
  static Result<std::unique_ptr<Reader>> open(const std::string& path);
  virtual ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  // The schema version this build writes (PRAGMA user_version of the files it opens).
  static int schemaVersion();

  // The next seq to pull from the agent's journal; 1 when unknown (seq starts at 1).
  Result<uint64_t> cursor(const std::string& agent, const std::string& journal_id);

  // The Slurm row of a job; kNotFound for a job that did not run on Slurm.
  Result<SlurmJobRow> slurmJob(const std::string& job_id);
  Result<std::vector<SlurmJobRow>> slurmJobs();  // every job on Slurm, by job id

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
  // The same, series by series, so that a long run's rows never sit in memory together: a job's
  // series ordered by attempt, rank, name; then one series' points in journal order.
  Result<std::vector<SeriesRow>> jobSeries(const std::string& job_id);
  Status forEachPoint(int64_t series_id,
                      const std::function<void(int64_t step, double value, double time)>& point);
  // At most `count` points of the series in journal order, from its first point at `step` or
  // later: a bounded read of a series however long (its steps grow in journal order, as one
  // rank's do in one attempt, so the start is a binary search of index seeks).
  Status forEachPointFrom(
      int64_t series_id, int64_t step, int count,
      const std::function<void(int64_t step, double value, double time)>& point);
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
  // Every agent's record over the jobs submitted at or after `since` (0: all), by agent: how
  // long its ranks ran and how many failed attempts began with one of them.
  Result<std::vector<HostRecord>> hostRecords(double since = 0);
  // The newest `limit` cluster preflights stored (Writer::recordPreflight), newest first, whole;
  // with `id`, that one alone (none when it is not kept).
  Result<std::vector<PreflightReport>> preflights(int limit = 50, int64_t id = 0);

 protected:
  explicit Reader(std::unique_ptr<Database> db);
  std::unique_ptr<Database> db_;
};

}  // namespace ringmaster::store
