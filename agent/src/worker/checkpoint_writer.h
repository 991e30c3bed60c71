#pragma once
// Writes a rank's checkpoints on a thread of its own, so that training goes on while the file is
// serialized, checksummed and fsynced (about 45 ms for the demo's 10 MB on a local disk; seconds
// on a network file system): the training thread only copies its state. One checkpoint at a
// time: start() first waits for the one before, so one copy of the state is held besides the
// trainer's own.
//
// A checkpoint counts (its metric line is printed; a restart may resume from it) once it is on
// disk: takeWritten() hands each written one over once, for the training thread to report.
//
// Thread-safety: start(), wait() and takeWritten() are for one thread (the training thread); the
// writer thread only runs train::saveCheckpoint.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ringmaster/train/checkpoint.h"
#include "ringmaster/util/result.h"

namespace ringmaster::agent {

class CheckpointWriter {
 public:
  using Clock = std::chrono::steady_clock;

  struct Written {
    uint64_t step = 0;
    double blocked_s = 0;  // training stood still: waiting for the previous one, copying state
    double write_s = 0;    // on the writer thread
  };

  // Checkpoints go to `dir`, keeping the `keep` newest (0: all), as train::saveCheckpoint.
  CheckpointWriter(std::string dir, size_t keep);
  ~CheckpointWriter();  // waits for the checkpoint being written
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // The training loop's checkpoint: waits for the one before (one copy of the state at a time),
  // takes the state from `snapshot()` (a train::CheckpointState, or a Result of one) and hands
  // it over; the time all this took is the checkpoint's blocked time.
  template <typename Snapshot>
  Status save(Snapshot&& snapshot) {
    const Clock::time_point began = Clock::now();
    RM_RETURN_IF_ERROR(wait());
    RM_ASSIGN_OR_RETURN(train::CheckpointState state, Result<train::CheckpointState>(snapshot()));
    return start(std::move(state), began);
  }
  // Hands `state` to the writer thread; `began` is when the training thread stopped for it (its
  // blocked time ends now). Returns the error of an earlier write instead, if one failed.
  // REQUIRES: wait() returned since the last start() (the caller frees memory before copying).
  Status start(train::CheckpointState state, Clock::time_point began);
  // Waits until nothing is being written; the first failed write's error, if any.
  Status wait();
  // The checkpoints written since the last call, oldest first.
  std::vector<Written> takeWritten();

 private:
  void run();

  const std::string dir_;
  const size_t keep_;
  std::mutex mutex_;
  std::condition_variable changed_;
  struct Pending {
    train::CheckpointState state;
    double blocked_s = 0;
  };

  std::optional<Pending> next_;   // GUARDED_BY(mutex_)
  bool writing_ = false;          // GUARDED_BY(mutex_): next_ given, its write not done
  bool stop_ = false;             // GUARDED_BY(mutex_)
  Status error_;                  // GUARDED_BY(mutex_)
  std::vector<Written> written_;  // GUARDED_BY(mutex_)
  std::thread thread_;
};

// Prints a metric line for each checkpoint `writer` wrote since the last call, at its step:
// checkpoint = 1, and checkpoint_seconds = how long training stood still for it (what a
// checkpoint costs the job, which the dashboard's checkpoint-interval advice weighs).
void reportWritten(CheckpointWriter& writer, std::FILE* out);

}  // namespace ringmaster::agent
