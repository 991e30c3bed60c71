#pragma once
// ringmaster-worker's job: one rank of a `native` job. Builds the trainer from the job's
// `native:` section, on the CPU (Gloo over TCP) or on this host's GPU (NCCL) as the backend says,
// joins the other ranks through the job's rendezvous store, resumes from the newest checkpoint,
// trains with gradients averaged by bucketed allreduces that overlap the backward pass, and reports
// metrics as JSON lines on stdout, which its agent journals: loss, lr, samples_per_sec, step_time,
// comm_time every `metrics_every` steps, accuracy (classification) or mse after each evaluation,
// param_checksum at the end.

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
};

// `store` is the job's rendezvous store (may be null when world_size == 1). Metric lines go to
// `out`, human-readable progress to `log`.
Status runNativeWorker(const WorkerOptions& options, comm::KeyValueStore* store, std::FILE* out,
                       std::FILE* log);

}  // namespace ringmaster::agent
