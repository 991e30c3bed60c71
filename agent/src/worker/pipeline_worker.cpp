#include "pipeline_worker.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "ringmaster/train/checkpoint.h"
#include "ringmaster/train/compression.h"
#include "worker/checkpoint_writer.h"
#include "worker/metric_line.h"
#include "worker/stop_vote.h"

namespace ringmaster::agent {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Message tags: the kind in the top byte, the micro-batch (or evaluation chunk) below, so that a
// message can only ever match the receive it was meant for.
enum TagKind : uint32_t { kActivations = 1, kGradient = 2, kEvalActivations = 3 };
uint32_t tagOf(TagKind kind, size_t index) {
  return (static_cast<uint32_t>(kind) << 24) | static_cast<uint32_t>(index & 0xFFFFFF);
}

}  // namespace

Result<PipelinePlacement> pipelinePlacement(int rank, int world_size, size_t stages) {
  if (stages == 0 || world_size <= 0 || world_size % static_cast<int>(stages) != 0) {
    return invalidArgument("native.strategy.pipeline.stages: " + std::to_string(stages) +
                           " stages do not divide world_size " + std::to_string(world_size) +
                           " (world_size = stages x data-parallel replicas)");
  }
  if (rank < 0 || rank >= world_size) {
    return invalidArgument("pipeline: rank " + std::to_string(rank) + " outside world_size " +
                           std::to_string(world_size));
  }
  PipelinePlacement placement;
  placement.stages = static_cast<int>(stages);
  placement.replicas = world_size / placement.stages;
  placement.stage = rank % placement.stages;
  placement.replica = rank / placement.stages;
  return placement;
}

Result<PipelineTrainer> PipelineTrainer::create(const train::NativeConfig& config,
                                                train::Split data,
                                                const PipelinePlacement& placement,
                                                comm::Communicator* world,
                                                comm::Communicator* stage_group) {
  if (config.grad_accumulation != 1) {
    return invalidArgument(
        "native.grad_accumulation: a pipeline splits each batch into micro_batches already");
  }
  if ((config.epochs == 0) == (config.steps == 0)) {
    return invalidArgument("native: exactly one of epochs or steps must be positive");
  }
  if (data.train.size() == 0) return invalidArgument("dataset: the training split is empty");
  if (placement.stages * placement.replicas > 1 && world == nullptr) {
    return invalidArgument("pipeline: several ranks need a communicator");
  }
  if (placement.replicas > 1 && stage_group == nullptr) {
    return invalidArgument("pipeline: data-parallel replicas need a stage-group communicator");
  }
  // The full model as a single rank would build it, so that every stage starts from its slice of
  // the same initialisation.
  train::MlpOptions options;
  options.inputs = data.train.features;
  options.hidden = config.model.hidden;
  options.activation = config.model.activation;
  options.task = config.model.task;
  options.classes = data.train.classes;
  RM_ASSIGN_OR_RETURN(train::Mlp full, train::Mlp::create(options));
  full.initialize(config.seed);
  RM_ASSIGN_OR_RETURN(std::vector<train::StageRange> ranges,
                      train::partitionLayers(full.layers(), static_cast<size_t>(placement.stages)));
  RM_ASSIGN_OR_RETURN(train::PipelineStage stage,
                      train::PipelineStage::create(full, ranges, placement.stage));

  train::SamplerOptions sampler_options;
  sampler_options.dataset_size = data.train.size();
  sampler_options.rank = placement.replica;
  sampler_options.world_size = placement.replicas;
  sampler_options.batch_size = config.batch_size;
  sampler_options.seed = config.seed;
  RM_ASSIGN_OR_RETURN(train::DistributedSampler sampler,
                      train::DistributedSampler::create(sampler_options));
  const uint64_t total_steps =
      config.steps > 0 ? config.steps : config.epochs * sampler.batchesPerEpoch();
  train::OptimizerOptions optimizer_options = config.optimizer;
  optimizer_options.total_steps = total_steps;
  RM_ASSIGN_OR_RETURN(train::Optimizer optimizer,
                      train::Optimizer::create(optimizer_options, stage.model().numParams()));
  return PipelineTrainer(config, std::move(data), placement, world, stage_group, std::move(stage),
                         std::move(optimizer), std::move(sampler), total_steps);
}

