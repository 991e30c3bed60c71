#include "native_worker.h"

#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "gradient_sync.h"
#include "ringmaster/comm/communicator.h"
#include "ringmaster/train/checkpoint.h"
#include "ringmaster/train/trainer.h"

namespace ringmaster::agent {
namespace {

// JSON numbers only: the agent's metric-line parser reads these.
class MetricLine {
 public:
  explicit MetricLine(uint64_t step) { text_ = "{\"step\": " + std::to_string(step); }
  MetricLine& add(const char* name, double value) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, ", \"%s\": %.9g", name, value);
    text_ += buffer;
    return *this;
  }
  void print(std::FILE* out) {
    std::fprintf(out, "%s}\n", text_.c_str());
    std::fflush(out);
  }

 private:
  std::string text_;
};

Result<std::string> readFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return notFound("cannot read the native config " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every rank continues from the same checkpoint: the newest step that all ranks have.
Status resume(train::Trainer& trainer, const std::string& dir, comm::Communicator* comm,
              std::FILE* log) {
  auto loaded = train::loadLatestCheckpoint(dir);
  for (const auto& skipped : loaded.isOk() ? loaded->skipped : std::vector<std::string>{}) {
    std::fprintf(log, "skipped checkpoint %s\n", skipped.c_str());
  }
  uint64_t step = loaded.isOk() ? loaded->state.step : 0;
  if (comm && comm->size() > 1) {
    std::vector<uint64_t> steps(static_cast<size_t>(comm->size()));
    RM_RETURN_IF_ERROR(comm->allgather(&step, steps.data(), sizeof step));
    uint64_t common = *std::min_element(steps.begin(), steps.end());
    if (common != step) {
      auto older = train::readCheckpoint(train::checkpointPath(dir, common));
      if (common > 0 && !older.isOk()) return older.status();
      if (common == 0) return Status::ok();  // some rank has none: start from scratch
      loaded = train::LoadedCheckpoint{std::move(*older), train::checkpointPath(dir, common), {}};
    }
    step = common;
  }
  if (step == 0 || !loaded.isOk()) return Status::ok();
  RM_RETURN_IF_ERROR(trainer.restore(loaded->state));
  std::fprintf(log, "resumed from %s (step %llu)\n", loaded->path.c_str(),
               static_cast<unsigned long long>(step));
  return Status::ok();
}

}  // namespace

Status runNativeWorker(const WorkerOptions& options, comm::KeyValueStore* store, std::FILE* out,
                       std::FILE* log) {
  RM_ASSIGN_OR_RETURN(std::string yaml, readFile(options.config_path));
  RM_ASSIGN_OR_RETURN(train::NativeConfig config, train::parseNativeConfig(yaml));
  if (options.backend == "nccl") {
    return Status(ErrorCode::kUnimplemented,
                  "the native trainer's GPU path is not built yet: use backend gloo (or auto)");
  }

  std::unique_ptr<comm::Communicator> comm;
  if (options.world_size > 1) {
    if (!store) return invalidArgument("a rendezvous store is needed for world_size > 1");
    comm::GlooOptions gloo;
    gloo.rank = options.rank;
    gloo.size = options.world_size;
    gloo.store = store;
    gloo.storePrefix = "attempt-" + std::to_string(options.attempt) + "/gloo/";
    gloo.hostname = options.bind_address;
    RM_ASSIGN_OR_RETURN(comm, comm::createGlooCommunicator(gloo));
    std::fprintf(log, "rank %d/%d connected (gloo)\n", options.rank, options.world_size);
  }
  std::unique_ptr<GradientSync> sync;
  if (comm) sync = std::make_unique<GradientSync>(comm.get());

  train::TrainerOptions trainer_options;
  trainer_options.rank = options.rank;
  trainer_options.world_size = options.world_size;
  if (sync) {
    trainer_options.on_layer_grad_ready = [&](size_t, float* grad, size_t count) {
      sync->onLayerReady(grad, count);
    };
    trainer_options.reduce_gradients = [&](std::span<float> grads) { return sync->finish(grads); };
  }
  RM_ASSIGN_OR_RETURN(train::Trainer trainer, train::Trainer::create(config, trainer_options));

  if (!options.checkpoint_dir.empty()) {
    RM_RETURN_IF_ERROR(resume(trainer, options.checkpoint_dir, comm.get(), log));
  }
  // Rank 0's parameters are everyone's starting point (they agree already when seeded alike).
  if (comm) {
    auto params = trainer.model().params();
    RM_RETURN_IF_ERROR(comm->broadcast(params.data(), params.size_bytes(), 0));
  }

  const uint64_t checkpoint_every = config.checkpoint.every_steps;
  while (!trainer.done()) {
    RM_ASSIGN_OR_RETURN(train::StepReport report, trainer.step());
    if (report.step % options.metrics_every == 0 || trainer.done()) {
      MetricLine(report.step)
          .add("loss", report.loss)
          .add("lr", report.lr)
          .add("samples_per_sec", report.samples_per_sec)
          .add("step_time", report.step_time_s)
          .add("comm_time", sync ? sync->lastCommSeconds() : 0.0)
          .add("comm_wait", sync ? sync->lastWaitSeconds() : 0.0)
          .print(out);
    }
    if (trainer.evaluationDue(report)) {
      train::EvalReport eval = trainer.evaluate();
      MetricLine line(report.step);
      line.add("eval_loss", eval.loss).add("epoch", static_cast<double>(report.epoch));
      if (config.model.task == train::Task::kClassification) {
        line.add("accuracy", eval.accuracy);
      } else {
        line.add("mse", eval.mse);
      }
      line.print(out);
    }
    const bool checkpoint_due =
        (checkpoint_every > 0 && report.step % checkpoint_every == 0) || trainer.done();
    if (!options.checkpoint_dir.empty() && checkpoint_due) {
      RM_RETURN_IF_ERROR(train::saveCheckpoint(options.checkpoint_dir, trainer.checkpointState(),
                                               config.checkpoint.keep));
    }
  }
  // 52 bits of the checksum: exact as a JSON number (a double), equal across ranks iff the
  // parameters are (with overwhelming probability).
  const uint64_t checksum = trainer.paramChecksum();
  MetricLine(trainer.completedSteps())
      .add("param_checksum", static_cast<double>(checksum & ((1ull << 52) - 1)))
      .print(out);
  std::fprintf(log, "rank %d done: %llu steps, parameter checksum %s\n", options.rank,
               static_cast<unsigned long long>(trainer.completedSteps()),
               train::formatChecksum(checksum).c_str());
  // Peers may still be finishing their last collective (see NOTES.md on Gloo).
  if (comm) RM_RETURN_IF_ERROR(comm->barrier());
  return Status::ok();
}

}  // namespace ringmaster::agent
