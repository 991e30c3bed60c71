#include "client/history_worker.h"

#include <utility>

namespace ringmaster::client {

Result<std::unique_ptr<HistoryWorker>> HistoryWorker::open(const std::string& db_file, Task tick,
                                                           std::chrono::milliseconds tick_every) {
  RM_ASSIGN_OR_RETURN(std::unique_ptr<store::Store> history, store::Store::open(db_file));
  return std::unique_ptr<HistoryWorker>(
      new HistoryWorker(std::move(history), std::move(tick), tick_every));
}

HistoryWorker::HistoryWorker(std::unique_ptr<store::Store> history, Task tick,
                             std::chrono::milliseconds tick_every)
    : history_(std::move(history)),
      tick_(std::move(tick)),
      tick_every_(tick_every),
      thread_([this] { run(); }) {}

HistoryWorker::~HistoryWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void HistoryWorker::post(Task task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void HistoryWorker::run() {
  auto next_tick = std::chrono::steady_clock::now();
  while (true) {
    std::deque<Task> tasks;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      const auto ready = [this] { return stopping_ || !tasks_.empty(); };
      if (tick_) {
        wake_.wait_until(lock, next_tick, ready);
      } else {
        wake_.wait(lock, ready);
      }
      if (stopping_) return;
      tasks.swap(tasks_);
    }
    for (auto& task : tasks) task(*history_);
    if (tick_ && std::chrono::steady_clock::now() >= next_tick) {
      tick_(*history_);
      next_tick = std::chrono::steady_clock::now() + tick_every_;
    }
  }
}

}  // namespace ringmaster::client
