#pragma once
// The one thread that draws charts' lines off the GUI thread (ChartLinesItem), shared by every
// chart: charts take turns, since the cores are the ranks' too. Work goes to it and comes back
// through a std::mutex, and the GUI thread collects what is done on a 2 ms timer that runs only
// while some work is out: Qt's own cross-thread queues (QThreadPool, queued invocations) hand
// over through futexes ThreadSanitizer cannot see, and every hand-off through them read as a race.
//
// Thread-safety: submit() and inFlight() on the GUI thread only.

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

class QTimer;

namespace ringmaster::gui {

class ChartDrawingThread {
 public:
  struct Job {
    std::function<bool()> wanted;  // drawing thread: false skips the work (a newer frame came)
    std::function<void()> work;    // drawing thread
    std::function<void()> done;    // GUI thread, after `work` (or instead, when skipped)
  };

  static ChartDrawingThread& get();
  ~ChartDrawingThread();

  void submit(Job job);
  // Jobs submitted whose `done` has not run yet.
  int inFlight() const { return in_flight_; }

 private:
  ChartDrawingThread() = default;
  void run();
  void collect();  // GUI thread: runs the `done` of every finished job

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> queued_;     // guarded by mutex_
  std::vector<Job> finished_;  // guarded by mutex_
  bool stopping_ = false;      // guarded by mutex_
  std::thread thread_;
  QTimer* collector_ = nullptr;  // GUI thread
  int in_flight_ = 0;            // GUI thread
};

}  // namespace ringmaster::gui
