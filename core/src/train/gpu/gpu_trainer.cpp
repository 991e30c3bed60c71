// GpuTrainer: Trainer's loop (trainer.cpp) around a GpuMlp and a GpuOptimizer. Plain C++ on the
// gpu_model.h interfaces, built with or without CUDA (without it, create() fails in createGpuMlp).
// Keep the step in sync with Trainer::step(): both paths must draw, scale and report alike.
#include <algorithm>
#include <chrono>
#include <utility>

#include "ringmaster/train/gpu_model.h"
#include "train/trainer_common.h"

namespace ringmaster::train {

Result<std::unique_ptr<GpuTrainer>> GpuTrainer::create(const NativeConfig& config, int device,
                                                       TrainerOptions options) {
  RM_ASSIGN_OR_RETURN(Split data, loadData(config));
  return create(config, device, std::move(data), std::move(options));
}

Result<std::unique_ptr<GpuTrainer>> GpuTrainer::create(const NativeConfig& config, int device,
                                                       Split data, TrainerOptions options) {
  // The same checks, model shape, sampler and step count as Trainer::create().
  RM_RETURN_IF_ERROR(internal::checkTrainerInputs(config, data));
  // by_label is the sampler's business and local_sgd the step's (below); compression encodes on
  // the host (the worker's StrategySync), so it is the CPU trainer's.
  if (config.strategy.compression != Compression::kNone) {
    return Status(ErrorCode::kUnimplemented,
                  "native.strategy: compression runs on the CPU trainer only (backend gloo)");
  }
  const MlpOptions model_options = internal::mlpOptionsFor(config, data.train);
  RM_ASSIGN_OR_RETURN(std::unique_ptr<GpuMlp> model, createGpuMlp(model_options, device));
  {
    // The CPU path's initial weights, so that both paths start from the same point.
    RM_ASSIGN_OR_RETURN(Mlp initial, Mlp::create(model_options));
    initial.initialize(config.seed);
    RM_RETURN_IF_ERROR(model->copyParamsFrom(initial.params()));
  }
  // The training data on the device, so that no batch crosses the bus; when it does not fit,
  // batches are gathered on the host and copied, as before.
  const Status uploaded =
      model->uploadData(data.train.x.data(), data.train.y.data(), data.train.size());
  if (!uploaded.isOk() && uploaded.code() != ErrorCode::kResourceExhausted) return uploaded;

  RM_ASSIGN_OR_RETURN(DistributedSampler sampler,
                      internal::makeSampler(config, data.train, options));
  const uint64_t total_steps = internal::totalSteps(config, sampler);
  OptimizerOptions optimizer_options = config.optimizer;
  optimizer_options.total_steps = total_steps;
  RM_ASSIGN_OR_RETURN(std::unique_ptr<GpuOptimizer> optimizer,
                      createGpuOptimizer(optimizer_options, model.get()));
  auto trainer = std::unique_ptr<GpuTrainer>(
      new GpuTrainer(config, std::move(data), std::move(options), std::move(model),
                     std::move(optimizer), std::move(sampler), total_steps));
  trainer->data_on_device_ = uploaded.isOk();
  return trainer;
}

GpuTrainer::GpuTrainer(const NativeConfig& config, Split data, TrainerOptions options,
                       std::unique_ptr<GpuMlp> model, std::unique_ptr<GpuOptimizer> optimizer,
                       DistributedSampler sampler, uint64_t total_steps)
    : config_(config),
      data_(std::move(data)),
      options_(std::move(options)),
      model_(std::move(model)),
      optimizer_(std::move(optimizer)),
      sampler_(std::move(sampler)),
      total_steps_(total_steps),
      batch_(config_.batch_size, data_.train.features) {
  steps_per_epoch_ = internal::stepsPerEpoch(config_, sampler_);
  indices_.reserve(config_.batch_size);
}

// The step's device work is queued, not waited for (see gpu_model.h): the host draws the next
// batch while the device computes this one. It waits only to hand the gradients to
// reduce_gradients and, every report_every steps, to read the loss and norm back.
Result<StepReport> GpuTrainer::step() {
  const auto start = std::chrono::steady_clock::now();
  if (unmeasured_steps_ == 0) unmeasured_since_ = start;
  const internal::StepPlan plan = internal::planStep(config_, options_, sampler_);
  StepReport report;
  report.epoch = sampler_.position().epoch;
  double host_loss_sum = 0.0;  // forward()'s, on the host-batch path
  for (size_t k = 0; k < plan.micro_batches; ++k) {
    sampler_.nextBatch(&indices_);
    Batch batch{nullptr, nullptr, indices_.size()};
    if (data_on_device_) {
      RM_RETURN_IF_ERROR(model_->forwardRows(indices_, k > 0));
    } else {
      batch = batch_.gather(data_.train, indices_);
      RM_ASSIGN_OR_RETURN(const float loss, model_->forward(batch));
      host_loss_sum += loss;
    }
    const bool last = k + 1 == plan.micro_batches && !plan.local_sgd;
    static const LayerGradReadyFn kNoHook;
    RM_RETURN_IF_ERROR(model_->backward(batch, last ? options_.on_layer_grad_ready : kNoHook,
                                        BackwardOptions{plan.scale, k > 0}));
    report.samples += batch.size;
  }
  if (options_.reduce_gradients && !plan.local_sgd) {
    RM_RETURN_IF_ERROR(model_->synchronize());  // the gradients are complete for another stream
    Status reduced = options_.reduce_gradients(model_->deviceGrads());
    if (!reduced.isOk()) return internal::stepFailed(reduced, step_ + 1, "gradient reduction");
  }
  const uint64_t step = step_ + 1;
  report.measured =
      step % std::max<uint64_t>(options_.report_every, 1) == 0 || step >= total_steps_;
  // The norm costs a pass over the gradients: only for clipping or to be reported.
  if (config_.clip_norm > 0.0 || report.measured) {
    RM_RETURN_IF_ERROR(model_->queueClipGradNorm(config_.clip_norm));
  }
  RM_ASSIGN_OR_RETURN(report.lr, optimizer_->apply());
  step_ = step;

  report.step = step_;
  report.epoch_end = sampler_.batchesLeftInEpoch() == 0;
  if (plan.local_sgd && options_.average_params &&
      internal::averagingDue(config_, step_, total_steps_, evaluationDue(report))) {
    RM_RETURN_IF_ERROR(model_->synchronize());  // the update is done before another stream reads
    Status averaged = options_.average_params(model_->deviceParams());
    if (!averaged.isOk()) return internal::stepFailed(averaged, step_, "parameter averaging");
    report.averaged = true;
  }
  ++unmeasured_steps_;
  unmeasured_samples_ += report.samples;
  if (!report.measured) return report;

  RM_ASSIGN_OR_RETURN(const GpuMlp::Totals totals, model_->takeTotals());
  const double loss_sum = data_on_device_ ? totals.loss : host_loss_sum;
  report.loss = loss_sum / static_cast<double>(plan.micro_batches);
  report.grad_norm = totals.grad_norm;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - unmeasured_since_).count();
  report.step_time_s = seconds / static_cast<double>(unmeasured_steps_);
  report.samples_per_sec = seconds > 0.0 ? static_cast<double>(unmeasured_samples_) / seconds : 0.0;
  unmeasured_steps_ = 0;
  unmeasured_samples_ = 0;
  return report;
}

