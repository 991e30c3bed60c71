#include "ringmaster/store/batch_writer.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "store/database.h"
#include "store/wal_checkpointer.h"

namespace ringmaster::store {
namespace {

// Journal records of one agent, or (when `write` is set) another write of the history, run on
// the writer's own connection in queue order.
struct Batch {
  std::string agent;
  std::string journal_id;
  std::vector<proto::JournalRecord> records;
  uint64_t next_seq = 0;
  std::function<Status(Writer&)> write{};
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// BatchWriter: one background thread owns the writing connection. SQLite allows one writer per
// file at a time; funnelling every insert through one thread keeps callers (network and GUI
// threads) from ever waiting on the file lock, and lets it commit many batches per transaction.

class BatchWriter::Impl {
  using SpentRecords = std::vector<std::vector<proto::JournalRecord>>;

 public:
  // The process's writer of the file, opened by the first caller and shared by the others.
  static Result<std::shared_ptr<Impl>> openShared(const std::string& path, size_t max_queued) {
    // By historyFileKey(); an entry outlives its writer only until the file's next open.
    static std::mutex mutex;
    static std::map<std::string, std::weak_ptr<Impl>> writers;  // GUARDED_BY(mutex)
    std::lock_guard<std::mutex> lock(mutex);
    std::weak_ptr<Impl>& entry = writers[historyFileKey(path)];
    if (std::shared_ptr<Impl> shared = entry.lock()) return shared;
    RM_ASSIGN_OR_RETURN(std::unique_ptr<Writer> store, Writer::open(path));
    RM_ASSIGN_OR_RETURN(std::unique_ptr<WalCheckpointer> checkpointer,
                        WalCheckpointer::start(path, store->db_->connection()));
    auto impl = std::make_shared<Impl>(std::move(store), std::move(checkpointer), max_queued);
    entry = impl;
    return impl;
  }

  Impl(std::unique_ptr<Writer> store, std::unique_ptr<WalCheckpointer> checkpointer,
       size_t max_queued)
      : store_(std::move(store)),
        checkpointer_(std::move(checkpointer)),
        max_queued_(std::max<size_t>(max_queued, 1)) {
    thread_ = std::thread([this] { run(); });
  }

  ~Impl() {
    (void)flush();  // its owner's last flush() reported any failure
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  // `take_back_spent`: free the committed batches' records here, on the caller's thread (see
  // spent_); false for callers that did not parse them (enqueueWrite, from any thread).
  void enqueue(Batch batch, bool take_back_spent) {
    SpentRecords spent;  // destroyed last, after the lock is released
    std::unique_lock<std::mutex> lock(mu_);
    // Backpressure: wait for room. The writer always makes progress (SQLite's busy timeout
    // bounds each transaction), and stopping_ ends the wait.
    cv_.wait(lock, [&] { return queue_.size() < max_queued_ || stopping_; });
    if (stopping_) return;
    queue_.push_back(std::move(batch));
    ++queued_total_;
    if (take_back_spent) spent.swap(spent_);
    lock.unlock();
    cv_.notify_all();
  }

  Status flush() {
    SpentRecords spent;  // destroyed last, after the lock is released
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return (queue_.empty() && in_flight_ == 0) || stopping_; });
    spent.swap(spent_);
    return std::exchange(first_error_, Status::ok());
  }

  void waitWritten() {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t target = queued_total_;
    cv_.wait(lock, [&] { return written_total_ >= target || stopping_; });
  }

 private:
  void run() {
    std::vector<Batch> taken;
    std::vector<JournalChunk> chunks;
    SpentRecords returned;
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything is written
      // Coalesce everything queued into one transaction: one commit (and one fsync of the WAL
      // at checkpoints) for many small batches.
      taken.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
      queue_.clear();
      in_flight_ = taken.size();
      const bool drop = !first_error_.isOk();
      lock.unlock();
      cv_.notify_all();  // room in the queue

      // Runs of journal batches go in one transaction each; other writes in between keep their
      // place in the queue.
      Status status;
      for (size_t i = 0; i < taken.size() && !drop && status.isOk();) {
        if (taken[i].write) {
          status = taken[i++].write(*store_);
          continue;
        }
        chunks.clear();
        for (; i < taken.size() && !taken[i].write; ++i) {
          const Batch& b = taken[i];
          chunks.push_back({&b.agent, &b.journal_id, &b.records, b.next_seq});
        }
        status = store_->db_->applyChunks(chunks.data(), chunks.size());
      }
      const size_t committed = taken.size();
      for (Batch& b : taken) {
        if (!b.records.empty()) returned.push_back(std::move(b.records));
      }
      taken.clear();
      checkpointer_->throttle();  // the WAL stays bounded

      lock.lock();
      for (auto& records : returned) spent_.push_back(std::move(records));
      returned.clear();
      if (!status.isOk() && first_error_.isOk()) first_error_ = std::move(status);
      in_flight_ = 0;
      written_total_ += committed;
      cv_.notify_all();
    }
  }

  std::unique_ptr<Writer> store_;  // used by thread_ only
  // Checkpoints store_'s WAL beside thread_; declared after store_, so it goes first.
  std::unique_ptr<WalCheckpointer> checkpointer_;
  const size_t max_queued_;
  std::mutex mu_;
  std::condition_variable cv_;  // queue changed, batches committed, or stopping
  std::deque<Batch> queue_;     // GUARDED_BY(mu_)
  size_t in_flight_ = 0;        // GUARDED_BY(mu_): batches being committed
  uint64_t queued_total_ = 0;   // GUARDED_BY(mu_): batches ever queued
  uint64_t written_total_ = 0;  // GUARDED_BY(mu_): batches ever committed or dropped
  Status first_error_;          // GUARDED_BY(mu_): since the last flush()
  // Committed batches' records, freed by the next enqueue() of records or flush(), on the thread
  // that parsed them. Freed on this thread, their millions of small blocks each took the lock of
  // that thread's malloc arena from under it: in bench_metrics_pipeline that cost more than the
  // inserts. It holds no more than the queue did: each enqueue() empties it.
  SpentRecords spent_;     // GUARDED_BY(mu_)
  bool stopping_ = false;  // GUARDED_BY(mu_)
  std::thread thread_;
};

BatchWriter::BatchWriter(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
// The last handle's Impl flushes and joins; the others wait only for what is queued so far.
BatchWriter::~BatchWriter() { impl_->waitWritten(); }

Result<std::unique_ptr<BatchWriter>> BatchWriter::open(const std::string& path,
                                                       size_t max_queued_batches) {
  RM_ASSIGN_OR_RETURN(std::shared_ptr<Impl> impl, Impl::openShared(path, max_queued_batches));
  return std::unique_ptr<BatchWriter>(new BatchWriter(std::move(impl)));
}

void BatchWriter::enqueue(std::string agent, std::string journal_id,
                          std::vector<proto::JournalRecord> records, uint64_t next_seq) {
  impl_->enqueue({std::move(agent), std::move(journal_id), std::move(records), next_seq}, true);
}

void BatchWriter::enqueueWrite(std::function<Status(Writer&)> write) {
  Batch batch;
  batch.write = std::move(write);
  impl_->enqueue(std::move(batch), false);
}

Status BatchWriter::flush() { return impl_->flush(); }
void BatchWriter::waitWritten() { impl_->waitWritten(); }

}  // namespace ringmaster::store
