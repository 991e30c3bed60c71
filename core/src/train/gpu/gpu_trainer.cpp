// GpuTrainer: Trainer's loop (trainer.cpp) around a GpuMlp and a GpuOptimizer. Plain C++ on the
// gpu_model.h interfaces, built with or without CUDA (without it, create() fails in createGpuMlp).
// Keep the step in sync with Trainer::step(): both paths must draw, scale and report alike.
#include <algorithm>
#include <chrono>
#include <cstring>
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
  const MlpOptions model_options = internal::mlpOptionsFor(config, data.train);
  RM_ASSIGN_OR_RETURN(std::unique_ptr<GpuMlp> model, createGpuMlp(model_options, device));
  {
    // The CPU path's initial weights, so that both paths start from the same point.
    RM_ASSIGN_OR_RETURN(Mlp initial, Mlp::create(model_options));
    initial.initialize(config.seed);
    RM_RETURN_IF_ERROR(model->copyParamsFrom(initial.params()));
  }

  RM_ASSIGN_OR_RETURN(DistributedSampler sampler,
                      internal::makeSampler(config, data.train, options));
  const uint64_t total_steps = internal::totalSteps(config, sampler);
  OptimizerOptions optimizer_options = config.optimizer;
  optimizer_options.total_steps = total_steps;
  RM_ASSIGN_OR_RETURN(std::unique_ptr<GpuOptimizer> optimizer,
                      createGpuOptimizer(optimizer_options, model.get()));
  return std::unique_ptr<GpuTrainer>(new GpuTrainer(config, std::move(data), std::move(options),
                                                    std::move(model), std::move(optimizer),
                                                    std::move(sampler), total_steps));
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
      total_steps_(total_steps) {
  steps_per_epoch_ = internal::stepsPerEpoch(config_, sampler_);
  indices_.reserve(config_.batch_size);
  batch_x_.resize(config_.batch_size * data_.train.features);
  batch_y_.resize(config_.batch_size);
}

void GpuTrainer::gather(const std::vector<uint32_t>& indices) {
  const size_t f = data_.train.features;
  const float* x = data_.train.x.data();
  const float* y = data_.train.y.data();
  for (size_t i = 0; i < indices.size(); ++i) {
    std::memcpy(batch_x_.data() + i * f, x + static_cast<size_t>(indices[i]) * f,
                f * sizeof(float));
    batch_y_[i] = y[indices[i]];
  }
}

Result<StepReport> GpuTrainer::step() {
  const auto start = std::chrono::steady_clock::now();
  if (sampler_.batchesLeftInEpoch() == 0) sampler_.startEpoch(sampler_.position().epoch + 1);
  const size_t micro_batches = std::min(config_.grad_accumulation, sampler_.batchesLeftInEpoch());
  const float scale = 1.0f / static_cast<float>(micro_batches);

  StepReport report;
  report.epoch = sampler_.position().epoch;
  double loss_sum = 0.0;
  for (size_t k = 0; k < micro_batches; ++k) {
    sampler_.nextBatch(&indices_);
    gather(indices_);
    const Batch batch{batch_x_.data(), batch_y_.data(), indices_.size()};
    RM_ASSIGN_OR_RETURN(const float loss, model_->forward(batch));
    loss_sum += loss;
    const bool last = k + 1 == micro_batches;
    static const LayerGradReadyFn kNoHook;
    RM_RETURN_IF_ERROR(model_->backward(batch, last ? options_.on_layer_grad_ready : kNoHook,
                                        BackwardOptions{scale, k > 0}));
    report.samples += batch.size;
  }
  if (options_.reduce_gradients) {
    Status reduced = options_.reduce_gradients(model_->deviceGrads());
    if (!reduced.isOk()) {
      return Status(reduced.code(), "step " + std::to_string(step_ + 1) +
                                        ": gradient reduction failed: " + reduced.message());
    }
  }
  RM_ASSIGN_OR_RETURN(report.grad_norm, model_->clipGradNorm(config_.clip_norm));
  RM_ASSIGN_OR_RETURN(report.lr, optimizer_->apply());
  ++step_;

  report.step = step_;
  report.epoch_end = sampler_.batchesLeftInEpoch() == 0;
  report.loss = loss_sum / static_cast<double>(micro_batches);
  report.step_time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  report.samples_per_sec =
      report.step_time_s > 0.0 ? static_cast<double>(report.samples) / report.step_time_s : 0.0;
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
  total_steps_ = internal::totalStepsAfterResume(config_, sampler_, step_, total_steps_);
  return Status::ok();
}

Result<uint64_t> GpuTrainer::paramChecksum() const {
  std::vector<float> params(model_->numParams());
  RM_RETURN_IF_ERROR(model_->copyParamsTo(params));
  return train::paramChecksum(params);
}

}  // namespace ringmaster::train
