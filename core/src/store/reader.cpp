#include "ringmaster/store/reader.h"

#include <utility>

#include "store/database.h"
#include "store/schema.h"

namespace ringmaster::store {

Reader::Reader(std::unique_ptr<Database> db) : db_(std::move(db)) {}
Reader::~Reader() = default;

Result<std::unique_ptr<Reader>> Reader::open(const std::string& path) {
  RM_ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::open(path, /*read_only=*/true));
  return std::unique_ptr<Reader>(new Reader(std::move(db)));
}

int Reader::schemaVersion() { return currentSchemaVersion(); }
Result<uint64_t> Reader::cursor(const std::string& agent, const std::string& journal_id) {
  return db_->cursor(agent, journal_id);
}
Result<SlurmJobRow> Reader::slurmJob(const std::string& job_id) { return db_->slurmJob(job_id); }
Result<std::vector<SlurmJobRow>> Reader::slurmJobs() { return db_->slurmJobs(); }
Result<std::vector<AgentRow>> Reader::agents() { return db_->agents(); }
Result<std::vector<JobRow>> Reader::jobs() { return db_->jobs(); }
Result<JobRow> Reader::job(const std::string& id_or_unique_prefix) {
  return db_->job(id_or_unique_prefix);
}
Result<std::vector<RankRow>> Reader::ranks(const std::string& job_id,
                                           std::optional<uint32_t> attempt) {
  return db_->ranks(job_id, attempt);
}
Result<std::vector<MetricRow>> Reader::metrics(const MetricQuery& q) { return db_->metrics(q); }
Result<std::vector<SeriesRow>> Reader::jobSeries(const std::string& job_id) {
  return db_->jobSeries(job_id);
}
Status Reader::forEachPoint(
    int64_t series_id, const std::function<void(int64_t step, double value, double time)>& point) {
  return db_->forEachPoint(series_id, point);
}
Status Reader::forEachPointFrom(
    int64_t series_id, int64_t step, int count,
    const std::function<void(int64_t step, double value, double time)>& point) {
  return db_->forEachPointFrom(series_id, step, count, point);
}
Result<std::vector<SeriesPoint>> Reader::series(const std::string& job_id, uint32_t attempt,
                                                int rank, const std::string& name, int buckets) {
  return db_->series(job_id, attempt, rank, name, buckets);
}
Result<std::vector<HealthRow>> Reader::latestHealth() { return db_->latestHealth(); }
Result<std::vector<HealthRow>> Reader::health(const std::string& agent, double from, double to,
                                              int limit) {
  return db_->health(agent, from, to, limit);
}
Result<std::vector<EventRow>> Reader::events(const std::string& job_id) {
  return db_->events(job_id);
}
Result<std::vector<HostRecord>> Reader::hostRecords(double since) {
  return db_->hostRecords(since);
}

Result<std::vector<PreflightReport>> Reader::preflights(int limit, int64_t id) {
  return db_->preflights(limit, id);
}

Result<int64_t> Reader::countMetrics(const std::string& job_id) {
  return db_->countMetrics(job_id);
}

}  // namespace ringmaster::store
