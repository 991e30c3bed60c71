#include "charts/chart_drawing_thread.h"

#include <pthread.h>

#include <QCoreApplication>
#include <QTimer>

namespace ringmaster::gui {

ChartDrawingThread& ChartDrawingThread::get() {
  static ChartDrawingThread thread;  // joined at exit, after the drawing under way
  return thread;
}

ChartDrawingThread::~ChartDrawingThread() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void ChartDrawingThread::submit(Job job) {
  if (!thread_.joinable()) {
    thread_ = std::thread([this] { run(); });
    pthread_setname_np(thread_.native_handle(), "chart-drawing");  // in top -H and perf
  }
  if (!collector_) {  // the application's: gone with it
    collector_ = new QTimer(QCoreApplication::instance());
    collector_->setInterval(2);
    collector_->setObjectName("chart-drawing-collector");
    QObject::connect(collector_, &QTimer::timeout, [this] { collect(); });
    QObject::connect(collector_, &QObject::destroyed, [this] { collector_ = nullptr; });
  }
  {
    std::lock_guard lock(mutex_);
    queued_.push_back(std::move(job));
  }
  wake_.notify_one();
  ++in_flight_;
  collector_->start();
}

void ChartDrawingThread::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queued_.empty(); });
    if (stopping_) return;
    Job job = std::move(queued_.front());
    queued_.pop_front();
    lock.unlock();
    if (job.wanted()) job.work();
    lock.lock();
    finished_.push_back(std::move(job));
  }
}

void ChartDrawingThread::collect() {
  std::vector<Job> finished;
  {
    std::lock_guard lock(mutex_);
    finished.swap(finished_);
  }
  for (Job& job : finished) {
    --in_flight_;
    job.done();
  }
  if (in_flight_ == 0 && collector_) collector_->stop();
}

}  // namespace ringmaster::gui
