#include "ringmaster/util/task_thread.h"

#include <utility>

namespace ringmaster {

TaskThread::TaskThread(Task tick, std::chrono::milliseconds tick_every)
    : tick_(std::move(tick)), tick_every_(tick_every), thread_([this] { run(); }) {}

TaskThread::~TaskThread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void TaskThread::post(Task task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void TaskThread::run() {
  auto next_tick = std::chrono::steady_clock::now();
  while (true) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      const auto ready = [this] { return stopping_ || !tasks_.empty(); };
      if (tick_) {
        wake_.wait_until(lock, next_tick, ready);
      } else {
        wake_.wait(lock, ready);
      }
      if (stopping_) return;
      if (!tasks_.empty()) {
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
    }
    if (task) task();
    if (tick_ && std::chrono::steady_clock::now() >= next_tick) {
      tick_();
      next_tick = std::chrono::steady_clock::now() + tick_every_;
    }
  }
}

}  // namespace ringmaster
