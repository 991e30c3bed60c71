#include "worker/parameter_server.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ringmaster/train/checkpoint.h"
#include "ringmaster/train/parameter_server.h"
#include "ringmaster/train/trainer.h"

namespace ringmaster::agent {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Tags of the three messages; the communicator keeps them apart from its collectives.
constexpr uint32_t kPushTag = 0x50530001;   // worker -> server: PushHeader + gradient shard
constexpr uint32_t kReplyTag = 0x50530002;  // server -> worker: ReplyHeader + parameter shard
constexpr uint32_t kFinalTag = 0x50530003;  // async server -> worker at the end: the same

struct PushHeader {
  uint64_t pulled_version = 0;  // the shard's version the gradient was computed on
  uint64_t step = 0;            // the worker's step (1-based), for error messages
};
struct ReplyHeader {
  uint64_t version = 0;    // the shard's version after this push
  uint64_t refused = 0;    // 1: the push was staler than max_staleness and not applied
  uint64_t staleness = 0;  // of the push (0 in sync)
  double lr = 0.0;         // of the server's last update
};

// One message: a header, then a shard of floats. Sizes match on both sides by construction.
template <typename Header>
class Message {
 public:
  explicit Message(size_t floats) : bytes_(sizeof(Header) + floats * sizeof(float)) {}
  void* data() { return bytes_.data(); }
  size_t size() const { return bytes_.size(); }
  Header header() const {
    Header h;
    std::memcpy(&h, bytes_.data(), sizeof h);
    return h;
  }
  void setHeader(const Header& h) { std::memcpy(bytes_.data(), &h, sizeof h); }
  std::span<const float> floats() const {
    return {reinterpret_cast<const float*>(bytes_.data() + sizeof(Header)), floatCount()};
  }
  void setFloats(std::span<const float> values) {
    std::memcpy(bytes_.data() + sizeof(Header), values.data(), values.size_bytes());
  }

 private:
  size_t floatCount() const { return (bytes_.size() - sizeof(Header)) / sizeof(float); }
  // Floats start at an offset that is a multiple of 8: aligned for the reinterpret_cast.
  std::vector<std::byte> bytes_;
};
static_assert(sizeof(PushHeader) % alignof(float) == 0 && sizeof(ReplyHeader) % 8 == 0);

// JSON numbers only: the agent's metric-line parser reads these.
class MetricLine {
 public:
  explicit MetricLine(uint64_t step) { text_ = "{\"step\": " + std::to_string(step); }
  MetricLine& add(const char* name, double value) {
    char buffer[96];
    std::snprintf(buffer, sizeof buffer, ", \"%s\": %.10g", name, value);
    text_ += buffer;
    return *this;
  }
  MetricLine& addInteger(const char* name, uint64_t value) {
    text_ += ", \"" + std::string(name) + "\": " + std::to_string(value);
    return *this;
  }
  void print(std::FILE* out) {
    std::fprintf(out, "%s}\n", text_.c_str());
    std::fflush(out);
  }

 private:
  std::string text_;
};

Status withContext(const Status& status, const std::string& what) {
  return Status(status.code(), what + ": " + status.message());
}

// The worker's side: the Trainer's remote update, and what it sent and received.
class PsWorker {
 public:
  PsWorker(comm::Communicator* comm, const train::ParameterServerConfig& ps, size_t num_params)
      : comm_(comm), ps_(ps), layout_{comm->size(), ps.servers}, pulled_(ps.servers, 0) {
    for (int s = 0; s < ps.servers; ++s) {
      const train::ShardRange range = train::shardRange(num_params, ps.servers, s);
      ranges_.push_back(range);
      pushes_.emplace_back(range.size());
      replies_.emplace_back(range.size());
    }
  }

  void setTotalSteps(uint64_t steps) { total_steps_ = steps; }

