#include "native_worker.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "gradient_sync.h"
#include "parameter_server.h"
#include "pipeline_worker.h"
#include "ringmaster/comm/communicator.h"
#include "ringmaster/job/rank_phase.h"
#include "ringmaster/train/checkpoint.h"
#include "ringmaster/train/gpu_model.h"
#include "ringmaster/train/trainer.h"
#include "strategy_sync.h"
#include "worker/checkpoint_writer.h"
#include "worker/link_test.h"
#include "worker/metric_line.h"
#include "worker/stop_vote.h"

namespace ringmaster::agent {
namespace {

Result<std::string> readFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return notFound("cannot read the native config " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

constexpr std::chrono::milliseconds kAgreementTimeout = std::chrono::minutes(5);

std::string attemptPrefix(const WorkerOptions& options) {
  return "attempt-" + std::to_string(options.attempt) + "/";
}

// Every rank publishes `value` under "<attempt>/<topic>/<rank>" in the rendezvous store and reads
// every rank's, in rank order. Small host-side agreements (the backend, the step to resume from)
// go this way rather than through the communicator: an NCCL communicator only reduces device
// memory, and the backend must be agreed before there is a communicator at all.
Result<std::vector<std::string>> exchange(const WorkerOptions& options, comm::KeyValueStore* store,
                                          const std::string& topic, const std::string& value) {
  if (options.world_size <= 1) return std::vector<std::string>{value};
  if (!store) return invalidArgument("a rendezvous store is needed for world_size > 1");
  const std::string prefix = attemptPrefix(options) + topic + "/";
  RM_RETURN_IF_ERROR(store->set(prefix + std::to_string(options.rank), value));
  std::vector<std::string> values;
  for (int rank = 0; rank < options.world_size; ++rank) {
    RM_ASSIGN_OR_RETURN(std::string theirs,
                        store->get(prefix + std::to_string(rank), kAgreementTimeout));
    values.push_back(std::move(theirs));
  }
  return values;
}

// Where this rank trains: on the CPU with Gloo, or on CUDA device `device` with NCCL.
struct Placement {
  bool gpu = false;
  int device = 0;
};

// The CUDA device of this rank among those it sees: the agent shows a native rank one GPU of its
// own (device 0); a job that sets CUDA_VISIBLE_DEVICES itself shows every rank the same list, and
// LOCAL_RANK picks, as under torchrun. Nothing when there is none for this rank.
std::optional<int> ownDevice(const WorkerOptions& options, int visible) {
  if (visible == 1) return 0;
  if (options.local_rank < visible) return options.local_rank;
  return std::nullopt;
}

// gloo: the CPU. nccl: this rank's GPU (ownDevice), or a clear error without one.
// auto: the GPU when every rank has one of its own (and, with several ranks, the NCCL backend is
// built), otherwise the CPU everywhere: one rank on Gloo and another on NCCL would never meet.
Result<Placement> choosePlacement(const WorkerOptions& options, comm::KeyValueStore* store,
                                  std::FILE* log) {
  if (options.backend != "auto" && options.backend != "gloo" && options.backend != "nccl") {
    return invalidArgument("--backend: expected auto, gloo or nccl, got '" + options.backend + "'");
  }
  if (options.backend == "gloo") return Placement{};
  const Result<int> devices = train::gpuCount();
  const std::optional<int> own = devices.isOk() ? ownDevice(options, *devices) : std::nullopt;
  if (options.backend == "nccl") {
    if (!devices.isOk()) {
      return Status(devices.status().code(),
                    "backend nccl needs a CUDA device for the native trainer's GPU path: " +
                        devices.status().message());
    }
    if (!own) {
      return invalidArgument("backend nccl: rank " + std::to_string(options.rank) +
                             " (local rank " + std::to_string(options.local_rank) + ") sees " +
                             std::to_string(*devices) + " CUDA devices, none of its own");
    }
    return Placement{true, *own};
  }
  // Usable: a GPU of its own (NCCL refuses two ranks on one device), and NCCL when needed.
  const bool usable = own.has_value() && (options.world_size == 1 || comm::cudaDeviceCount() > 0);
  RM_ASSIGN_OR_RETURN(const std::vector<std::string> votes,
                      exchange(options, store, "gpu", usable ? "1" : "0"));
  const auto without = std::find(votes.begin(), votes.end(), "0");
  if (without != votes.end()) {
    if (options.world_size > 1) {
      std::fprintf(log, "backend auto: gloo on the CPU, rank %d has no usable GPU\n",
                   static_cast<int>(without - votes.begin()));
    }
    return Placement{};
  }
  return Placement{true, *own};
}

// What the communicator broadcasts at the start: host memory for Gloo, device memory for NCCL.
std::span<float> startingParams(train::Trainer& trainer) { return trainer.model().params(); }
std::span<float> startingParams(train::GpuTrainer& trainer) {
  return trainer.model().deviceParams();
}

// The checkpoint dirs of the ranks on this host, this rank's first. After an elastic restart a
// rank may have another number, and DDP ranks checkpoint the same state: any of them will do.
std::vector<std::string> hostCheckpointDirs(const std::string& own) {
  std::vector<std::string> dirs = {own};
  std::error_code ec;
  const auto parent = std::filesystem::path(own).parent_path();
  for (const auto& entry : std::filesystem::directory_iterator(parent, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && name.rfind("rank-", 0) == 0 && entry.path() != own) {
      dirs.push_back(entry.path().string());
    }
  }
  return dirs;
}

// Every rank continues from the same checkpoint: the newest step that all ranks have.
template <typename AnyTrainer>
Status resume(AnyTrainer& trainer, const WorkerOptions& options, comm::KeyValueStore* store,
              std::FILE* log) {
  const std::vector<std::string> dirs = hostCheckpointDirs(options.checkpoint_dir);
  std::optional<train::LoadedCheckpoint> newest;
  for (const std::string& dir : dirs) {
    auto loaded = train::loadLatestCheckpoint(dir);
    if (!loaded.isOk()) continue;
    for (const auto& skipped : loaded->skipped) {
      std::fprintf(log, "skipped checkpoint %s\n", skipped.c_str());
    }
    if (!newest || loaded->state.step > newest->state.step) newest = std::move(*loaded);
  }
  const uint64_t step = newest ? newest->state.step : 0;
  RM_ASSIGN_OR_RETURN(std::vector<std::string> steps,
                      exchange(options, store, "resume", std::to_string(step)));
  uint64_t common = step;
  for (const std::string& theirs : steps) {
    uint64_t value = 0;
    const auto [end, error] = std::from_chars(theirs.data(), theirs.data() + theirs.size(), value);
    if (error != std::errc() || end != theirs.data() + theirs.size()) {
      return protocolError("resume: a rank published '" + theirs + "' as its checkpoint step");
    }
    common = std::min(common, value);
  }
  if (common == 0) return Status::ok();  // no checkpoint here, or some rank has none
  if (common != step) {
    newest.reset();
    for (const std::string& dir : dirs) {
      auto older = train::readCheckpoint(train::checkpointPath(dir, common));
      if (!older.isOk()) continue;
      newest = train::LoadedCheckpoint{std::move(*older), train::checkpointPath(dir, common), {}};
      break;
    }
    if (!newest) {
      return notFound("resume: no checkpoint of step " + std::to_string(common) + " in " +
                      options.checkpoint_dir + " or its sibling rank dirs");
    }
  }
  RM_RETURN_IF_ERROR(trainer.restore(newest->state));
  std::fprintf(log, "resumed from %s (step %llu)\n", newest->path.c_str(),
               static_cast<unsigned long long>(common));
  return Status::ok();
}

// The held-out split evaluated by the ranks together: each its share, the totals summed, so an
// evaluation takes 1/world of the time it took when every rank evaluated all of it. The GPU
// trainer evaluates all of it on every rank; so do the ranks of a split whose counts a float
// could not sum exactly.
template <typename AnyTrainer>
Result<train::EvalReport> evaluate(AnyTrainer& trainer, comm::Communicator* comm) {
  if constexpr (std::is_same_v<AnyTrainer, train::Trainer>) {
    if (comm && comm->size() > 1 && trainer.data().eval.size() < (size_t{1} << 24)) {
      const train::EvalTotals share = trainer.evaluateShare(comm->rank(), comm->size());
      float sums[3] = {static_cast<float>(share.loss_sum), static_cast<float>(share.correct),
                       static_cast<float>(share.samples)};
      RM_RETURN_IF_ERROR(comm->allreduce(sums, 3, comm::ReduceOp::kSum));
      train::EvalTotals total;
      total.loss_sum = sums[0];
      total.correct = static_cast<size_t>(std::llround(sums[1]));
      total.samples = static_cast<size_t>(std::llround(sums[2]));
      return trainer.evalReport(total);
    }
  }
  return Result<train::EvalReport>(trainer.evaluate());
}

// One rank's run with either trainer (train::Trainer on the CPU, train::GpuTrainer): resume,
// agree on the starting parameters, train with metrics, evaluations and checkpoints, report the
// parameter checksum. The GPU trainer's evaluate(), checkpointState() and paramChecksum() can
// fail (CUDA errors), the CPU's cannot: Result<T>(...) takes either.
template <typename AnyTrainer>
Status runRank(AnyTrainer& trainer, const train::NativeConfig& config, const WorkerOptions& options,
               comm::KeyValueStore* store, comm::Communicator* comm, GradientSync* sync,
               const StrategySync& strategy, job::PhaseBoard& phase, std::FILE* out,
               std::FILE* log) {
  if (!options.checkpoint_dir.empty()) RM_RETURN_IF_ERROR(resume(trainer, options, store, log));
  // Rank 0's parameters are everyone's starting point (they agree already when seeded alike).
  if (comm) {
    phase.enter(job::RankPhase::kBroadcast, trainer.completedSteps() + 1);
    const std::span<float> params = startingParams(trainer);
    RM_RETURN_IF_ERROR(comm->broadcast(params.data(), params.size_bytes(), 0));
  }

  const uint64_t checkpoint_every = config.checkpoint.every_steps;
  std::optional<CheckpointWriter> checkpoints;
  if (!options.checkpoint_dir.empty()) {
    checkpoints.emplace(options.checkpoint_dir, config.checkpoint.keep);
  }
  // From here a SIGTERM asks the ranks to stop together (NCCL cannot take the vote's host float).
  const bool can_vote = !comm || comm->backend() == "gloo";
  if (options.stop && can_vote) options.stop->store(kStopAsks);
  bool overlap_told = false;
  while (!trainer.done()) {
    phase.enter(job::RankPhase::kCompute, trainer.completedSteps() + 1);
    RM_ASSIGN_OR_RETURN(train::StepReport report, trainer.step());
    if (sync && !overlap_told && !sync->choice().empty()) {
      if (options.rank == 0) std::fprintf(log, "%s\n", sync->choice().c_str());
      overlap_told = true;
    }
    if (report.measured && (report.step % options.metrics_every == 0 || trainer.done())) {
      MetricLine line(report.step);
      line.add("loss", report.loss)
          .add("lr", report.lr)
          .add("samples_per_sec", report.samples_per_sec)
          .add("step_time", report.step_time_s)
          .add("comm_time", sync ? sync->lastCommSeconds() : strategy.commSeconds(report))
          .add("comm_wait", sync ? sync->lastWaitSeconds() : strategy.commSeconds(report))
          .add("bytes_sent", strategy.bytesSent(report));
      if (strategy.lossy()) line.add("compression_error", strategy.compressionError());
      line.print(out);
    }
    if (trainer.evaluationDue(report)) {
      phase.enter(job::RankPhase::kEvaluation);
      RM_ASSIGN_OR_RETURN(train::EvalReport eval, evaluate(trainer, comm));
      MetricLine(report.step).addEval(eval, report.epoch, config.model.task).print(out);
    }
    RM_ASSIGN_OR_RETURN(const bool stopping,
                        stopVote(options, comm, phase, report.step, trainer.done()));
    if (stopping) options.stop->store(kStopAgreed);  // no deadline for the checkpoint
    const bool checkpoint_due =
        (checkpoint_every > 0 && report.step % checkpoint_every == 0) || trainer.done() || stopping;
    if (checkpoints && checkpoint_due) {
      phase.enter(job::RankPhase::kCheckpoint);
      RM_RETURN_IF_ERROR(checkpoints->save([&] { return trainer.checkpointState(); }));
    }
    // The last one is on disk before the rank says it is done or stopped.
    if (checkpoints && (trainer.done() || stopping)) RM_RETURN_IF_ERROR(checkpoints->wait());
    if (checkpoints) reportWritten(*checkpoints, out);
    if (stopping) {
      std::fprintf(log, "rank %d stopped at step %llu, as asked (SIGTERM)%s\n", options.rank,
                   static_cast<unsigned long long>(report.step),
                   options.checkpoint_dir.empty() ? "" : ", with a checkpoint there");
      // Peers may still be in the vote (see NOTES.md on Gloo); they are stopping too.
      if (comm) static_cast<void>(comm->barrier());
      return Status(ErrorCode::kCancelled, "stopped at step " + std::to_string(report.step));
    }
  }
  // 52 bits of the checksum: exact as a JSON number (a double), equal across ranks iff the
  // parameters are (with overwhelming probability).
  RM_ASSIGN_OR_RETURN(const uint64_t checksum, Result<uint64_t>(trainer.paramChecksum()));
  MetricLine(trainer.completedSteps())
      .addInteger("param_checksum", checksum & ((1ull << 52) - 1))
      .print(out);
  std::fprintf(log, "rank %d done: %llu steps, parameter checksum %s\n", options.rank,
               static_cast<unsigned long long>(trainer.completedSteps()),
               train::formatChecksum(checksum).c_str());
  // Peers may still be finishing their last collective (see NOTES.md on Gloo).
  phase.enter(job::RankPhase::kBarrier);
  if (comm) RM_RETURN_IF_ERROR(comm->barrier());
  return Status::ok();
}

Result<std::unique_ptr<comm::Communicator>> connect(const WorkerOptions& options,
                                                    comm::KeyValueStore* store,
                                                    const Placement& placement) {
  if (placement.gpu) {
    comm::NcclOptions nccl;
    nccl.rank = options.rank;
    nccl.size = options.world_size;
    nccl.store = store;
    nccl.storePrefix = attemptPrefix(options) + "nccl/";
    nccl.device = placement.device;
    return comm::createNcclCommunicator(nccl);
  }
  comm::GlooOptions gloo;
  gloo.rank = options.rank;
  gloo.size = options.world_size;
  gloo.store = store;
  gloo.storePrefix = attemptPrefix(options) + "gloo/";
  gloo.hostname = options.bind_address;
  return comm::createGlooCommunicator(gloo);
}

}  // namespace

Status runNativeWorker(const WorkerOptions& options, comm::KeyValueStore* store, std::FILE* out,
                       std::FILE* log) {
  // The phase file is for the agent's hang verdicts: training goes on without it.
  job::PhaseBoard phase;
  if (!options.phase_file.empty()) {
    auto opened = job::PhaseBoard::open(options.phase_file);
    if (opened.isOk()) {
      phase = std::move(*opened);
    } else {
      std::fprintf(log, "%s\n", opened.status().message().c_str());
    }
  }
  RM_ASSIGN_OR_RETURN(std::string yaml, readFile(options.config_path));
  RM_ASSIGN_OR_RETURN(train::NativeConfig config,
                      train::parseNativeConfig(yaml, 0, options.world_size));
  if (options.world_size > 1 && !store) {
    return invalidArgument("a rendezvous store is needed for world_size > 1");
  }
  // Compression, pipelines and parameter servers are the CPU trainer's (the GPU trainer refuses
  // them): auto picks Gloo for them on every rank alike (they all read the same config). Local SGD
  // runs on both.
  const train::StrategyConfig& strategy = config.strategy;
  // A link test measures the network between hosts: Gloo over TCP, host buffers.
  const bool cpu_strategy = strategy.compression != train::Compression::kNone ||
                            strategy.pipelined() || strategy.parameterServer() ||
                            config.link_test.has_value();
  WorkerOptions placed = options;
  if (cpu_strategy && placed.backend == "auto") placed.backend = "gloo";
  RM_ASSIGN_OR_RETURN(const Placement placement, choosePlacement(placed, store, log));
  if (placement.gpu) {
    std::fprintf(log, "rank %d/%d: native trainer on CUDA device %d\n", options.rank,
                 options.world_size, placement.device);
  }

  std::unique_ptr<comm::Communicator> comm;
  if (options.world_size > 1) {
    RM_ASSIGN_OR_RETURN(comm, connect(options, store, placement));
    std::fprintf(log, "rank %d/%d connected (%s)\n", options.rank, options.world_size,
                 comm->transport().c_str());
  }
  // A preflight's link test trains nothing (link_test.h).
  if (config.link_test) return runLinkTest(*config.link_test, comm.get(), out, log);
  // Pipeline stages run a loop of their own (pipeline_worker.h).
  if (strategy.pipelined()) {
    return runPipelineRank(config, options, store, comm.get(), phase, out, log);
  }
  // So do parameter servers and their workers (parameter_server.h).
  if (strategy.parameterServer()) {
    return runParameterServerRank(config, options, store, comm.get(), phase, out, log);
  }
  // With NCCL the buckets are device memory: GradientSync only does pointer arithmetic on them,
  // and backward and the reduction run on the device, not on the host's cores: they always
  // overlap. On CPUs the ranks measure whether overlap pays on theirs. Local SGD and compression
  // exchange through StrategySync instead (no overlap with backward).
  std::unique_ptr<GradientSync> sync;
  if (comm && !cpu_strategy && !strategy.localSgd()) {
    // Summed, not averaged: the trainer scales the gradients by 1/world in backward.
    sync = std::make_unique<GradientSync>(
        comm.get(), comm::ReduceOp::kSum, GradientSync::kBucketBytes,
        placement.gpu ? GradientSync::Overlap::kAlways : GradientSync::Overlap::kMeasure);
  }

  train::TrainerOptions trainer_options;
  trainer_options.rank = options.rank;
  trainer_options.world_size = options.world_size;
  trainer_options.report_every = options.metrics_every;  // the GPU reads back what is printed
  if (sync) {
    trainer_options.grad_prescale = 1.0f / static_cast<float>(options.world_size);
    trainer_options.on_layer_grad_ready = [&](size_t, float* grad, size_t count) {
      sync->onLayerReady(grad, count);
    };
    trainer_options.reduce_gradients = [&](std::span<float> grads) {
      phase.enter(job::RankPhase::kAllreduce);
      Status reduced = sync->finish(grads);
      phase.enter(job::RankPhase::kCompute);
      return reduced;
    };
  }
  // Made once the model's size is known (below); these hooks run only after that.
  std::unique_ptr<StrategySync> strategy_sync;
  if (comm && strategy.compression != train::Compression::kNone) {
    trainer_options.reduce_gradients = [&](std::span<float> grads) {
      phase.enter(job::RankPhase::kAllreduce);
      Status reduced = strategy_sync->reduceCompressed(grads);
      phase.enter(job::RankPhase::kCompute);
      return reduced;
    };
  }
  if (comm && strategy.localSgd()) {
    trainer_options.average_params = [&](std::span<float> params) {
      phase.enter(job::RankPhase::kAllreduce);
      Status averaged = strategy_sync->averageParams(params);
      phase.enter(job::RankPhase::kCompute);
      return averaged;
    };
  }
  // Declared after the trainer, so destroyed before it on every way out: the sync thread may
  // still reduce a bucket of the trainer's gradients when a step fails.
  struct StopSyncFirst {
    GradientSync* sync;
    ~StopSyncFirst() {
      if (sync) sync->stop();
    }
  };
  if (placement.gpu) {
    RM_ASSIGN_OR_RETURN(std::unique_ptr<train::GpuTrainer> trainer,
                        train::GpuTrainer::create(config, placement.device, trainer_options));
    std::fprintf(log, "training data %s\n",
                 trainer->dataOnDevice() ? "on the GPU"
                                         : "on the host: batches are copied to the GPU each step "
                                           "(it takes more than half the GPU's free memory)");
    strategy_sync =
        std::make_unique<StrategySync>(comm.get(), strategy, trainer->model().numParams());
    const StopSyncFirst stop_sync{sync.get()};
    return runRank(*trainer, config, options, store, comm.get(), sync.get(), *strategy_sync, phase,
                   out, log);
  }
  RM_ASSIGN_OR_RETURN(train::Trainer trainer, train::Trainer::create(config, trainer_options));
  strategy_sync = std::make_unique<StrategySync>(comm.get(), strategy, trainer.model().numParams(),
                                                 trainer.model().layers());
  const StopSyncFirst stop_sync{sync.get()};
  return runRank(trainer, config, options, store, comm.get(), sync.get(), *strategy_sync, phase,
                 out, log);
}

}  // namespace ringmaster::agent
