#pragma once
// What Trainer (CPU) and GpuTrainer share: input checks, the model shape and sampler a config
// implies, the step count, evaluation reports, the evaluation schedule and the checkpoint checks.
// One place, so that both paths draw, schedule and refuse alike.

#include <cstdint>

#include "ringmaster/train/checkpoint.h"
#include "ringmaster/train/config.h"
#include "ringmaster/train/data.h"
#include "ringmaster/train/model.h"
#include "ringmaster/train/sampler.h"
#include "ringmaster/train/trainer.h"

namespace ringmaster::train::internal {

// Refuses configs and data the trainer cannot run.
Status checkTrainerInputs(const NativeConfig& config, const Split& data);
MlpOptions mlpOptionsFor(const NativeConfig& config, const Dataset& train);
Result<DistributedSampler> makeSampler(const NativeConfig& config, const Dataset& train,
                                       const TrainerOptions& options);
// Optimizer steps per epoch (micro-batches grouped by grad_accumulation) and in the whole run.
size_t stepsPerEpoch(const NativeConfig& config, const DistributedSampler& sampler);
uint64_t totalSteps(const NativeConfig& config, const DistributedSampler& sampler);
// After a restore: `step` plus what the sampler has left (`full_total` is totalSteps() of a run
// from the start with this world size). Differs from it only after an elastic resume.
uint64_t totalStepsAfterResume(const NativeConfig& config, const DistributedSampler& sampler,
                               uint64_t step, uint64_t full_total);

EvalReport evalReport(const NativeConfig& config, const EvalTotals& totals, uint64_t step,
                      uint64_t epoch);
bool evaluationDue(const NativeConfig& config, const StepReport& report, uint64_t total_steps);

// The start of a step, alike on both trainers: a new epoch when the last one is used up, then
// grad_accumulation micro-batches (fewer at an epoch's end), each gradient scaled by `scale`.
struct StepPlan {
  size_t micro_batches = 1;
  float scale = 1.0f;
  bool local_sgd = false;  // each rank steps on its own gradient; parameters averaged now and then
};
StepPlan planStep(const NativeConfig& config, const TrainerOptions& options,
                  DistributedSampler& sampler);
// Local SGD averages the parameters after `step` every average_every steps, after the last step,
// and before an evaluation (so that what is evaluated is the ranks' common model, not one rank's
// drift: with by_label data that would be a model of its own labels).
bool averagingDue(const NativeConfig& config, uint64_t step, uint64_t total_steps,
                  bool evaluation_due);
// "step 12: gradient reduction failed: <cause>", with the cause's code.
Status stepFailed(const Status& cause, uint64_t step, const char* what);

// A checkpoint continues this run only with the same parameter count, ranks and batch size.
Status checkCheckpointShape(const CheckpointState& state, size_t num_params,
                            const NativeConfig& config, const TrainerOptions& options);

}  // namespace ringmaster::train::internal
