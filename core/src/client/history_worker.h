#pragma once
// HistoryWorker: a thread of a ClusterSession with a read connection to the history of its own,
// for what may take seconds: reading the history for the views (a job's snapshot, the list of
// runs) on one, following the jobs on Slurm (squeue and their job directories, over ssh when the
// cluster is remote) on another. There they hold up only what shares their thread, never the
// session's watch of its agents. Writes go through the process's one writer.
//
// Thread safety: post() may be called from any thread; tasks and the tick run on the worker's
// thread, which owns the connection.

#include <chrono>
#include <functional>
#include <memory>

#include "ringmaster/store/store.h"
#include "ringmaster/util/task_thread.h"

namespace ringmaster::client {

class HistoryWorker {
 public:
  using Task = std::function<void(store::Reader& history)>;

  // `tick`, when given, runs on the worker's thread every `tick_every`, after the tasks.
  static Result<std::unique_ptr<HistoryWorker>> open(
      const std::string& db_file, Task tick = {},
      std::chrono::milliseconds tick_every = std::chrono::milliseconds(100));
  // Lets the task in progress finish, drops those still queued, and joins.
  ~HistoryWorker();
  HistoryWorker(const HistoryWorker&) = delete;
  HistoryWorker& operator=(const HistoryWorker&) = delete;

  void post(Task task);

 private:
  HistoryWorker(std::unique_ptr<store::Reader> history, Task tick,
                std::chrono::milliseconds tick_every);

  std::unique_ptr<store::Reader> history_;  // the worker thread's
  TaskThread thread_;                       // last: joined before history_ goes
};

}  // namespace ringmaster::client