  Result<double> update(std::span<float> params, std::span<const float> grads) {
    const Clock::time_point start = Clock::now();
    ++step_;
    bytes_sent_ = bytes_received_ = 0;
    staleness_ = refused_ = 0;
    double lr = 0.0;
    if (ps_.mode == train::PsMode::kSync) {
      for (int s = 0; s < ps_.servers; ++s) RM_RETURN_IF_ERROR(push(s, grads));
      for (int s = 0; s < ps_.servers; ++s) {
        RM_ASSIGN_OR_RETURN(lr, pull(s, kReplyTag, params));
      }
    } else {
      for (int s = 0; s < ps_.servers; ++s) {
        RM_RETURN_IF_ERROR(push(s, grads));
        RM_ASSIGN_OR_RETURN(lr, pull(s, kReplyTag, params));
      }
      // Every worker ends on the servers' final parameters (see the header).
      if (step_ == total_steps_) {
        for (int s = 0; s < ps_.servers; ++s) {
          RM_ASSIGN_OR_RETURN(lr, pull(s, kFinalTag, params));
        }
      }
    }
    comm_seconds_ = secondsSince(start);
    return lr;
  }

  double commSeconds() const { return comm_seconds_; }
  double bytesSent() const { return static_cast<double>(bytes_sent_); }
  double bytesReceived() const { return static_cast<double>(bytes_received_); }
  uint64_t staleness() const { return staleness_; }
  uint64_t refused() const { return refused_; }

 private:
  Status push(int shard, std::span<const float> grads) {
    Message<PushHeader>& message = pushes_[shard];
    message.setHeader(PushHeader{pulled_[shard], step_});
    message.setFloats(grads.subspan(ranges_[shard].begin, ranges_[shard].size()));
    const Status sent =
        comm_->send(message.data(), message.size(), layout_.serverRank(shard), kPushTag);
    if (!sent.isOk()) {
      return withContext(sent, "push to server rank " + std::to_string(layout_.serverRank(shard)));
    }
    bytes_sent_ += message.size();
    return Status::ok();
  }

  Result<double> pull(int shard, uint32_t tag, std::span<float> params) {
    Message<ReplyHeader>& message = replies_[shard];
    const Status received =
        comm_->recv(message.data(), message.size(), layout_.serverRank(shard), tag);
    if (!received.isOk()) {
      return withContext(received,
                         "pull from server rank " + std::to_string(layout_.serverRank(shard)));
    }
    bytes_received_ += message.size();
    const ReplyHeader header = message.header();
    const std::span<const float> shard_params = message.floats();
    std::copy(shard_params.begin(), shard_params.end(),
              params.begin() + static_cast<std::ptrdiff_t>(ranges_[shard].begin));
    pulled_[shard] = header.version;
    if (tag == kReplyTag) {
      staleness_ = std::max(staleness_, header.staleness);
      refused_ += header.refused;
    }
    return header.lr;
  }

