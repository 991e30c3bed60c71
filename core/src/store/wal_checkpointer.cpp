#include "store/wal_checkpointer.h"

#include <utility>

namespace ringmaster::store {

Result<std::unique_ptr<WalCheckpointer>> WalCheckpointer::start(const std::string& path,
                                                                sqlite3* writer) {
  RM_ASSIGN_OR_RETURN(Connection db, Connection::open(path));
  // The checkpointer's connection decides how the checkpoint syncs: as the writer's did.
  RM_RETURN_IF_ERROR(
      db.exec("PRAGMA synchronous=NORMAL", "configuring the checkpoints of " + path));
  return std::unique_ptr<WalCheckpointer>(new WalCheckpointer(std::move(db), writer));
}

WalCheckpointer::WalCheckpointer(Connection db, sqlite3* writer)
    : db_(std::move(db)), writer_(writer) {
  thread_ = std::thread([this] { run(); });
  // Replaces SQLite's automatic checkpoint, which is a WAL hook itself.
  sqlite3_wal_hook(writer_, &WalCheckpointer::onCommit, this);
}

WalCheckpointer::~WalCheckpointer() {
  sqlite3_wal_autocheckpoint(writer_, kCheckpointPages);  // SQLite's own again
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

int WalCheckpointer::onCommit(void* self, sqlite3*, const char*, int wal_pages) {
  auto* c = static_cast<WalCheckpointer*>(self);
  {
    std::lock_guard<std::mutex> lock(c->mu_);
    c->wal_pages_ = wal_pages;
    if (wal_pages < kCheckpointPages) return SQLITE_OK;
    ++c->requested_;
  }
  c->cv_.notify_all();
  return SQLITE_OK;
}

void WalCheckpointer::throttle() {
  std::unique_lock<std::mutex> lock(mu_);
  if (wal_pages_ < kMaxWalPages) return;
  const uint64_t target = requested_;
  cv_.wait(lock, [&] { return covered_ >= target || stopping_; });
}

uint64_t WalCheckpointer::checkpoints() const {
  std::lock_guard<std::mutex> lock(mu_);
  return checkpoints_;
}

void WalCheckpointer::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || requested_ > covered_; });
    if (stopping_) return;
    const uint64_t target = requested_;
    lock.unlock();
    // PASSIVE, as SQLite's automatic checkpoint: it copies what no reader still needs and never
    // waits for a lock. A failure (busy: another process checkpoints; I/O) only leaves the WAL
    // longer, as it does for the automatic one; the next commit past the threshold asks again.
    (void)sqlite3_wal_checkpoint_v2(db_.get(), nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr,
                                    nullptr);
    lock.lock();
    covered_ = target;
    ++checkpoints_;
    cv_.notify_all();
  }
}

}  // namespace ringmaster::store
