#pragma once
// The metric values of one write transaction, held back and inserted together at its end, grouped
// by series and many rows per INSERT. Private to the store.
//
// Why: a row of `metrics` goes into the (series_id, seq) B-tree. Values arrive interleaved across
// ranks, so one row at a time each insert lands in a different part of the tree and pays a full
// statement (cursor open, seek from the root, halt, reset). Grouped, consecutive rows go to the
// same leaf; 64 rows per statement share one cursor. The rows stored are the same: within a
// series they keep journal order, so of two rows with one key the first still wins (ON CONFLICT
// DO NOTHING), as when they were inserted one by one.
//
// Not thread-safe: it belongs to its connection's thread.

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ringmaster/util/result.h"
#include "store/sqlite_util.h"

namespace ringmaster::store {

class MetricBatch {
 public:
  // Rows bound per multi-row INSERT; the rest of a batch goes one row per statement.
  static constexpr int kRowsPerInsert = 64;

  // Prepares the inserts on `db`, the connection whose transactions it will write in.
  Status prepare(sqlite3* db);

  // Holds back one value of series `series_id` (an id of table `series`). `job`, `rank` and
  // `name` only name the series in an error message; they must outlive insertAll().
  void add(int64_t series_id, int64_t seq, int64_t step, double value, double time,
           const std::string& job, int rank, const std::string& name);

  // Inserts everything held back, series by series, then forgets it.
  // REQUIRES: a write transaction is open on the prepared connection.
  Status insertAll();
  // Forgets everything held back (the transaction is rolled back).
  void clear();
  bool empty() const { return rows_.empty(); }

 private:
  struct Row {
    int64_t seq, step;
    double value, time;
    uint32_t group;  // index in groups_
  };
  struct Group {
    int64_t series_id;
    const std::string* job;
    int rank;
    const std::string* name;
    size_t rows;  // its rows held back; in insertAll(), its next place in order_
  };

  uint32_t groupOf(int64_t series_id, const std::string& job, int rank, const std::string& name);
  // Binds rows_[order[0..n)] to `insert` and runs it.
  Status insertRows(Statement& insert, const uint32_t* order, int n);

  Statement insert_one_, insert_many_;
  std::vector<Row> rows_;        // in arrival order
  std::vector<uint32_t> order_;  // indexes of rows_ grouped by series, arrival order in a group
  std::vector<Group> groups_;
  std::unordered_map<int64_t, uint32_t> group_of_;  // series id -> index in groups_
};

}  // namespace ringmaster::store