  comm::Communicator* comm_;
  train::ParameterServerConfig ps_;
  train::PsLayout layout_;
  std::vector<train::ShardRange> ranges_;
  std::vector<Message<PushHeader>> pushes_;
  std::vector<Message<ReplyHeader>> replies_;
  std::vector<uint64_t> pulled_;  // per shard: the version of the last pull
  uint64_t step_ = 0;
  uint64_t total_steps_ = 0;
  size_t bytes_sent_ = 0;
  size_t bytes_received_ = 0;
  uint64_t staleness_ = 0;
  uint64_t refused_ = 0;
  double comm_seconds_ = 0.0;
};

Status runWorker(const train::NativeConfig& config, const WorkerOptions& options,
                 comm::Communicator* comm, job::PhaseBoard& phase, std::FILE* out, std::FILE* log) {
  const train::ParameterServerConfig& ps = config.strategy.parameter_server;
  const train::PsLayout layout{options.world_size, ps.servers};
  std::unique_ptr<PsWorker> worker;  // made once the model's size is known
  train::TrainerOptions trainer_options;
  trainer_options.rank = options.rank;
  trainer_options.world_size = layout.workers();  // the data is the workers' to share
  trainer_options.report_every = options.metrics_every;
  trainer_options.remote_update = [&](std::span<float> params, std::span<const float> grads) {
    phase.enter(job::RankPhase::kAllreduce);
    Result<double> lr = worker->update(params, grads);
    phase.enter(job::RankPhase::kCompute);
    return lr;
  };
  RM_ASSIGN_OR_RETURN(train::Trainer trainer, train::Trainer::create(config, trainer_options));
  worker = std::make_unique<PsWorker>(comm, ps, trainer.model().numParams());
  worker->setTotalSteps(trainer.totalSteps());
  std::fprintf(log, "rank %d: parameter-server worker %d of %d (%s, %d server%s)\n", options.rank,
               options.rank, layout.workers(), ps.mode == train::PsMode::kSync ? "sync" : "async",
               ps.servers, ps.servers == 1 ? "" : "s");

  const bool async = ps.mode == train::PsMode::kAsync;
  while (!trainer.done()) {
    phase.enter(job::RankPhase::kCompute, trainer.completedSteps() + 1);
    RM_ASSIGN_OR_RETURN(train::StepReport report, trainer.step());
    if (report.step % options.metrics_every == 0 || trainer.done()) {
      MetricLine line(report.step);
      line.add("loss", report.loss)
          .add("lr", report.lr)
          .add("samples_per_sec", report.samples_per_sec)
          .add("step_time", report.step_time_s)
          .add("comm_time", worker->commSeconds())
          .add("comm_wait", worker->commSeconds())
          .add("bytes_sent", worker->bytesSent())
          .add("bytes_received", worker->bytesReceived())
          .add(train::kPsRoleMetric, static_cast<double>(train::PsRole::kWorker));
      if (async) {
        line.add("staleness", static_cast<double>(worker->staleness()))
            .add("refused", static_cast<double>(worker->refused()));
      }
      line.print(out);
    }
    if (trainer.evaluationDue(report)) {
      phase.enter(job::RankPhase::kEvaluation);
      const train::EvalReport eval = trainer.evaluate();
      MetricLine line(report.step);
      line.add("eval_loss", eval.loss).add("epoch", static_cast<double>(report.epoch));
      if (config.model.task == train::Task::kClassification) {
        line.add("accuracy", eval.accuracy);
      } else {
        line.add("mse", eval.mse);
      }
      line.print(out);
    }
  }
  const uint64_t checksum = trainer.paramChecksum();
  MetricLine(trainer.completedSteps())
      .addInteger("param_checksum", checksum & ((1ull << 52) - 1))
      .print(out);
  std::fprintf(log, "rank %d done: %llu steps, parameter checksum %s\n", options.rank,
               static_cast<unsigned long long>(trainer.completedSteps()),
               train::formatChecksum(checksum).c_str());
  return Status::ok();
}

// A server's figures over one step (async: over N pushes).
struct ServerStep {
  Clock::time_point start = Clock::now();
  double comm_s = 0.0;
  size_t bytes_sent = 0;
  size_t bytes_received = 0;
  uint64_t staleness = 0;
  uint64_t refused = 0;
};

void printServerStep(std::FILE* out, uint64_t step, const ServerStep& s, double lr, bool async) {
  MetricLine line(step);
  line.add("samples_per_sec", 0.0)
      .add("step_time", secondsSince(s.start))
      .add("comm_time", s.comm_s)
      .add("bytes_sent", static_cast<double>(s.bytes_sent))
      .add("bytes_received", static_cast<double>(s.bytes_received))
      .add("lr", lr)
      .add(train::kPsRoleMetric, static_cast<double>(train::PsRole::kServer));
  if (async) {
    line.add("staleness", static_cast<double>(s.staleness))
        .add("refused", static_cast<double>(s.refused));
  }
  line.print(out);
}

Status runServer(const train::NativeConfig& config, const WorkerOptions& options,
                 comm::Communicator* comm, job::PhaseBoard& phase, std::FILE* out, std::FILE* log) {
  const train::ParameterServerConfig& ps = config.strategy.parameter_server;
  const train::PsLayout layout{options.world_size, ps.servers};
  const int workers = layout.workers();
  const int shard = layout.shardOf(options.rank);
  // The same seeded model and sampler as a worker's: the initial parameters and the step count.
  train::TrainerOptions shape;
  shape.world_size = workers;
  RM_ASSIGN_OR_RETURN(train::Trainer model, train::Trainer::create(config, shape));
  const uint64_t steps = model.totalSteps();
  const train::ShardRange range = train::shardRange(model.model().numParams(), ps.servers, shard);
  const std::span<const float> initial = model.model().params();
  RM_ASSIGN_OR_RETURN(train::ShardServer server,
                      train::ShardServer::create(
                          train::shardOptimizerOptions(config.optimizer, steps, ps.mode, workers),
                          initial.subspan(range.begin, range.size())));
  std::fprintf(log, "rank %d: parameter server of shard %d (parameters %zu..%zu of %zu), %s\n",
               options.rank, shard, range.begin, range.end, model.model().numParams(),
               ps.mode == train::PsMode::kSync ? "sync" : "async");

  Message<ReplyHeader> reply(range.size());
  const auto sendShard = [&](int worker, uint32_t tag, const ReplyHeader& header,
                             ServerStep* figures) -> Status {
    reply.setHeader(header);
    reply.setFloats(server.params());
    const Clock::time_point start = Clock::now();
    const Status sent = comm->send(reply.data(), reply.size(), worker, tag);
    figures->comm_s += secondsSince(start);
    if (!sent.isOk()) return withContext(sent, "reply to worker rank " + std::to_string(worker));
    figures->bytes_sent += reply.size();
    return Status::ok();
  };

  if (ps.mode == train::PsMode::kSync) {
    std::vector<Message<PushHeader>> pushes(static_cast<size_t>(workers),
                                            Message<PushHeader>(range.size()));
    std::vector<std::span<const float>> grads;
    for (const auto& push : pushes) grads.push_back(push.floats());
    for (uint64_t step = 1; step <= steps; ++step) {
      ServerStep figures;
      phase.enter(job::RankPhase::kAllreduce, step);
      for (int w = 0; w < workers; ++w) {
        const Status received = comm->recv(pushes[w].data(), pushes[w].size(), w, kPushTag);
        if (!received.isOk()) {
          return withContext(received, "step " + std::to_string(step) + ": push from worker rank " +
                                           std::to_string(w));
        }
        figures.bytes_received += pushes[w].size();
      }
      figures.comm_s = secondsSince(figures.start);
      phase.enter(job::RankPhase::kCompute, step);
      const double lr = server.applyMean(grads);
      phase.enter(job::RankPhase::kAllreduce, step);
      for (int w = 0; w < workers; ++w) {
        RM_RETURN_IF_ERROR(
            sendShard(w, kReplyTag, ReplyHeader{server.version(), 0, 0, lr}, &figures));
      }
      if (step % options.metrics_every == 0 || step == steps) {
        printServerStep(out, step, figures, lr, false);
      }
    }
  } else {
    // Each worker pushes `steps` times; serve whoever comes first until all have.
    std::vector<uint64_t> left(static_cast<size_t>(workers), steps);
    std::vector<int> active;
    for (int w = 0; w < workers; ++w) active.push_back(w);
    Message<PushHeader> push(range.size());
    const float scale = 1.0f / static_cast<float>(workers);
    uint64_t served = 0;
    ServerStep figures;
    while (!active.empty()) {
      phase.enter(job::RankPhase::kAllreduce, served / static_cast<uint64_t>(workers) + 1);
      const Clock::time_point wait = Clock::now();
      Result<int> from = comm->recvFromAny(push.data(), push.size(), active, kPushTag);
      figures.comm_s += secondsSince(wait);
      if (!from.isOk()) {
        return withContext(from.status(), "push " + std::to_string(served + 1));
      }
      figures.bytes_received += push.size();
      const PushHeader header = push.header();
      if (header.pulled_version > server.version()) {
        return protocolError("worker rank " + std::to_string(*from) + " pushed step " +
                             std::to_string(header.step) + " on version " +
                             std::to_string(header.pulled_version) + ", newer than the server's " +
                             std::to_string(server.version()));
      }
      const train::PushVerdict verdict =
          server.applyPush(push.floats(), header.pulled_version, ps.max_staleness, scale);
      figures.staleness = std::max(figures.staleness, verdict.staleness);
      figures.refused += verdict.accepted ? 0 : 1;
      RM_RETURN_IF_ERROR(sendShard(*from, kReplyTag,
                                   ReplyHeader{server.version(), verdict.accepted ? 0u : 1u,
                                               verdict.staleness, server.lastLr()},
                                   &figures));
      if (--left[static_cast<size_t>(*from)] == 0) std::erase(active, *from);
      ++served;
      if (active.empty()) {
        // The final parameters to every worker (each waits for them after its last push),
        // counted in the last step's figures.
        for (int w = 0; w < workers; ++w) {
          RM_RETURN_IF_ERROR(sendShard(
              w, kFinalTag, ReplyHeader{server.version(), 0, 0, server.lastLr()}, &figures));
        }
      }
      if (served % static_cast<uint64_t>(workers) == 0) {
        const uint64_t round = served / static_cast<uint64_t>(workers);
        if (round % options.metrics_every == 0 || round == steps) {
          printServerStep(out, round, figures, server.lastLr(), true);
        }
        figures = ServerStep{};
      }
    }
    std::fprintf(log, "rank %d: served %llu pushes, applied %llu\n", options.rank,
                 static_cast<unsigned long long>(served),
                 static_cast<unsigned long long>(server.version()));
  }
  std::fprintf(log, "rank %d done: shard %d at version %llu\n", options.rank, shard,
               static_cast<unsigned long long>(server.version()));
  return Status::ok();
}

}  // namespace

