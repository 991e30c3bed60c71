#pragma once
// WalCheckpointer: the checkpoints of the history writer's WAL, run on a thread of their own.
// Private to the store.
//
// Why: SQLite's automatic checkpoint runs inside the COMMIT that takes the WAL past 1000 pages.
// The writer thread then copies the WAL into the database file and waits for its two fsyncs
// (synchronous=NORMAL) before it can insert again: a quarter of its time in a bulk sync. Here
// the same checkpoint, at the same WAL size and with the same synchronous setting, runs on a
// second connection while the writer goes on inserting (WAL allows one checkpointer beside one
// writer). The writer waits for a checkpoint only when the WAL has reached kMaxWalPages (the
// checkpoints do not keep up): then it lets one finish, so that its next transaction starts the
// WAL over, and the WAL stays bounded as before.
//
// Thread-safe: onCommit() and throttle() are called on the writer's thread, run() is the
// checkpointer's own.

#include <sqlite3.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "ringmaster/util/result.h"
#include "store/sqlite_util.h"

namespace ringmaster::store {

class WalCheckpointer {
 public:
  static constexpr int kCheckpointPages = 1000;  // SQLite's default wal_autocheckpoint
  static constexpr int kMaxWalPages = 4 * kCheckpointPages;

  // Opens a second connection to `path` and takes over the checkpoints of `writer`, a connection
  // to the same file that must outlive this object. Until then SQLite's own ones go on.
  static Result<std::unique_ptr<WalCheckpointer>> start(const std::string& path, sqlite3* writer);
  // Hands the checkpoints back to SQLite (wal_autocheckpoint) and joins the thread.
  ~WalCheckpointer();
  WalCheckpointer(const WalCheckpointer&) = delete;
  WalCheckpointer& operator=(const WalCheckpointer&) = delete;

  // Called on the writer's thread between transactions: while the WAL is at kMaxWalPages or
  // more, waits until a checkpoint that started after it got there has finished.
  void throttle();

  // Checkpoints run so far (finished, failed or busy), for tests.
  uint64_t checkpoints() const;

 private:
  WalCheckpointer(Connection db, sqlite3* writer);
  // sqlite3_wal_hook: called on the writer's thread after each commit, its locks released.
  static int onCommit(void* self, sqlite3* db, const char* schema, int wal_pages);
  void run();

  Connection db_;  // used by thread_ only
  sqlite3* const writer_;
  mutable std::mutex mu_;
  std::condition_variable cv_;  // a checkpoint was asked for or finished, or stopping
  int wal_pages_ = 0;           // GUARDED_BY(mu_): the WAL's size after the newest commit
  uint64_t requested_ = 0;      // GUARDED_BY(mu_): commits that asked for a checkpoint
  uint64_t covered_ = 0;        // GUARDED_BY(mu_): requests that a finished checkpoint covered
  uint64_t checkpoints_ = 0;    // GUARDED_BY(mu_)
  bool stopping_ = false;       // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace ringmaster::store
