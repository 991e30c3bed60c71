#pragma once
// TaskThread: one thread that runs the tasks posted to it, one at a time in the order posted,
// and optionally a tick every so often between them. For work that may take seconds (an agent
// slow to answer, a history read) and must hold up only what shares its thread.
//
// Thread safety: post() may be called from any thread; tasks and the tick run on the thread.
// Whatever they use must outlive the TaskThread: declare it last, so that it joins first.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace ringmaster {

class TaskThread {
 public:
  using Task = std::function<void()>;

  // `tick`, when given, runs every `tick_every`, after the task in progress.
  explicit TaskThread(Task tick = {},
                      std::chrono::milliseconds tick_every = std::chrono::milliseconds(100));
  // Lets the task in progress finish, drops those still queued, and joins.
  ~TaskThread();
  TaskThread(const TaskThread&) = delete;
  TaskThread& operator=(const TaskThread&) = delete;

  void post(Task task);

 private:
  void run();

  const Task tick_;
  const std::chrono::milliseconds tick_every_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Task> tasks_;  // GUARDED_BY(mutex_)
  bool stopping_ = false;   // GUARDED_BY(mutex_)
  std::thread thread_;      // last: it starts once the members above exist
};

}  // namespace ringmaster