PipelineTrainer::PipelineTrainer(const train::NativeConfig& config, train::Split data,
                                 const PipelinePlacement& placement, comm::Communicator* world,
                                 comm::Communicator* stage_group, train::PipelineStage stage,
                                 train::Optimizer optimizer, train::DistributedSampler sampler,
                                 uint64_t total_steps)
    : config_(config),
      data_(std::move(data)),
      placement_(placement),
      world_(world),
      stage_group_(stage_group),
      stage_(std::move(stage)),
      optimizer_(std::move(optimizer)),
      sampler_(std::move(sampler)),
      total_steps_(total_steps) {
  const size_t batch = config_.batch_size;
  if (stage_.isFirst()) features_.resize(batch * data_.train.features);
  if (stage_.isLast()) labels_.resize(batch);
  output_grad_.resize(batch * stage_.outputWidth());
  input_grad_.resize(batch * stage_.inputWidth());
}

Status PipelineTrainer::sendTo(std::span<const float> data, int peer_stage, uint32_t tag,
                               PipelineStepReport* report) {
  return exchange(data.data(), nullptr, data.size(), peer_stage, tag, report);
}

Status PipelineTrainer::recvFrom(std::span<float> data, int peer_stage, uint32_t tag,
                                 PipelineStepReport* report) {
  return exchange(nullptr, data.data(), data.size(), peer_stage, tag, report);
}

// One body times and counts both directions: sends `out` when given, else receives into `in`.
Status PipelineTrainer::exchange(const float* out, float* in, size_t count, int peer_stage,
                                 uint32_t tag, PipelineStepReport* report) {
  const Clock::time_point start = Clock::now();
  const int peer = placement_.rankOf(peer_stage);
  const size_t bytes = count * sizeof(float);
  const bool send = out != nullptr;
  Status status = send ? world_->send(out, bytes, peer, tag) : world_->recv(in, bytes, peer, tag);
  if (report) {
    report->bubble_s += secondsSince(start);
    (send ? report->bytes_sent : report->bytes_received) += static_cast<double>(bytes);
  }
  if (!status.isOk()) {
    return Status(status.code(), std::string(send ? "sending to" : "receiving from") +
                                     " pipeline stage " + std::to_string(peer_stage) + " (rank " +
                                     std::to_string(peer) + "): " + status.message());
  }
  return Status::ok();
}

