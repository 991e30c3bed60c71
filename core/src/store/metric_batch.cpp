#include "store/metric_batch.h"

#include <utility>

namespace ringmaster::store {
namespace {

constexpr const char* kInsertPrefix =
    "INSERT INTO metrics(series_id, seq, step, value, time) VALUES";
constexpr const char* kRowPlaceholders = "(?, ?, ?, ?, ?)";
constexpr const char* kInsertSuffix = " ON CONFLICT DO NOTHING";
constexpr int kColumns = 5;

std::string insertSql(int rows) {
  std::string sql = kInsertPrefix;
  for (int i = 0; i < rows; ++i) {
    sql += i == 0 ? " " : ", ";
    sql += kRowPlaceholders;
  }
  return sql + kInsertSuffix;
}

}  // namespace

Status MetricBatch::prepare(sqlite3* db) {
  RM_ASSIGN_OR_RETURN(insert_one_, Statement::prepare(db, insertSql(1)));
  RM_ASSIGN_OR_RETURN(insert_many_, Statement::prepare(db, insertSql(kRowsPerInsert)));
  return Status::ok();
}

uint32_t MetricBatch::groupOf(int64_t series_id, const std::string& job, int rank,
                              const std::string& name) {
  // Values of one series usually follow each other (a record's several values, then the same
  // rank's next record): check the last group before hashing.
  if (!rows_.empty() && groups_[rows_.back().group].series_id == series_id) {
    return rows_.back().group;
  }
  const auto [it, added] = group_of_.try_emplace(series_id, static_cast<uint32_t>(groups_.size()));
  if (added) groups_.push_back({series_id, &job, rank, &name, 0});
  return it->second;
}

void MetricBatch::add(int64_t series_id, int64_t seq, int64_t step, double value, double time,
                      const std::string& job, int rank, const std::string& name) {
  const uint32_t group = groupOf(series_id, job, rank, name);
  ++groups_[group].rows;
  rows_.push_back({seq, step, value, time, group});
}

Status MetricBatch::insertRows(Statement& insert, const uint32_t* order, int n) {
  // The hot path: every parameter is rebound, so no clear_bindings.
  sqlite3_stmt* stmt = insert.get();
  for (int i = 0; i < n; ++i) {
    const Row& row = rows_[order[i]];
    const int p = i * kColumns;
    sqlite3_bind_int64(stmt, p + 1, groups_[row.group].series_id);
    sqlite3_bind_int64(stmt, p + 2, row.seq);
    sqlite3_bind_int64(stmt, p + 3, row.step);
    sqlite3_bind_double(stmt, p + 4, row.value);  // NaN is bound as NULL, which means NaN
    sqlite3_bind_double(stmt, p + 5, row.time);
  }
  const int rc = sqlite3_step(stmt);
  sqlite3_reset(stmt);
  if (rc == SQLITE_DONE) return Status::ok();
  const Group& g = groups_[rows_[order[0]].group];
  return sqliteError(
      sqlite3_db_handle(stmt), rc,
      "storing metric " + *g.name + " of rank " + std::to_string(g.rank) + " of job " + *g.job);
}

Status MetricBatch::insertAll() {
  // A stable counting sort by group: each series' rows together, in arrival order.
  size_t start = 0;
  for (Group& g : groups_) start += std::exchange(g.rows, start);
  order_.resize(rows_.size());
  for (size_t i = 0; i < rows_.size(); ++i) {
    order_[groups_[rows_[i].group].rows++] = static_cast<uint32_t>(i);
  }

  Status status;
  const size_t n = order_.size();
  size_t i = 0;
  for (; status.isOk() && i + kRowsPerInsert <= n; i += kRowsPerInsert) {
    status = insertRows(insert_many_, &order_[i], kRowsPerInsert);
  }
  for (; status.isOk() && i < n; ++i) status = insertRows(insert_one_, &order_[i], 1);
  clear();
  return status;
}

void MetricBatch::clear() {
  rows_.clear();
  order_.clear();
  groups_.clear();
  group_of_.clear();
}

}  // namespace ringmaster::store
