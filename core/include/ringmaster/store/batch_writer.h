#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ringmaster/store/writer.h"

namespace ringmaster::store {

// The one writer thread: callers enqueue batches (non-blocking up to a bounded queue, then they
// wait = backpressure); the thread commits each batch (or several coalesced into one transaction)
// as Writer::applyJournal does. flush() waits until everything enqueued is committed and returns
// the first error since the previous flush(). The records of committed batches are freed by the
// next enqueue() or flush(), on the caller's thread: the thread that parsed them.
//
// After an error the writer drops every later batch until flush() has reported it: a later batch
// would advance a cursor past the records of the failed one. The caller then pulls again from
// Reader::cursor(). Thread-safe: any thread may enqueue() and flush().
class BatchWriter {
 public:
  // The process's writer of the file: a second open() of a file that has one (two sessions in
  // one process) returns another handle to the same thread and connection, and its
  // max_queued_batches is ignored. flush() then reports a failure to whichever handle asks first.
  static Result<std::unique_ptr<BatchWriter>> open(const std::string& path,
                                                   size_t max_queued_batches = 8);
  void enqueue(std::string agent, std::string journal_id, std::vector<proto::JournalRecord> records,
               uint64_t next_seq);
  // Any other write of the history (an agent's inventory, a submission), run on the writer's
  // connection after what is queued before it: a client process has one writer. Its failure is
  // reported by the next flush().
  void enqueueWrite(std::function<Status(Writer&)> write);
  // Waits until everything queued so far is committed, and returns (and clears) the first
  // failure since the last flush.
  Status flush();
  // Waits until everything queued before the call is committed (or dropped after a failure),
  // while other threads may go on queueing; the failure is left for flush(). For readers on
  // other connections that must see what was queued before them.
  void waitWritten();
  // Waits until what was queued is written; the last handle also flushes and joins.
  ~BatchWriter();
  BatchWriter(const BatchWriter&) = delete;
  BatchWriter& operator=(const BatchWriter&) = delete;

 private:
  class Impl;
  explicit BatchWriter(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace ringmaster::store