Result<PipelineStepReport> PipelineTrainer::step() {
  const Clock::time_point start = Clock::now();
  if (sampler_.batchesLeftInEpoch() == 0) sampler_.startEpoch(sampler_.position().epoch + 1);
  PipelineStepReport report;
  report.step.epoch = sampler_.position().epoch;
  sampler_.nextBatch(&indices_);
  const size_t batch = indices_.size();
  const size_t f = data_.train.features;
  for (size_t i = 0; i < batch; ++i) {
    if (stage_.isFirst()) {
      std::memcpy(features_.data() + i * f, data_.train.x.data() + size_t{indices_[i]} * f,
                  f * sizeof(float));
    }
    if (stage_.isLast()) labels_[i] = data_.train.y[indices_[i]];
  }
  const std::vector<size_t> sizes =
      train::splitMicroBatches(batch, config_.strategy.pipeline.micro_batches);
  std::vector<size_t> starts(sizes.size(), 0);
  for (size_t m = 1; m < sizes.size(); ++m) starts[m] = starts[m - 1] + sizes[m - 1];
  report.micro_batches = sizes.size();
  if (inputs_.size() < sizes.size()) inputs_.resize(sizes.size());

  const size_t in_width = stage_.inputWidth();
  const size_t out_width = stage_.outputWidth();
  const int s = placement_.stage;
  double loss = 0.0;
  bool first_backward = true;
  using K = train::PipelineOpKind;
  for (const train::PipelineOp& op :
       train::gpipeSchedule(stage_.stage(), stage_.stages(), sizes.size())) {
    const size_t m = op.micro_batch;
    const size_t rows = sizes[m];
    switch (op.kind) {
      case K::kRecvActivations:
        inputs_[m].resize(rows * in_width);
        RM_RETURN_IF_ERROR(recvFrom(inputs_[m], s - 1, tagOf(kActivations, m), &report));
        break;
      case K::kForward: {
        const float* input =
            stage_.isFirst() ? features_.data() + starts[m] * f : inputs_[m].data();
        const float* targets = stage_.isLast() ? labels_.data() + starts[m] : nullptr;
        const float l = stage_.forward(m, input, targets, rows);
        loss += static_cast<double>(l) * static_cast<double>(rows) / static_cast<double>(batch);
        break;
      }
      case K::kSendActivations:
        RM_RETURN_IF_ERROR(sendTo(stage_.outputs(m), s + 1, tagOf(kActivations, m), &report));
        break;
      case K::kRecvGradient:
        RM_RETURN_IF_ERROR(
            recvFrom({output_grad_.data(), rows * out_width}, s + 1, tagOf(kGradient, m), &report));
        break;
      case K::kBackward:
        // b_m / B: the micro-batches' mean-loss gradients add up to the batch mean's.
        stage_.backward(m, stage_.isLast() ? nullptr : output_grad_.data(),
                        stage_.isFirst() ? nullptr : input_grad_.data(),
                        static_cast<float>(rows) / static_cast<float>(batch), !first_backward);
        first_backward = false;
        break;
      case K::kSendGradient:
        RM_RETURN_IF_ERROR(
            sendTo({input_grad_.data(), rows * in_width}, s - 1, tagOf(kGradient, m), &report));
        break;
    }
  }

  const std::span<float> grads = stage_.model().grads();
  if (stage_group_ != nullptr) {
    const Clock::time_point reduce_start = Clock::now();
    Status reduced = stage_group_->allreduce(grads.data(), grads.size(), comm::ReduceOp::kAverage);
    report.allreduce_s = secondsSince(reduce_start);
    if (!reduced.isOk()) {
      return Status(reduced.code(),
                    "step " + std::to_string(step_ + 1) + ": averaging stage " + std::to_string(s) +
                        "'s gradients over its replicas failed: " + reduced.message());
    }
    const double ring = train::allreduceBytesSent(grads.size(), sizeof(float), placement_.replicas);
    report.bytes_sent += ring;
    report.bytes_received += ring;  // a ring receives what it sends
  }
  RM_RETURN_IF_ERROR(clipByGlobalNorm(&report.step));
  report.step.lr = optimizer_.apply(stage_.model().params(), grads);
  ++step_;
  report.step.step = step_;
  report.step.epoch_end = sampler_.batchesLeftInEpoch() == 0;
  report.step.loss = stage_.isLast() ? loss : 0.0;
  report.step.samples = batch;
  report.step.step_time_s = secondsSince(start);
  report.step.samples_per_sec =
      report.step.step_time_s > 0.0 ? static_cast<double>(batch) / report.step.step_time_s : 0.0;
  return report;
}

// The global norm over all stages (each replica's stage holds the same averaged gradient, so the
// world's sum of squares counts every stage D times). Only with clip_norm > 0: it costs an
// allreduce.
Status PipelineTrainer::clipByGlobalNorm(train::StepReport* report) {
  if (config_.clip_norm <= 0.0) return Status::ok();
  const std::span<float> grads = stage_.model().grads();
  const double own = train::globalNorm(grads);
  float squares = static_cast<float>(own * own);
  if (world_ != nullptr) {
    RM_RETURN_IF_ERROR(world_->allreduce(&squares, 1, comm::ReduceOp::kSum));
    squares /= static_cast<float>(placement_.replicas);
  }
  const double norm = std::sqrt(static_cast<double>(squares));
  report->grad_norm = norm;
  if (norm > config_.clip_norm) {
    const auto factor = static_cast<float>(config_.clip_norm / (norm + 1e-6));
    for (float& g : grads) g *= factor;
  }
  return Status::ok();
}

