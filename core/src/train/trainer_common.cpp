#include "train/trainer_common.h"

#include <algorithm>
#include <string>

namespace ringmaster::train::internal {

Status checkTrainerInputs(const NativeConfig& config, const Split& data) {
  if (config.grad_accumulation == 0) {
    return invalidArgument("native.grad_accumulation: expected at least 1");
  }
  if ((config.epochs == 0) == (config.steps == 0)) {
    return invalidArgument("native: exactly one of epochs or steps must be positive");
  }
  if (data.train.size() == 0) return invalidArgument("dataset: the training split is empty");
  if (config.model.task != data.train.task) {
    return invalidArgument(std::string("native.model.task: ") + taskName(config.model.task) +
                           ", but the data set was loaded for " + taskName(data.train.task));
  }
  return Status::ok();
}

MlpOptions mlpOptionsFor(const NativeConfig& config, const Dataset& train) {
  MlpOptions options;
  options.inputs = train.features;
  options.hidden = config.model.hidden;
  options.activation = config.model.activation;
  options.task = config.model.task;
  options.classes = train.classes;
  return options;
}

Result<DistributedSampler> makeSampler(const NativeConfig& config, const Dataset& train,
                                       const TrainerOptions& options) {
  SamplerOptions sampler_options;
  sampler_options.dataset_size = train.size();
  sampler_options.rank = options.rank;
  sampler_options.world_size = options.world_size;
  sampler_options.batch_size = config.batch_size;
  sampler_options.seed = config.seed;
  if (config.strategy.data_split == DataSplit::kByLabel) {
    if (train.task != Task::kClassification) {
      return invalidArgument("native.strategy.data_split: by_label needs a classification task");
    }
    RM_ASSIGN_OR_RETURN(sampler_options.pool,
                        byLabelShard(train.y, train.classes, options.rank, options.world_size));
    if (sampler_options.pool.empty()) {
      return invalidArgument("native.strategy.data_split: by_label leaves rank " +
                             std::to_string(options.rank) +
                             " no training samples (none of its labels is in the training split)");
    }
  }
  return DistributedSampler::create(sampler_options);
}

size_t stepsPerEpoch(const NativeConfig& config, const DistributedSampler& sampler) {
  const size_t k = config.grad_accumulation;
  return (sampler.batchesPerEpoch() + k - 1) / k;
}

uint64_t totalSteps(const NativeConfig& config, const DistributedSampler& sampler) {
  return config.steps > 0 ? config.steps : config.epochs * stepsPerEpoch(config, sampler);
}

uint64_t totalStepsAfterResume(const NativeConfig& config, const DistributedSampler& sampler,
                               uint64_t step, uint64_t full_total) {
  if (config.steps > 0 || config.epochs == 0) return full_total;
  const uint64_t per_epoch = full_total / config.epochs;
  const uint64_t epoch = sampler.position().epoch;
  const size_t k = config.grad_accumulation;
  const uint64_t this_epoch = (sampler.batchesLeftInEpoch() + k - 1) / k;
  const uint64_t later = epoch + 1 < config.epochs ? (config.epochs - epoch - 1) * per_epoch : 0;
  return step + this_epoch + later;
}

EvalReport evalReport(const NativeConfig& config, const EvalTotals& totals, uint64_t step,
                      uint64_t epoch) {
  EvalReport report;
  report.step = step;
  report.epoch = epoch;
  if (totals.samples == 0) return report;
  const auto n = static_cast<double>(totals.samples);
  report.samples = totals.samples;
  report.loss = totals.loss_sum / n;
  if (config.model.task == Task::kClassification) {
    report.accuracy = static_cast<double>(totals.correct) / n;
  } else {
    report.mse = report.loss;
  }
  return report;
}

bool evaluationDue(const NativeConfig& config, const StepReport& report, uint64_t total_steps) {
  if (report.step >= total_steps) return true;
  if (!report.epoch_end || config.eval_every == 0) return false;
  return (report.epoch + 1) % config.eval_every == 0;
}

Status checkCheckpointShape(const CheckpointState& state, size_t num_params,
                            const NativeConfig& config, const TrainerOptions& options) {
  if (state.params.size() != num_params) {
    return invalidArgument("checkpoint: holds " + std::to_string(state.params.size()) +
                           " parameters, this model has " + std::to_string(num_params));
  }
  // Another world size resumes elastically (DistributedSampler::restore); another batch size
  // would change what a step means.
  if (state.world_size == 0 || state.batch_size != config.batch_size) {
    return invalidArgument("checkpoint: written by " + std::to_string(state.world_size) +
                           " ranks with batch_size " + std::to_string(state.batch_size) +
                           ", this run has " + std::to_string(options.world_size) +
                           " ranks with batch_size " + std::to_string(config.batch_size) +
                           "; the data order cannot continue");
  }
  return Status::ok();
}

StepPlan planStep(const NativeConfig& config, const TrainerOptions& options,
                  DistributedSampler& sampler) {
  if (sampler.batchesLeftInEpoch() == 0) sampler.startEpoch(sampler.position().epoch + 1);
  StepPlan plan;
  plan.micro_batches = std::min(config.grad_accumulation, sampler.batchesLeftInEpoch());
  plan.scale = options.grad_prescale / static_cast<float>(plan.micro_batches);
  plan.local_sgd = config.strategy.localSgd();
  return plan;
}

bool averagingDue(const NativeConfig& config, uint64_t step, uint64_t total_steps,
                  bool evaluation_due) {
  return step % config.strategy.average_every == 0 || step >= total_steps || evaluation_due;
}

Status stepFailed(const Status& cause, uint64_t step, const char* what) {
  return Status(cause.code(),
                "step " + std::to_string(step) + ": " + what + " failed: " + cause.message());
}

}  // namespace ringmaster::train::internal
