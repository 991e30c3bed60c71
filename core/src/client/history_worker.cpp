#include "client/history_worker.h"

#include <utility>

namespace ringmaster::client {

Result<std::unique_ptr<HistoryWorker>> HistoryWorker::open(const std::string& db_file, Task tick,
                                                           std::chrono::milliseconds tick_every) {
  RM_ASSIGN_OR_RETURN(std::unique_ptr<store::Reader> history, store::Reader::open(db_file));
  return std::unique_ptr<HistoryWorker>(
      new HistoryWorker(std::move(history), std::move(tick), tick_every));
}

HistoryWorker::HistoryWorker(std::unique_ptr<store::Reader> history, Task tick,
                             std::chrono::milliseconds tick_every)
    : history_(std::move(history)),
      thread_(tick ? TaskThread::Task([this, tick = std::move(tick)] { tick(*history_); })
                   : TaskThread::Task(),
              tick_every) {}

HistoryWorker::~HistoryWorker() = default;

void HistoryWorker::post(Task task) {
  thread_.post([this, task = std::move(task)] { task(*history_); });
}

}  // namespace ringmaster::client
