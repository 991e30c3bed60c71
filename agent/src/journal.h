#pragma once
// The agent's append-only journal: every lifecycle event, metric sample and health sample, each
// with a dense agent-wide sequence number. Clients read it from a cursor; it survives restarts.
//
// File format (DIR/journal.log): frames (protocol/journal_frame.h), each a serialized
// proto::JournalRecord with its length and CRC-32. DIR/journal.id names this journal, so a client
// can tell a wiped state dir from a continued one.
//
// Opening checks every frame. A bad frame with nothing intact after it is a torn tail (a crash
// mid-write) and is cut off. A bad frame with intact records after it is damage: the file is kept
// aside as journal.log.damaged-<time>, the journal is rewritten with every intact record under
// its own seq and a JournalDamage record in place of each lost one, one more JournalDamage is
// appended, and the journal gets a new id (a new epoch), so that clients read it again: the
// history stores each record once, so nothing is doubled. report() says what was found.
//
// flush() writes and fdatasyncs what was appended since the last one: records are on disk before
// any reader sees them. The agent flushes when flushDueAt() says: at once for a lifecycle record
// (a rank that exited, a job's outcome), but metric and health samples may wait kSampleDelay for
// the ones after them, so that ranks reporting every step cost a sync per group of lines, not
// one per line (each fdatasync is a disk flush; on a VM, an exit to the hypervisor too).
//
// Thread-safety: none; the agent's main thread owns it.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ringmaster/protocol/ringmaster.pb.h"
#include "ringmaster/util/result.h"

namespace ringmaster::agent {

class Journal {
 public:
  static Result<std::unique_ptr<Journal>> open(const std::string& dir);
  ~Journal();

  const std::string& id() const { return id_; }
  uint64_t lastSeq() const { return last_seq_; }
  // The newest record on disk, what readers may see (lastSeq() once flushed).
  uint64_t flushedSeq() const { return flushed_seq_; }
  // What opening found wrong and did about it (empty when the file was intact).
  const std::string& report() const { return report_; }

  // Stamps the next seq (and the time, when unset) on `record` and appends it. The record is in
  // the OS (visible to readers, surviving an agent crash) after the next flush().
  Result<uint64_t> append(proto::JournalRecord& record);
  Status flush();
  // Appended records not flushed yet.
  bool unflushed() const { return !pending_.empty(); }
  // When the records appended so far should be flushed: now for any but metric and health
  // samples, else kSampleDelay after the oldest unflushed one; time_point::max() when none is.
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kSampleDelay{50};
  Clock::time_point flushDueAt() const;
  // Why the last flush failed ("journal write failed: No space left on device"); empty once one
  // succeeds. Appended records wait in memory meanwhile (clients see none of them).
  const std::string& writeError() const { return write_error_; }

  // Serialized records with seq >= from_seq, at most `max_records` and about `max_bytes`
  // (always at least one when any exists).
  Status read(uint64_t from_seq, size_t max_records, size_t max_bytes,
              std::vector<std::string>* out);

 private:
  Journal(std::string dir, std::string id, int fd);
  Status scanExisting();
  // Rewrites a damaged journal (see above) and reopens it.
  Status repair();
  uint64_t offsetForSeq(uint64_t seq);

  static constexpr uint64_t kIndexStride = 1024;  // one file offset remembered per 1024 records

  std::string dir_;
  std::string id_;
  int fd_;
  std::string report_;
  std::string write_error_;
  uint64_t last_seq_ = 0;
  uint64_t flushed_seq_ = 0;
  uint64_t file_size_ = 0;             // bytes in the file (flushed)
  std::string pending_;                // appended, not yet written
  Clock::time_point pending_since_{};  // when the oldest of pending_ was appended
  bool pending_urgent_ = false;        // pending_ holds a record other than a sample
  std::vector<uint64_t> index_;        // index_[i] = offset of record seq i * kIndexStride + 1
  // Where the previous read stopped, so sequential readers never rescan.
  uint64_t hint_seq_ = 0;
  uint64_t hint_offset_ = 0;
};

// Calls `visit` with every record of `journal` that parses, oldest first: what the agent
// rebuilds from its journal at start.
void forEachRecord(Journal& journal, const std::function<void(const proto::JournalRecord&)>& visit);

}  // namespace ringmaster::agent
