#pragma once
// native.strategy.pipeline: pipeline (model) parallelism on the CPU (Gloo), alone or combined with
// data parallelism (hybrid). The model's layers split over P stages (train/pipeline.h: balanced by
// FLOPs, GPipe schedule); world_size = P x D runs D data-parallel replicas of the
// pipeline.
//
// Ranks: rank = replica * P + stage, so a replica's stages are consecutive ranks (on one host
// when the placement packs them: activations travel every micro-batch, the replicas' gradient
// average once a step). Stage s of replica r sends activations to rank r*P + s+1 and gradients to
// r*P + s-1 (point-to-point on the job's communicator); the D ranks of one stage average their
// gradients with an allreduce on a Gloo communicator of their own (stage group).
//
// Data: every stage of a replica draws the same batches (the DistributedSampler of rank = replica
// among D, the config's seed): the first stage reads the features, the last the labels, the others
// only the batch size. Each stage applies its own optimizer to its own layers; an optimizer that
// works element by element (SGD, Adam, weight decay) gives the full model's update exactly, and
// clip_norm takes the global norm with one float allreduce over the world.
//
// Evaluation runs the held-out split forward through every replica's pipeline; only the last
// stage knows the loss and accuracy. Figures per step: the last stage's loss, and on every rank
// bubble_time (seconds this stage waited for activations or gradients, the transfers included)
// and bubble_fraction (of the step), comm_time (bubble plus the replicas' allreduce),
// bytes_sent and bytes_received (messages plus the ring allreduce's share), pipeline_stage.
//
// Checkpoints: each rank saves its own stage (its parameters, optimizer state, step and its
// replica's sampler position) in its checkpoint dir, every checkpoint.every_steps, at the end and
// where a stop was agreed; a new attempt continues from the newest step every rank has. Not yet:
// the GPU path.
//
// Thread safety: a PipelineTrainer is driven by one thread; the communicators are its own.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <vector>

#include "native_worker.h"
#include "ringmaster/comm/communicator.h"
#include "ringmaster/job/rank_phase.h"
#include "ringmaster/train/checkpoint.h"
#include "ringmaster/train/config.h"
#include "ringmaster/train/data.h"
#include "ringmaster/train/optimizer.h"
#include "ringmaster/train/pipeline.h"
#include "ringmaster/train/sampler.h"
#include "ringmaster/train/trainer.h"

namespace ringmaster::agent {

struct PipelinePlacement {
  int stage = 0;
  int stages = 1;
  int replica = 0;
  int replicas = 1;
  // The world rank of `stage` in this rank's replica.
  int rankOf(int other_stage) const { return replica * stages + other_stage; }
};

// INVALID_ARGUMENT when `stages` does not divide world_size (names native.strategy.pipeline).
Result<PipelinePlacement> pipelinePlacement(int rank, int world_size, size_t stages);

struct PipelineStepReport {
  train::StepReport step;  // loss is the last stage's (0 elsewhere)
  double bubble_s = 0.0;   // waiting in sends and receives of the schedule
  double allreduce_s = 0.0;
  double bytes_sent = 0.0;
  double bytes_received = 0.0;
  size_t micro_batches = 0;
};

class PipelineTrainer {
 public:
  // `world`: the job's communicator (null only for one rank); `stage_group`: this stage's D
  // replicas (null when D == 1).
  static Result<PipelineTrainer> create(const train::NativeConfig& config, train::Split data,
                                        const PipelinePlacement& placement,
                                        comm::Communicator* world, comm::Communicator* stage_group);

  Result<PipelineStepReport> step();
  // Every stage takes part; the figures are the last stage's (zeros on the others).
  Result<train::EvalReport> evaluate();
  bool done() const { return step_ >= total_steps_; }
  uint64_t completedSteps() const { return step_; }
  uint64_t totalSteps() const { return total_steps_; }
  bool evaluationDue(const train::StepReport& report) const;
  const train::PipelineStage& stage() const { return stage_; }
  const PipelinePlacement& placement() const { return placement_; }
  uint64_t paramChecksum() const;
  // This stage's state; world_size is the replica count (the sampler's shard layout).
  train::CheckpointState checkpointState() const;
  // Continues from a checkpointState() of the same stage: refuses another parameter count,
  // replica count or batch size, naming it.
  Status restore(const train::CheckpointState& state);

 private:
  PipelineTrainer(const train::NativeConfig& config, train::Split data,
                  const PipelinePlacement& placement, comm::Communicator* world,
                  comm::Communicator* stage_group, train::PipelineStage stage,
                  train::Optimizer optimizer, train::DistributedSampler sampler,
                  uint64_t total_steps);
  // Point-to-point with `peer_stage` of this replica; the time spent (waiting included) and the
  // bytes go into `report` when given.
  Status sendTo(std::span<const float> data, int peer_stage, uint32_t tag,
                PipelineStepReport* report);
  Status recvFrom(std::span<float> data, int peer_stage, uint32_t tag, PipelineStepReport* report);
  Status exchange(const float* out, float* in, size_t count, int peer_stage, uint32_t tag,
                  PipelineStepReport* report);
  Status clipByGlobalNorm(train::StepReport* report);

  train::NativeConfig config_;
  train::Split data_;
  PipelinePlacement placement_;
  comm::Communicator* world_;
  comm::Communicator* stage_group_;
  train::PipelineStage stage_;
  train::Optimizer optimizer_;
  train::DistributedSampler sampler_;
  uint64_t step_ = 0;
  uint64_t total_steps_ = 0;
  std::vector<uint32_t> indices_;
  std::vector<float> features_;  // first stage
  std::vector<float> labels_;    // last stage
  // Per micro-batch: the input received (stages after the first), the output gradient received
  // (stages before the last) and the input gradient sent (stages after the first).
  std::vector<std::vector<float>> inputs_;
  std::vector<float> output_grad_;
  std::vector<float> input_grad_;
};

// One rank of a pipeline job inside ringmaster-worker (runNativeWorker dispatches here): the stage
// group's communicator, training with metric lines on `out`, evaluations, the stop vote, the
// checksum of this stage's parameters at the end.
Status runPipelineRank(const train::NativeConfig& config, const WorkerOptions& options,
                       comm::KeyValueStore* store, comm::Communicator* world,
                       job::PhaseBoard& phase, std::FILE* out, std::FILE* log);

}  // namespace ringmaster::agent
