#include "gradient_sync.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace ringmaster::agent {
namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

GradientSync::GradientSync(comm::Communicator* communicator, comm::ReduceOp op, size_t bucket_bytes,
                           Overlap overlap)
    : communicator_(communicator),
      op_(op),
      bucket_floats_(std::max<size_t>(1, bucket_bytes / sizeof(float))),
      overlap_(overlap),
      overlapping_(overlap != Overlap::kNever),
      thread_([this] { run(); }) {}

GradientSync::~GradientSync() { stop(); }

void GradientSync::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    in_flight_ -= queue_.size();
    queue_.clear();
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GradientSync::submit(float* begin, float* end) {
  if (begin == end) return;
  covered_begin_ = covered_begin_ ? std::min(covered_begin_, begin) : begin;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.emplace_back(begin, static_cast<size_t>(end - begin));
    ++in_flight_;
  }
  changed_.notify_all();
}

void GradientSync::onLayerReady(float* data, size_t count) {
  if (!overlapping_) return;
  if (pending_begin_ && data + count == pending_begin_) {
    pending_begin_ = data;  // backward walks down the buffer: extend the bucket
  } else {
    submit(pending_begin_, pending_end_);
    pending_begin_ = data;
    pending_end_ = data + count;
  }
  // The step's first bucket is sent at 1 MB (PyTorch DDP's first bucket too): the last layers'
  // gradients travel while backward computes the first, usually the largest. Fusing up to 4 MB
  // first sent a 784-1024-512-10 MLP's whole 5.3 MB after backward, nothing overlapped.
  const size_t cap = covered_begin_ ? bucket_floats_ : std::min(bucket_floats_, kFirstBucketFloats);
  if (static_cast<size_t>(pending_end_ - pending_begin_) >= cap) {
    submit(pending_begin_, pending_end_);
    pending_begin_ = pending_end_ = nullptr;
  }
}

Status GradientSync::finish(std::span<float> grads) {
  Status status = overlapping_ ? waitForBuckets(grads) : reduceInline(grads);
  const double step_end = now();
  // A step counts from the end of the last one: the update, forward, backward and reduction.
  if (status.isOk() && overlap_ == Overlap::kMeasure && choice_.empty() && steps_ > 0) {
    status = measure(step_end - last_step_end_);
  }
  last_step_end_ = step_end;
  ++steps_;
  if (overlap_ == Overlap::kMeasure && choice_.empty()) {
    // The coming step's turn: overlapped during the warm-up, then every other turn.
    overlapping_ = steps_ < kWarmupSteps || ((steps_ - kWarmupSteps) / kTurnSteps) % 2 == 0;
  }
  return status;
}

Status GradientSync::waitForBuckets(std::span<float> grads) {
  float* const begin = grads.data();
  float* const end = grads.data() + grads.size();
  submit(pending_begin_, pending_end_);
  pending_begin_ = pending_end_ = nullptr;
  // Layers report from the end of the buffer down, so what the hooks did not cover (all of it
  // without hooks) is the front: one more bucket.
  submit(begin, covered_begin_ ? covered_begin_ : end);
  const double wait_start = now();
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return in_flight_ == 0; });
  last_wait_s_ = now() - wait_start;
  last_comm_s_ = comm_s_;
  comm_s_ = 0;
  covered_begin_ = nullptr;
  Status error = error_;
  error_ = Status::ok();
  return error;
}

Status GradientSync::reduceInline(std::span<float> grads) {
  const double start = now();
  Status status = communicator_->allreduce(grads.data(), grads.size(), op_);
  last_comm_s_ = last_wait_s_ = now() - start;
  return status;
}

Status GradientSync::measure(double step_seconds) {
  if (steps_ < kWarmupSteps) return Status::ok();
  trial_[overlapping_ ? 0 : 1].push_back(step_seconds);
  if (steps_ + 1 < kTrialSteps) return Status::ok();
  // Averaged over the ranks, so that every rank chooses alike (each one's steps are the job's
  // anyway: they wait for each other).
  float medians[2];
  for (int mode = 0; mode < 2; ++mode) {
    std::vector<double>& steps = trial_[mode];
    std::nth_element(steps.begin(), steps.begin() + steps.size() / 2, steps.end());
    medians[mode] = static_cast<float>(steps[steps.size() / 2]);
  }
  RM_RETURN_IF_ERROR(communicator_->allreduce(medians, 2, comm::ReduceOp::kAverage));
  const bool overlap = medians[0] <= medians[1];
  char line[200];
  std::snprintf(line, sizeof(line),
                "gradients are averaged %s: a step took %.2f ms overlapped and %.2f ms after "
                "backward (medians of %zu steps each, over the ranks)",
                overlap ? "while backward runs" : "after backward", medians[0] * 1e3,
                medians[1] * 1e3, trial_[0].size());
  choice_ = line;
  overlapping_ = overlap;
  return Status::ok();
}

void GradientSync::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;  // stop() dropped the queue
    std::span<float> bucket = queue_.front();
    queue_.pop_front();
    const bool skip = !error_.isOk();  // after a failure the step fails anyway
    lock.unlock();
    const double start = now();
    Status status =
        skip ? Status::ok() : communicator_->allreduce(bucket.data(), bucket.size(), op_);
    const double took = now() - start;
    lock.lock();
    comm_s_ += took;
    if (!status.isOk() && error_.isOk()) error_ = status;
    --in_flight_;
    changed_.notify_all();
  }
}

}  // namespace ringmaster::agent