Status runParameterServerRank(const train::NativeConfig& config, const WorkerOptions& options,
                              comm::Communicator* comm, job::PhaseBoard& phase, std::FILE* out,
                              std::FILE* log) {
  const train::ParameterServerConfig& ps = config.strategy.parameter_server;
  if (!comm || ps.servers < 1 || ps.servers >= options.world_size) {
    return invalidArgument(
        "native.strategy.parameter_server.servers: " + std::to_string(ps.servers) +
        " servers need a world of at least " + std::to_string(ps.servers + 1) +
        " ranks, the job has " + std::to_string(options.world_size));
  }
  if (comm->backend() != "gloo") {
    return Status(ErrorCode::kUnimplemented,
                  "native.strategy.parameter_server runs on the CPU (Gloo) only, not on " +
                      std::string(comm->backend()));
  }
  if (!options.checkpoint_dir.empty() && options.rank == 0) {
    std::fprintf(log,
                 "parameter_server: no checkpoints are written (servers keep their state in "
                 "memory); a restarted attempt starts over from step 0\n");
  }
  const train::PsLayout layout{options.world_size, ps.servers};
  const Status done = layout.isServer(options.rank)
                          ? runServer(config, options, comm, phase, out, log)
                          : runWorker(config, options, comm, phase, out, log);
  RM_RETURN_IF_ERROR(done);
  // Peers may still be finishing their last message (see NOTES.md on Gloo).
  phase.enter(job::RankPhase::kBarrier);
  return comm->barrier();
}

}  // namespace ringmaster::agent
