#include "ringmaster/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "train/trainer_common.h"

namespace ringmaster::train {
namespace {

using Clock = std::chrono::steady_clock;

// The data set the config names, whole (the held-out part not yet split off). `idx`: the IDX
// files of kind idx (the spec's) or fashion_mnist (the package's).
Result<Dataset> loadAll(const NativeConfig& config, const IdxSplitFiles& idx) {
  const DatasetConfig& d = config.dataset;
  switch (d.kind) {
    case DatasetKind::kSynthetic: {
      SyntheticOptions options;
      options.task = config.model.task;
      options.samples = d.samples;
      options.features = d.features;
      options.classes = d.classes;
      options.seed = d.seed;
      return makeSynthetic(options);
    }
    case DatasetKind::kDigits:
      return loadDigits();
    case DatasetKind::kIdx:
    case DatasetKind::kFashionMnist:
      return loadIdx(idx.train);
    case DatasetKind::kCsv:
      break;
  }
  CsvOptions options;
  options.path = d.path;
  options.label_column = d.label_column;
  options.task = config.model.task;
  return loadCsv(options);
}

}  // namespace

Result<Split> loadData(const NativeConfig& config) {
  const DatasetConfig& d = config.dataset;
  IdxSplitFiles files{{d.images, d.labels}, {d.test_images, d.test_labels}};
  if (d.kind == DatasetKind::kFashionMnist) {
    RM_ASSIGN_OR_RETURN(files, fashionMnistFiles());
  }
  RM_ASSIGN_OR_RETURN(Dataset all, loadAll(config, files));
  Split split;
  if (d.hasTestSet()) {
    RM_ASSIGN_OR_RETURN(split.eval, loadIdx(files.test));
    if (split.eval.features != all.features) {
      return invalidArgument("dataset: the test images have " +
                             std::to_string(split.eval.features) +
                             " pixels each, the training images " + std::to_string(all.features));
    }
    all.classes = split.eval.classes = std::max(all.classes, split.eval.classes);
    split.train = std::move(all);
  } else {
    RM_ASSIGN_OR_RETURN(split, splitTrainEval(all, d.eval_fraction, d.seed));
  }
  if (d.kind != DatasetKind::kSynthetic && d.standardize) {
    const bool images = d.kind == DatasetKind::kIdx || d.kind == DatasetKind::kFashionMnist;
    const Standardizer standardizer =
        images ? fitGlobalStandardizer(split.train) : fitStandardizer(split.train);
    applyStandardizer(standardizer, &split.train);
    applyStandardizer(standardizer, &split.eval);
  }
  return split;
}

Result<Trainer> Trainer::create(const NativeConfig& config, TrainerOptions options) {
  RM_ASSIGN_OR_RETURN(Split data, loadData(config));
  return create(config, std::move(data), std::move(options));
}

Result<Trainer> Trainer::create(const NativeConfig& config, Split data, TrainerOptions options) {
  RM_RETURN_IF_ERROR(internal::checkTrainerInputs(config, data));
  RM_ASSIGN_OR_RETURN(Mlp model, Mlp::create(internal::mlpOptionsFor(config, data.train)));
  model.initialize(config.seed);
  RM_ASSIGN_OR_RETURN(DistributedSampler sampler,
                      internal::makeSampler(config, data.train, options));
  const uint64_t total_steps = internal::totalSteps(config, sampler);
  OptimizerOptions optimizer_options = config.optimizer;
  optimizer_options.total_steps = total_steps;
  RM_ASSIGN_OR_RETURN(Optimizer optimizer, Optimizer::create(optimizer_options, model.numParams()));
  return Trainer(config, std::move(data), std::move(options), std::move(model),
                 std::move(optimizer), std::move(sampler), total_steps);
}

Trainer::Trainer(const NativeConfig& config, Split data, TrainerOptions options, Mlp model,
                 Optimizer optimizer, DistributedSampler sampler, uint64_t total_steps)
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

Result<StepReport> Trainer::step() {
  const Clock::time_point start = Clock::now();
  const internal::StepPlan plan = internal::planStep(config_, options_, sampler_);
  StepReport report;
  report.epoch = sampler_.position().epoch;
  double loss_sum = 0.0;
  for (size_t k = 0; k < plan.micro_batches; ++k) {
    sampler_.nextBatch(&indices_);
    const Batch batch = batch_.gather(data_.train, indices_);
    loss_sum += model_.forward(batch);
    const bool last = k + 1 == plan.micro_batches && !plan.local_sgd;
    static const LayerGradReadyFn kNoHook;
    model_.backward(batch, last ? options_.on_layer_grad_ready : kNoHook,
                    BackwardOptions{plan.scale, k > 0});
    report.samples += batch.size;
  }
  if (options_.remote_update) {
    report.grad_norm = globalNorm(model_.grads());
    Result<double> lr = options_.remote_update(model_.params(), model_.grads());
    if (!lr.isOk()) return internal::stepFailed(lr.status(), step_ + 1, "parameter server update");
    report.lr = *lr;
  } else if (options_.reduce_gradients && !plan.local_sgd) {
    Status reduced = options_.reduce_gradients(model_.grads());
    if (!reduced.isOk()) return internal::stepFailed(reduced, step_ + 1, "gradient reduction");
  }
  if (!options_.remote_update) {
    if (config_.clip_norm > 0.0) {
      report.grad_norm = clipGradNorm(model_.grads(), config_.clip_norm);
      report.lr = optimizer_.apply(model_.params(), model_.grads());
    } else {  // the norm is only reported: measured in the update
      double squares = 0.0;
      report.lr = optimizer_.apply(model_.params(), model_.grads(), &squares);
      report.grad_norm = std::sqrt(squares);
    }
  }
  ++step_;
  report.step = step_;
  report.epoch_end = sampler_.batchesLeftInEpoch() == 0;
  if (plan.local_sgd && options_.average_params &&
      internal::averagingDue(config_, step_, total_steps_, evaluationDue(report))) {
    Status averaged = options_.average_params(model_.params());
    if (!averaged.isOk()) return internal::stepFailed(averaged, step_, "parameter averaging");
    report.averaged = true;
  }

  report.loss = loss_sum / static_cast<double>(plan.micro_batches);
  report.step_time_s = std::chrono::duration<double>(Clock::now() - start).count();
  report.samples_per_sec =
      report.step_time_s > 0.0 ? static_cast<double>(report.samples) / report.step_time_s : 0.0;
  return report;
}

EvalReport Trainer::evaluate() { return evalReport(evaluateShare(0, 1)); }

EvalTotals Trainer::evaluateShare(int shard, int shards) {
  const Dataset& eval = data_.eval;
  const size_t begin = eval.size() * static_cast<size_t>(shard) / static_cast<size_t>(shards);
  const size_t end = eval.size() * static_cast<size_t>(shard + 1) / static_cast<size_t>(shards);
  if (end <= begin) return {};
  return model_.evaluate(eval.x.data() + begin * eval.features, eval.y.data() + begin, end - begin,
                         std::max<size_t>(config_.batch_size, 256));
}

EvalReport Trainer::evalReport(const EvalTotals& totals) const {
  return internal::evalReport(config_, totals, step_, sampler_.position().epoch);
}

bool Trainer::evaluationDue(const StepReport& report) const {
  return internal::evaluationDue(config_, report, total_steps_);
}

CheckpointState Trainer::checkpointState() const {
  CheckpointState state;
  state.step = step_;
  state.sampler = sampler_.position();
  state.epoch = state.sampler.epoch;
  state.world_size = static_cast<uint32_t>(options_.world_size);
  state.batch_size = config_.batch_size;
  const std::span<const float> params = model_.params();
  state.params.assign(params.begin(), params.end());
  state.optimizer_state = optimizer_.serializeState();
  return state;
}

Status Trainer::restore(const CheckpointState& state) {
  RM_RETURN_IF_ERROR(internal::checkCheckpointShape(state, model_.numParams(), config_, options_));
  Optimizer optimizer = optimizer_;
  RM_RETURN_IF_ERROR(optimizer.restoreState(state.optimizer_state));
  if (optimizer.step() != state.step) {
    return invalidArgument("checkpoint: optimizer state at step " +
                           std::to_string(optimizer.step()) + ", checkpoint at step " +
                           std::to_string(state.step));
  }
  RM_RETURN_IF_ERROR(sampler_.restore(state.sampler, static_cast<int>(state.world_size)));
  optimizer_ = std::move(optimizer);
  std::copy(state.params.begin(), state.params.end(), model_.params().begin());
  model_.zeroGrads();
  step_ = state.step;
  total_steps_ = internal::totalStepsAfterResume(config_, sampler_, step_, total_steps_);
  return Status::ok();
}

uint64_t Trainer::paramChecksum() const { return train::paramChecksum(model_.params()); }

Status Trainer::run(const Callbacks& callbacks, const std::atomic<bool>* stop) {
  const std::string& dir =
      options_.checkpoint_dir.empty() ? config_.checkpoint.dir : options_.checkpoint_dir;
  const uint64_t every = config_.checkpoint.every_steps;
  const bool checkpoints = options_.rank == 0 && !dir.empty() && every > 0;
  uint64_t last_saved = step_;
  while (!done()) {
    if (stop != nullptr && stop->load(std::memory_order_relaxed)) {
      return Status(ErrorCode::kCancelled, "stopped at step " + std::to_string(step_));
    }
    RM_ASSIGN_OR_RETURN(StepReport report, step());
    if (callbacks.on_step) callbacks.on_step(report);
    if (evaluationDue(report)) {
      const EvalReport eval = evaluate();
      if (callbacks.on_eval) callbacks.on_eval(eval);
    }
    if (checkpoints && (step_ % every == 0 || done()) && last_saved != step_) {
      RM_RETURN_IF_ERROR(saveCheckpoint(dir, checkpointState(), config_.checkpoint.keep));
      last_saved = step_;
    }
  }
  return Status::ok();
}

}  // namespace ringmaster::train