Result<EvalReport> GpuTrainer::evaluate() {
  const Dataset& eval = data_.eval;
  EvalTotals totals;
  if (eval.size() > 0) {
    RM_ASSIGN_OR_RETURN(totals, model_->evaluate(eval.x.data(), eval.y.data(), eval.size(),
                                                 std::max<size_t>(config_.batch_size, 256)));
  }
  return internal::evalReport(config_, totals, step_, sampler_.position().epoch);
}

bool GpuTrainer::evaluationDue(const StepReport& report) const {
  return internal::evaluationDue(config_, report, total_steps_);
}

Result<CheckpointState> GpuTrainer::checkpointState() const {
  CheckpointState state;
  state.step = step_;
  state.sampler = sampler_.position();
  state.epoch = state.sampler.epoch;
  state.world_size = static_cast<uint32_t>(options_.world_size);
  state.batch_size = config_.batch_size;
  state.params.resize(model_->numParams());
  RM_RETURN_IF_ERROR(model_->copyParamsTo(state.params));
  RM_ASSIGN_OR_RETURN(state.optimizer_state, optimizer_->serializeState());
  return state;
}

Status GpuTrainer::restore(const CheckpointState& state) {
  // Everything that can be refused is checked before anything changes, as in Trainer::restore().
  RM_RETURN_IF_ERROR(internal::checkCheckpointShape(state, model_->numParams(), config_, options_));
  RM_ASSIGN_OR_RETURN(Optimizer check,
                      Optimizer::create(optimizer_->options(), state.params.size()));
  RM_RETURN_IF_ERROR(check.restoreState(state.optimizer_state));
  if (check.step() != state.step) {
    return invalidArgument("checkpoint: optimizer state at step " + std::to_string(check.step()) +
                           ", checkpoint at step " + std::to_string(state.step));
  }
  DistributedSampler sampler = sampler_;
  RM_RETURN_IF_ERROR(sampler.restore(state.sampler, static_cast<int>(state.world_size)));

  RM_RETURN_IF_ERROR(optimizer_->restoreState(state.optimizer_state));
  RM_RETURN_IF_ERROR(model_->copyParamsFrom(state.params));
  RM_RETURN_IF_ERROR(model_->zeroGrads());
  sampler_ = std::move(sampler);
  step_ = state.step;
  unmeasured_steps_ = 0;
  unmeasured_samples_ = 0;
  total_steps_ = internal::totalStepsAfterResume(config_, sampler_, step_, total_steps_);
  return Status::ok();
}

Result<uint64_t> GpuTrainer::paramChecksum() const {
  std::vector<float> params(model_->numParams());
  RM_RETURN_IF_ERROR(model_->copyParamsTo(params));
  return train::paramChecksum(params);
}

}  // namespace ringmaster::train
