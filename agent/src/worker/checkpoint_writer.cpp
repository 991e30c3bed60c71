#include "checkpoint_writer.h"

#include <utility>

#include "ringmaster/metrics/line_parser.h"
#include "worker/metric_line.h"

namespace ringmaster::agent {

CheckpointWriter::CheckpointWriter(std::string dir, size_t keep)
    : dir_(std::move(dir)), keep_(keep), thread_([this] { run(); }) {}

CheckpointWriter::~CheckpointWriter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();  // run() writes what it was given before it returns
}

Status CheckpointWriter::start(train::CheckpointState state, Clock::time_point began) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!error_.isOk()) return error_;
  next_ = Pending{std::move(state), std::chrono::duration<double>(Clock::now() - began).count()};
  writing_ = true;
  changed_.notify_all();
  return Status::ok();
}

Status CheckpointWriter::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return !writing_; });
  return error_;
}

std::vector<CheckpointWriter::Written> CheckpointWriter::takeWritten() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(written_, {});
}

void CheckpointWriter::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [this] { return next_.has_value() || stop_; });
    if (!next_) return;  // stopped with nothing to write
    const Pending pending = std::move(*next_);
    next_.reset();
    lock.unlock();
    const Clock::time_point begin = Clock::now();
    Status saved = train::saveCheckpoint(dir_, pending.state, keep_);
    const double write_s = std::chrono::duration<double>(Clock::now() - begin).count();
    lock.lock();
    if (saved.isOk()) {
      written_.push_back({pending.state.step, pending.blocked_s, write_s});
    } else if (error_.isOk()) {
      error_ = std::move(saved);
    }
    writing_ = false;
    changed_.notify_all();
  }
}

void reportWritten(CheckpointWriter& writer, std::FILE* out) {
  for (const CheckpointWriter::Written& written : writer.takeWritten()) {
    MetricLine(written.step)
        .add(metrics::kCheckpointMetric, 1)
        .add(metrics::kCheckpointSecondsMetric, written.blocked_s)
        .print(out);
  }
}

}  // namespace ringmaster::agent
