#pragma once
// Data-parallel gradient averaging that overlaps with the backward pass: as each layer's
// gradient becomes ready (last layer first), adjacent layers are fused into buckets of about
// `bucket_bytes` (the step's first of about 1 MB), and a communication thread allreduces each
// full bucket while backward goes on with earlier layers. finish() sends what is left and waits for
// every bucket.
//
// Overlap only pays when the communication thread has a core to run on. Where the ranks already
// take every core (two ranks on a 2-core machine), the thread runs only when backward waits,
// and the hand-offs and smaller allreduces cost: a 784-1024-512-10 MLP's step there took 8.3-9.5
// ms overlapped and 7.2-8.7 ms as one allreduce after backward (the TCP ring). Overlap::kMeasure
// lets the ranks find out which holds on theirs.
//
// Thread-safety: onLayerReady() and finish() are called by the training thread. The
// communicator is used by this object's own thread, and by the training thread in finish() when
// no bucket is queued or in flight (the thread is then idle).

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "ringmaster/comm/communicator.h"

namespace ringmaster::agent {

class GradientSync {
 public:
  // kAlways: buckets are reduced as backward makes them. kNever: finish() reduces the whole
  // buffer, on the calling thread. kMeasure: overlapped for kWarmupSteps steps, then the two in
  // turns of kTurnSteps steps up to kTrialSteps, after which every rank keeps the one whose median
  // step (finish() to finish()), averaged over the ranks, was shorter: all ranks choose alike.
  enum class Overlap { kAlways, kNever, kMeasure };
  static constexpr uint64_t kWarmupSteps = 10;
  static constexpr uint64_t kTurnSteps = 10;
  static constexpr uint64_t kTrialSteps = kWarmupSteps + 6 * kTurnSteps;
  static constexpr size_t kBucketBytes = size_t{4} << 20;

  // `op`: kAverage, or kSum for gradients the trainer already scaled by 1/world size
  // (TrainerOptions::grad_prescale).
  GradientSync(comm::Communicator* communicator, comm::ReduceOp op = comm::ReduceOp::kAverage,
               size_t bucket_bytes = kBucketBytes, Overlap overlap = Overlap::kAlways);
  ~GradientSync();  // stop()

  // Waits for the bucket being reduced (if any), drops the ones not started and ends the thread:
  // after it returns nothing touches the gradient buffers, which may then be freed. The owner
  // calls it before freeing them on every path, a failed step included. Idempotent.
  void stop();

  // A layer's gradient [data, data + count) is final for this step (ignored in a step that does
  // not overlap).
  void onLayerReady(float* data, size_t count);
  // Averages whatever of `grads` was not sent yet, waits for every bucket of the step, and
  // returns the first error. Also works when onLayerReady() was never called (one bucket).
  Status finish(std::span<float> grads);

  // Seconds of the last step spent in allreduce calls, and of them the part the trainer waited
  // for (not hidden behind backward).
  double lastCommSeconds() const { return last_comm_s_; }
  double lastWaitSeconds() const { return last_wait_s_; }
  // Whether the coming step overlaps; kMeasure's choice once made, as a sentence ("" before).
  bool overlapping() const { return overlapping_; }
  const std::string& choice() const { return choice_; }

 private:
  static constexpr size_t kFirstBucketFloats = (size_t{1} << 20) / sizeof(float);

  void submit(float* begin, float* end);
  Status reduceInline(std::span<float> grads);
  Status waitForBuckets(std::span<float> grads);
  // kMeasure: records the step that just ended; at the trial's end, chooses.
  Status measure(double step_seconds);
  void run();

  comm::Communicator* communicator_;
  const comm::ReduceOp op_;
  const size_t bucket_floats_;
  const Overlap overlap_;
  bool overlapping_;
  uint64_t steps_ = 0;            // finish() calls
  double last_step_end_ = 0;      // when the last finish() returned
  std::vector<double> trial_[2];  // kMeasure: step seconds overlapped [0] and not [1]
  std::string choice_;
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