Result<train::EvalReport> PipelineTrainer::evaluate() {
  train::EvalReport result;
  result.step = step_;
  result.epoch = sampler_.position().epoch;
  const train::Dataset& eval = data_.eval;
  const size_t chunk = std::max<size_t>(config_.batch_size, 256);
  const size_t f = eval.features;
  const int s = placement_.stage;
  train::EvalTotals totals;
  std::vector<float> input;
  size_t index = 0;
  for (size_t begin = 0; begin < eval.size(); begin += chunk, ++index) {
    const size_t rows = std::min(chunk, eval.size() - begin);
    const float* in = eval.x.data() + begin * f;
    if (!stage_.isFirst()) {
      input.resize(rows * stage_.inputWidth());
      RM_RETURN_IF_ERROR(recvFrom(input, s - 1, tagOf(kEvalActivations, index), nullptr));
      in = input.data();
    }
    const float* targets = stage_.isLast() ? eval.y.data() + begin : nullptr;
    const float loss = stage_.forward(0, in, targets, rows);
    if (!stage_.isLast()) {
      RM_RETURN_IF_ERROR(sendTo(stage_.outputs(0), s + 1, tagOf(kEvalActivations, index), nullptr));
      continue;
    }
    totals.loss_sum += static_cast<double>(loss) * static_cast<double>(rows);
    totals.samples += rows;
    if (config_.model.task != train::Task::kClassification) continue;
    const std::span<const float> logits = stage_.outputs(0);
    const size_t classes = stage_.outputWidth();
    for (size_t i = 0; i < rows; ++i) {
      const float* row = logits.data() + i * classes;
      const auto best = static_cast<size_t>(std::max_element(row, row + classes) - row);
      if (static_cast<float>(best) == targets[i]) ++totals.correct;
    }
  }
  if (totals.samples == 0) return result;
  const auto n = static_cast<double>(totals.samples);
  result.samples = totals.samples;
  result.loss = totals.loss_sum / n;
  if (config_.model.task == train::Task::kClassification) {
    result.accuracy = static_cast<double>(totals.correct) / n;
  } else {
    result.mse = result.loss;
  }
  return result;
}

bool PipelineTrainer::evaluationDue(const train::StepReport& report) const {
  if (report.step >= total_steps_) return true;
  if (!report.epoch_end || config_.eval_every == 0) return false;
  return (report.epoch + 1) % config_.eval_every == 0;
}

uint64_t PipelineTrainer::paramChecksum() const {
  return train::paramChecksum(stage_.model().params());
}

train::CheckpointState PipelineTrainer::checkpointState() const {
  train::CheckpointState state;
  state.step = step_;
  state.sampler = sampler_.position();
  state.epoch = state.sampler.epoch;
  state.world_size = static_cast<uint32_t>(placement_.replicas);
  state.batch_size = config_.batch_size;
  const std::span<const float> params = stage_.model().params();
  state.params.assign(params.begin(), params.end());
  state.optimizer_state = optimizer_.serializeState();
  return state;
}

Status PipelineTrainer::restore(const train::CheckpointState& state) {
  const std::string stage = "pipeline stage " + std::to_string(placement_.stage);
  if (state.params.size() != stage_.model().numParams()) {
    return invalidArgument("checkpoint: holds " + std::to_string(state.params.size()) +
                           " parameters, " + stage + " has " +
                           std::to_string(stage_.model().numParams()));
  }
  if (state.world_size != static_cast<uint32_t>(placement_.replicas) ||
      state.batch_size != config_.batch_size) {
    return invalidArgument("checkpoint: written with " + std::to_string(state.world_size) +
                           " replicas and batch_size " + std::to_string(state.batch_size) +
                           ", this run has " + std::to_string(placement_.replicas) + " and " +
                           std::to_string(config_.batch_size) +
                           "; the pipeline's data order cannot continue");
  }
  train::Optimizer optimizer = optimizer_;
  RM_RETURN_IF_ERROR(optimizer.restoreState(state.optimizer_state));
  if (optimizer.step() != state.step) {
    return invalidArgument("checkpoint: optimizer state at step " +
                           std::to_string(optimizer.step()) + ", checkpoint at step " +
                           std::to_string(state.step));
  }
  RM_RETURN_IF_ERROR(sampler_.restore(state.sampler));
  optimizer_ = std::move(optimizer);
  std::copy(state.params.begin(), state.params.end(), stage_.model().params().begin());
  stage_.model().zeroGrads();
  step_ = state.step;
  return Status::ok();
}

