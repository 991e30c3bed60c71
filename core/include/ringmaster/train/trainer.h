#pragma once
// Trainer: the native trainer's loop for one rank, driven one optimizer step at a time.
//
// One step() draws grad_accumulation micro-batches from this rank's DistributedSampler, runs
// forward/backward on each (gradients averaged over the micro-batches), hands the gradient buffer
// to TrainerOptions::reduce_gradients (the data-parallel allreduce goes there; it must leave the
// average over ranks in place), clips by global norm and applies the optimizer. A step never
// crosses an epoch: the last step of an epoch averages the micro-batches that are left.
//
// With strategy.local_sgd (average_every H) a step does not reduce the gradients: each rank
// applies its own, and after every H-th step (and the last one, and before each evaluation, so
// that the common model is what gets evaluated) TrainerOptions::average_params replaces the
// parameters with their average over the ranks. Optimizer state (momentum, Adam's
// moments) stays local to each rank and is not averaged: it is the rank's own running view of
// its gradients, and averaging it would double the bytes of each averaging. With H = 1 and a
// linear update (SGD, with or without momentum or weight decay, no clipping) this is
// synchronous allreduce SGD again, up to float rounding: mean_r(p - lr * m_r) = p - lr *
// mean_r(m_r) and the momentum buffers' mean follows the recursion of the averaged gradient's
// momentum.
//
// Every rank builds the same data, split and initial parameters from the config's seeds, and sees
// the same number of steps per epoch, so with an averaging reduction all ranks stay bit-identical
// (compare paramChecksum()).
//
// Thread safety: a Trainer is not thread-safe; one thread drives it. Distinct Trainers may run on
// different threads (e.g. one per simulated rank).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "ringmaster/train/checkpoint.h"
#include "ringmaster/train/config.h"
#include "ringmaster/train/data.h"
#include "ringmaster/train/model.h"
#include "ringmaster/train/optimizer.h"
#include "ringmaster/train/sampler.h"
#include "ringmaster/util/result.h"

namespace ringmaster::train {

// Replaces `grads` (the whole gradient buffer, one layer block after another, see model.h) with
// its average over all ranks. A non-ok Status fails the step (parameters are left unchanged).
using GradReduceFn = std::function<Status(std::span<float> grads)>;

// parameter_server workers (see parameter_server.h): gets this rank's gradient of the step and
// leaves in `params` the parameters the next step starts from (the servers' update of them);
// returns the learning rate the update used. A non-ok result fails the step.
using RemoteUpdateFn =
    std::function<Result<double>(std::span<float> params, std::span<const float> grads)>;

struct TrainerOptions {
  int rank = 0;        // in [0, world_size)
  int world_size = 1;  // ranks sharing the data, each with config.batch_size samples per batch
  GradReduceFn reduce_gradients;  // empty: a single process, no reduction
  // The backward pass multiplies every gradient by this (it scales the loss). 1/world_size lets
  // reduce_gradients sum instead of average: the average's division then costs nothing, where
  // a separate pass over the reduced buffer would (Gloo over TCP has no fused average).
  float grad_prescale = 1.0f;
  // local_sgd: replaces the parameters with their average over all ranks (same contract as
  // reduce_gradients, on the parameter buffer). Empty: no averaging.
  GradReduceFn average_params;
  // Set: replaces the gradient reduction, clipping and the optimizer update of every step (a
  // parameter-server worker applies no update of its own: the servers do). The trainer's own
  // optimizer then never steps; StepReport::lr is what this returns, grad_norm the local norm.
  RemoteUpdateFn remote_update;
  // Per-layer readiness during the backward pass of a step's last micro-batch, last layer first
  // (for overlapping bucket allreduces with backward); empty: not called.
  LayerGradReadyFn on_layer_grad_ready;
  std::string checkpoint_dir;  // run(): overrides config.checkpoint.dir when not empty
  // GpuTrainer: read the loss and timing back from the device every this many steps (and at the
  // last), not every step; the CPU trainer measures every step (it costs nothing there).
  uint64_t report_every = 1;
};

struct StepReport {
  uint64_t step = 0;             // optimizer steps completed, this one included
  uint64_t epoch = 0;            // the epoch this step's samples came from (0-based)
  bool epoch_end = false;        // this step used the epoch's last batch
  double loss = 0.0;             // mean loss over this rank's micro-batches (before the update)
  double lr = 0.0;               // learning rate used by the update
  double grad_norm = 0.0;        // global L2 norm of the reduced gradient, before clipping
  size_t samples = 0;            // samples this rank processed in this step
  double step_time_s = 0.0;      // wall time of the whole step, reduction included
  double samples_per_sec = 0.0;  // samples / step_time_s, this rank
  // False when the GPU trainer did not read this step's loss, grad_norm and timing back (see
  // TrainerOptions::report_every): they are 0 then. A measured step after unmeasured ones gives
  // the mean step time and the samples/s over all of them.
  bool measured = true;
  bool averaged = false;  // local_sgd: this step ended with a parameter averaging
};

struct EvalReport {
  uint64_t step = 0;
  uint64_t epoch = 0;
  size_t samples = 0;     // held-out samples (0 when eval_fraction is 0)
  double loss = 0.0;      // mean cross-entropy, or mean squared error
  double accuracy = 0.0;  // classification only
  double mse = 0.0;       // regression only (= loss)
};

// The data a config describes: its training part, and its test set (fashion_mnist, idx with test
// files) or else a part held out by the dataset seed (the top-level seed unless dataset.seed is
// given); all but synthetic data standardised with the training part's statistics (one scale for
// every pixel of images).
Result<Split> loadData(const NativeConfig& config);

class Trainer {
 public:
  // Loads the data (loadData()) and builds the model, optimizer and sampler.
  static Result<Trainer> create(const NativeConfig& config, TrainerOptions options = {});
  // With the data already loaded; data.train.features / classes decide the model's shape.
  static Result<Trainer> create(const NativeConfig& config, Split data, TrainerOptions options);

