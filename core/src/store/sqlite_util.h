#pragma once
// Thin RAII wrappers over the SQLite C API, private to the store. They throw nothing: failures come
// back as Status values that name the operation and carry SQLite's own message.

#include <sqlite3.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "ringmaster/util/result.h"

namespace ringmaster::store {

// "<what>: <sqlite message> (sqlite code N)" with a code that callers can act on: a locked or busy
// database is kUnavailable (try again later), everything else kIo.
Status sqliteError(sqlite3* db, int rc, std::string_view what);

// An owned sqlite3_stmt. Not thread-safe: it belongs to its connection's thread.
class Statement {
 public:
  Statement() = default;
  ~Statement();
  Statement(Statement&& other) noexcept : stmt_(other.stmt_) { other.stmt_ = nullptr; }
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Prepares `sql` for repeated use (SQLITE_PREPARE_PERSISTENT).
  static Result<Statement> prepare(sqlite3* db, std::string_view sql);

  sqlite3_stmt* get() const { return stmt_; }

  // Parameters are 1-based, as in SQLite. Text and blobs are copied (SQLITE_TRANSIENT), so the
  // caller's buffer may die before step().
  void bindInt64(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void bindDouble(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  void bindText(int i, std::string_view v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void bindBlob(int i, std::string_view v) {
    sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void bindNull(int i) { sqlite3_bind_null(stmt_, i); }

  // SQLITE_ROW, SQLITE_DONE or an error code.
  int step() { return sqlite3_step(stmt_); }
  // Runs a statement that returns no rows and resets it.
  Status run(std::string_view what);
  // Clears the bindings and resets, which also ends the read snapshot a SELECT holds.
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  int64_t columnInt64(int i) const { return sqlite3_column_int64(stmt_, i); }
  double columnDouble(int i) const { return sqlite3_column_double(stmt_, i); }
  bool columnIsNull(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }
  // A metric value: NULL is how SQLite stores a bound NaN.
  double columnValue(int i) const {
    return columnIsNull(i) ? std::numeric_limits<double>::quiet_NaN() : columnDouble(i);
  }
  std::string columnText(int i) const;
  std::string columnBlob(int i) const;

 private:
  explicit Statement(sqlite3_stmt* stmt) : stmt_(stmt) {}
  sqlite3_stmt* stmt_ = nullptr;
};

// Resets a cached statement when the scope ends, on every path, so that no cached SELECT keeps a
// read transaction (and with it an old WAL snapshot) open between calls.
class ScopedReset {
 public:
  explicit ScopedReset(Statement& stmt) : stmt_(stmt) {}
  ~ScopedReset() { stmt_.reset(); }
  ScopedReset(const ScopedReset&) = delete;
  ScopedReset& operator=(const ScopedReset&) = delete;

 private:
  Statement& stmt_;
};

// An owned sqlite3 connection.
class Connection {
 public:
  Connection() = default;
  ~Connection();
  Connection(Connection&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  Connection& operator=(Connection&& other) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Opens (creating when missing) the database file at `path` in multi-thread mode: the
  // connection must be used by one thread at a time.
  static Result<Connection> open(const std::string& path);

  sqlite3* get() const { return db_; }

  // Executes constant SQL (pragmas, DDL). Never use it with values: bind them to a Statement.
  Status exec(const char* sql, std::string_view what);

 private:
  explicit Connection(sqlite3* db) : db_(db) {}
  sqlite3* db_ = nullptr;
};

}  // namespace ringmaster::store