namespace {

// Every rank continues from the newest step that all of them have checkpointed (each its own
// stage, in its own dir); from the start when any has none.
Status resumePipeline(PipelineTrainer& trainer, const WorkerOptions& options,
                      comm::Communicator* world, std::FILE* log) {
  auto loaded = train::loadLatestCheckpoint(options.checkpoint_dir);
  if (loaded.isOk()) {
    for (const auto& skipped : loaded->skipped) {
      std::fprintf(log, "skipped checkpoint %s\n", skipped.c_str());
    }
  }
  const uint64_t own = loaded.isOk() ? loaded->state.step : 0;
  uint64_t common = own;
  if (world != nullptr) {
    std::vector<uint64_t> steps(static_cast<size_t>(world->size()));
    RM_RETURN_IF_ERROR(world->allgather(&own, steps.data(), sizeof(uint64_t)));
    common = *std::min_element(steps.begin(), steps.end());
  }
  if (common == 0) return Status::ok();
  train::CheckpointState state;
  std::string path = loaded->path;
  if (common == own) {
    state = std::move(loaded->state);
  } else {
    path = train::checkpointPath(options.checkpoint_dir, common);
    auto older = train::readCheckpoint(path);
    if (!older.isOk()) {
      return Status(older.status().code(), "resume: every rank has step " + std::to_string(common) +
                                               ", but " + older.status().message());
    }
    state = std::move(*older);
  }
  RM_RETURN_IF_ERROR(trainer.restore(state));
  std::fprintf(log, "resumed from %s (step %llu)\n", path.c_str(),
               static_cast<unsigned long long>(common));
  return Status::ok();
}

}  // namespace

