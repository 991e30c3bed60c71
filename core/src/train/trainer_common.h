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
// A checkpoint continues this run only with the same parameter count, ranks and batch size.
Status checkCheckpointShape(const CheckpointState& state, size_t num_params,
                            const NativeConfig& config, const TrainerOptions& options);

}  // namespace ringmaster::train::internal
