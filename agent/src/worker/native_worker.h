#pragma once
// ringmaster-worker's job: one rank of a `native` job. Builds the trainer from the job's
// `native:` section, on the CPU (Gloo over TCP) or on this host's GPU (NCCL) as the backend says,
// joins the other ranks through the job's rendezvous store, resumes from the newest checkpoint,
// trains with gradients averaged by bucketed allreduces that overlap the backward pass where that
// pays (on CPUs the ranks measure it first; see GradientSync), or as native.strategy says
// (compressed, or local SGD's parameter averaging; see StrategySync), reports
// metrics as JSON lines on stdout, which its agent journals: loss, lr, samples_per_sec, step_time,
// comm_time, bytes_sent (and compression_error with lossy compression) every `metrics_every`
// steps, accuracy (classification) or mse after each evaluation, param_checksum at the end. Asked
// to stop (SIGTERM: a client's stop, Slurm's preemption or time limit), the ranks agree on a step,
// checkpoint there and end, so the next attempt loses nothing.

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>

#include "ringmaster/comm/store.h"
#include "ringmaster/util/result.h"

namespace ringmaster::agent {

struct WorkerOptions {
  std::string config_path;  // YAML of the native: section
  int rank = 0;
  int local_rank = 0;  // rank on this host: the GPU is local_rank % (CUDA devices)
  int world_size = 1;
  uint32_t attempt = 1;
  // gloo: CPU + Gloo. nccl: GPU + NCCL (an error on a host without a CUDA device). auto: nccl
  // when every rank has a usable GPU, gloo otherwise.
  std::string backend = "auto";
  std::string checkpoint_dir;  // empty: no checkpoints
  std::string bind_address;    // this rank's address for Gloo (empty: the host name's)
  uint32_t metrics_every = 1;
  std::string phase_file;  // RINGMASTER_PHASE_FILE (see job/rank_phase.h); empty: none
  // Set by the worker's SIGTERM handler; null: never asked. See StopState.
  std::atomic<int>* stop = nullptr;
};

// The states of WorkerOptions::stop. Before training, and on GPUs (NCCL reduces device memory
// only), a SIGTERM ends the rank at once; while a CPU rank trains it only asks, and the ranks
// vote every kStopVoteEvery steps (a one-float allreduce) so that all of them stop at the same
// step and their checkpoints match. A rank asked that has not got to an agreement within
// kStopAgreeSeconds ends as before: it is stuck in a collective with a peer that is gone (the
// agents tear a failed attempt down with SIGTERM too), or its steps are too long to wait for.
enum StopState : int { kStopKills = 0, kStopAsks = 1, kStopAsked = 2, kStopAgreed = 3 };
constexpr uint64_t kStopVoteEvery = 10;
constexpr unsigned kStopAgreeSeconds = 1;

// `store` is the job's rendezvous store (may be null when world_size == 1). Metric lines go to
// `out`, human-readable progress to `log`. Stopped by options.stop: kCancelled, after the
// checkpoint.
Status runNativeWorker(const WorkerOptions& options, comm::KeyValueStore* store, std::FILE* out,
                       std::FILE* log);

}  // namespace ringmaster::agent
