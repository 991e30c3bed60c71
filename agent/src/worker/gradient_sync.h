#pragma once
// Data-parallel gradient averaging that overlaps with the backward pass: as each layer's
// gradient becomes ready (last layer first), adjacent layers are fused into buckets of about
// `bucket_bytes` (the step's first of about 1 MB), and a communication thread allreduces each
// full bucket while backward goes on with earlier layers. finish() sends what is left and waits for
// every bucket.
//
// Thread-safety: onLayerReady() and finish() are called by the training thread; the
// communicator is used only by this object's own thread.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <span>
#include <thread>

#include "ringmaster/comm/communicator.h"

namespace ringmaster::agent {

class GradientSync {
 public:
  // `op`: kAverage, or kSum for gradients the trainer already scaled by 1/world size
  // (TrainerOptions::grad_prescale).
  GradientSync(comm::Communicator* communicator, comm::ReduceOp op = comm::ReduceOp::kAverage,
               size_t bucket_bytes = 4u << 20);
  ~GradientSync();  // stop()

  // Waits for the bucket being reduced (if any), drops the ones not started and ends the thread:
  // after it returns nothing touches the gradient buffers, which may then be freed. The owner
  // calls it before freeing them on every path, a failed step included. Idempotent.
  void stop();

  // A layer's gradient [data, data + count) is final for this step.
  void onLayerReady(float* data, size_t count);
  // Averages whatever of `grads` was not sent yet, waits for every bucket of the step, and
  // returns the first error. Also works when onLayerReady() was never called (one bucket).
  Status finish(std::span<float> grads);

  // Seconds of the last step spent in allreduce calls, and of them the part the trainer waited
  // for (not hidden behind backward).
  double lastCommSeconds() const { return last_comm_s_; }
  double lastWaitSeconds() const { return last_wait_s_; }

 private:
  static constexpr size_t kFirstBucketFloats = (size_t{1} << 20) / sizeof(float);

  void submit(float* begin, float* end);
  void run();

  comm::Communicator* communicator_;
  const comm::ReduceOp op_;
  const size_t bucket_floats_;
  // The ready range not yet submitted: [pending_begin_, pending_end_).
  float* pending_begin_ = nullptr;
  float* pending_end_ = nullptr;
  float* covered_begin_ = nullptr;  // lowest address submitted this step

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::span<float>> queue_;  // GUARDED_BY(mutex_)
  size_t in_flight_ = 0;                // GUARDED_BY(mutex_)
  Status error_;                        // GUARDED_BY(mutex_)
  double comm_s_ = 0;                   // GUARDED_BY(mutex_)
  bool stop_ = false;                   // GUARDED_BY(mutex_)
  double last_comm_s_ = 0;
  double last_wait_s_ = 0;
  std::thread thread_;
};

}  // namespace ringmaster::agent