  // One optimizer step (see the top of the file). REQUIRES: !done()
  Result<StepReport> step();
  // Loss and accuracy / MSE on the held-out split (every rank evaluates all of it).
  EvalReport evaluate();
  // evaluate() split among ranks: the totals of share `shard` of `shards` equal shares of the
  // held-out split, and the report of the totals summed over every share.
  EvalTotals evaluateShare(int shard, int shards);
  EvalReport evalReport(const EvalTotals& totals) const;

  bool done() const { return step_ >= total_steps_; }
  uint64_t completedSteps() const { return step_; }
  uint64_t totalSteps() const { return total_steps_; }
  size_t stepsPerEpoch() const { return steps_per_epoch_; }
  // True after a step that ends epoch e when (e + 1) % eval_every == 0, and after the last step.
  bool evaluationDue(const StepReport& report) const;

  CheckpointState checkpointState() const;
  // Continues from a checkpoint of a trainer with the same config, rank count and batch size
  // (refused otherwise: the sampler position would mean other samples). Checks the parameter
  // count and optimizer kind; other config changes (e.g. hidden widths with the same count) are
  // the caller's responsibility.
  Status restore(const CheckpointState& state);
  uint64_t paramChecksum() const;

  // Steps until done() or *stop: evaluates when due, and (on rank 0, when a checkpoint dir and
  // checkpoint.every_steps are set) checkpoints every every_steps steps and at the end.
  struct Callbacks {
    std::function<void(const StepReport&)> on_step;
    std::function<void(const EvalReport&)> on_eval;
  };
  Status run(const Callbacks& callbacks = {}, const std::atomic<bool>* stop = nullptr);

  const NativeConfig& config() const { return config_; }
  Mlp& model() { return model_; }
  const Mlp& model() const { return model_; }
  const Optimizer& optimizer() const { return optimizer_; }
  const DistributedSampler& sampler() const { return sampler_; }
  const Split& data() const { return data_; }

 private:
  Trainer(const NativeConfig& config, Split data, TrainerOptions options, Mlp model,
          Optimizer optimizer, DistributedSampler sampler, uint64_t total_steps);

  NativeConfig config_;
  Split data_;
  TrainerOptions options_;
  Mlp model_;
  Optimizer optimizer_;
  DistributedSampler sampler_;
  uint64_t step_ = 0;
  uint64_t total_steps_ = 0;
  size_t steps_per_epoch_ = 0;
  // Reused every step so that a step allocates nothing.
  std::vector<uint32_t> indices_;
  BatchBuffer batch_;
};

}  // namespace ringmaster::train
