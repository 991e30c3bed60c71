#include "store/sqlite_util.h"

#include <utility>

#include "store/integrity.h"

namespace ringmaster::store {
namespace {

// BUSY and LOCKED are worth a retry; damage is noted for every later opener (integrity.h).
Status classified(sqlite3* db, int rc, std::string message) {
  const int primary = rc & 0xff;
  if (db != nullptr && (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB)) {
    noteDamage(db, sqlite3_errstr(rc));
  }
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) return unavailable(std::move(message));
  return ioError(std::move(message));
}

}  // namespace

Status sqliteError(sqlite3* db, int rc, std::string_view what) {
  std::string message(what);
  message += ": ";
  message += db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  message += " (sqlite code " + std::to_string(rc) + ")";
  return classified(db, rc, std::move(message));
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    stmt_ = std::exchange(other.stmt_, nullptr);
  }
  return *this;
}

Result<Statement> Statement::prepare(sqlite3* db, std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return sqliteError(db, rc, "preparing '" + std::string(sql.substr(0, 60)) + "'");
  }
  return Statement(stmt);
}

Status Statement::run(std::string_view what) {
  const int rc = step();
  Status status;
  if (rc != SQLITE_DONE && rc != SQLITE_ROW)
    status = sqliteError(sqlite3_db_handle(stmt_), rc, what);
  reset();
  return status;
}

std::string Statement::columnText(int i) const {
  const auto* text = sqlite3_column_text(stmt_, i);
  if (text == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, i)));
}

std::string Statement::columnBlob(int i) const {
  const void* blob = sqlite3_column_blob(stmt_, i);
  if (blob == nullptr) return {};
  return std::string(static_cast<const char*>(blob),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, i)));
}

Connection::~Connection() { sqlite3_close_v2(db_); }

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
  }
  return *this;
}

Result<Connection> Connection::open(const std::string& path) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status status = sqliteError(db, rc, "opening history file " + path);
    sqlite3_close_v2(db);
    return status;
  }
  sqlite3_extended_result_codes(db, 1);
  // The connection that closes last leaves the WAL as it is rather than checkpointing it into
  // the database file: that checkpoint's fsyncs took 3-9 ms at the end of every ringmasterctl
  // command (more than the rest of a short job's history). The next connection goes on with the
  // WAL, which the checkpoints keep bounded as ever (WalCheckpointer). What it holds is
  // committed, as durable as synchronous=NORMAL makes any commit, and the history is a copy of
  // the agents' journals: a row lost with the OS is pulled again from the stored cursor.
  sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  return Connection(db);
}

Status Connection::exec(const char* sql, std::string_view what) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return Status::ok();
  std::string message(what);
  message += ": ";
  message += err != nullptr ? err : sqlite3_errstr(rc);
  message += " (sqlite code " + std::to_string(rc) + ")";
  sqlite3_free(err);
  return classified(db_, rc, std::move(message));
}

}  // namespace ringmaster::store