Status runPipelineRank(const train::NativeConfig& config, const WorkerOptions& options,
                       comm::KeyValueStore* store, comm::Communicator* world,
                       job::PhaseBoard& phase, std::FILE* out, std::FILE* log) {
  RM_ASSIGN_OR_RETURN(
      const PipelinePlacement placement,
      pipelinePlacement(options.rank, options.world_size, config.strategy.pipeline.stages));
  if (world != nullptr && world->backend() != "gloo") {
    return invalidArgument("native.strategy.pipeline runs on the CPU (Gloo) only; got backend " +
                           std::string(world->backend()));
  }
  // The D ranks of this stage average their gradients on a communicator of their own: its own
  // rank numbering (the replica) and store prefix on the job's store.
  std::unique_ptr<comm::Communicator> stage_group;
  if (placement.replicas > 1) {
    comm::GlooOptions gloo;
    gloo.rank = placement.replica;
    gloo.size = placement.replicas;
    gloo.store = store;
    gloo.storePrefix = "attempt-" + std::to_string(options.attempt) + "/gloo-stage-" +
                       std::to_string(placement.stage) + "/";
    gloo.hostname = options.bind_address;
    RM_ASSIGN_OR_RETURN(stage_group, comm::createGlooCommunicator(gloo));
  }
  RM_ASSIGN_OR_RETURN(train::Split data, train::loadData(config));
  RM_ASSIGN_OR_RETURN(
      PipelineTrainer trainer,
      PipelineTrainer::create(config, std::move(data), placement, world, stage_group.get()));
  if (!options.checkpoint_dir.empty()) {
    RM_RETURN_IF_ERROR(resumePipeline(trainer, options, world, log));
  }
  const train::StageRange range = trainer.stage().range();
  std::fprintf(log,
               "rank %d: pipeline stage %d of %d (layers %zu..%zu, %zu parameters), replica %d of "
               "%d, %zu micro-batches\n",
               options.rank, placement.stage, placement.stages, range.first, range.end - 1,
               trainer.stage().model().numParams(), placement.replica, placement.replicas,
               config.strategy.pipeline.micro_batches);

  std::optional<CheckpointWriter> checkpoints;
  if (!options.checkpoint_dir.empty()) {
    checkpoints.emplace(options.checkpoint_dir, config.checkpoint.keep);
  }
  if (options.stop) options.stop->store(kStopAsks);
  while (!trainer.done()) {
    phase.enter(job::RankPhase::kCompute, trainer.completedSteps() + 1);
    RM_ASSIGN_OR_RETURN(const PipelineStepReport report, trainer.step());
    const train::StepReport& step = report.step;
    if (step.step % options.metrics_every == 0 || trainer.done()) {
      MetricLine line(step.step);
      if (trainer.stage().isLast()) line.add("loss", step.loss);
      line.add("lr", step.lr)
          .add("samples_per_sec", step.samples_per_sec)
          .add("step_time", step.step_time_s)
          .add("comm_time", report.bubble_s + report.allreduce_s)
          .add("bubble_time", report.bubble_s)
          .add("bubble_fraction", step.step_time_s > 0.0 ? report.bubble_s / step.step_time_s : 0.0)
          .add("bytes_sent", report.bytes_sent)
          .add("bytes_received", report.bytes_received)
          .add("pipeline_stage", placement.stage);
      line.print(out);
    }
    if (trainer.evaluationDue(step)) {
      phase.enter(job::RankPhase::kEvaluation);
      RM_ASSIGN_OR_RETURN(const train::EvalReport eval, trainer.evaluate());
      if (trainer.stage().isLast()) {
        MetricLine(step.step).addEval(eval, step.epoch, config.model.task).print(out);
      }
    }
    RM_ASSIGN_OR_RETURN(const bool stopping,
                        stopVote(options, world, phase, step.step, trainer.done()));
    if (stopping) options.stop->store(kStopAgreed);  // no deadline for the checkpoint
    const uint64_t every = config.checkpoint.every_steps;
    if (checkpoints && ((every > 0 && step.step % every == 0) || trainer.done() || stopping)) {
      phase.enter(job::RankPhase::kCheckpoint);
      RM_RETURN_IF_ERROR(checkpoints->save([&] { return trainer.checkpointState(); }));
    }
    // The last one is on disk before the rank says it is done or stopped.
    if (checkpoints && (trainer.done() || stopping)) RM_RETURN_IF_ERROR(checkpoints->wait());
    if (checkpoints) reportWritten(*checkpoints, out);
    if (stopping) {
      std::fprintf(log, "rank %d stopped at step %llu, as asked (SIGTERM)%s\n", options.rank,
                   static_cast<unsigned long long>(step.step),
                   options.checkpoint_dir.empty() ? "" : ", with a checkpoint there");
      if (world) static_cast<void>(world->barrier());
      return Status(ErrorCode::kCancelled, "stopped at step " + std::to_string(step.step));
    }
  }
  // The checksum of this stage's parameters: equal on the D replicas of a stage.
  const uint64_t checksum = trainer.paramChecksum();
  MetricLine(trainer.completedSteps())
      .addInteger("param_checksum", checksum & ((1ull << 52) - 1))
      .print(out);
  std::fprintf(log, "rank %d done: %llu steps, stage %d parameter checksum %s\n", options.rank,
               static_cast<unsigned long long>(trainer.completedSteps()), placement.stage,
               train::formatChecksum(checksum).c_str());
  phase.enter(job::RankPhase::kBarrier);
  if (stage_group) RM_RETURN_IF_ERROR(stage_group->barrier());
  if (world) RM_RETURN_IF_ERROR(world->barrier());
  return Status::ok();
}

}  // namespace ringmaster::agent
