#include "worker/parameter_server.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "ringmaster/train/checkpoint.h"
#include "ringmaster/train/parameter_server.h"
#include "ringmaster/train/trainer.h"
#include "worker/metric_line.h"

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
  uint64_t leaving = 0;         // async, 1: not a gradient to apply; the worker stops here
};
struct ReplyHeader {
  uint64_t version = 0;    // the shard's version after this push
  uint64_t refused = 0;    // 1: the push was staler than max_staleness and not applied
  uint64_t staleness = 0;  // of the push (0 in sync)
  uint64_t done = 0;       // async, 1: the push was not applied and the worker stops
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

Status withContext(const Status& status, const std::string& what) {
  return Status(status.code(), what + ": " + status.message());
}

// The worker's side: the Trainer's remote update, and what it sent and received.
// Where a worker reaches server s: the job's communicator and the server's rank (sync), or the
// pair communicator of the two (async: the server is its rank 0).
struct ServerLink {
  comm::Communicator* comm = nullptr;
  int peer = 0;
  int server_rank = 0;  // in the job, for messages
};

class PsWorker {
 public:
  PsWorker(std::vector<ServerLink> links, const train::ParameterServerConfig& ps, size_t num_params)
      : links_(std::move(links)), ps_(ps), pulled_(ps.servers, 0) {
    for (int s = 0; s < ps.servers; ++s) {
      const train::ShardRange range = train::shardRange(num_params, ps.servers, s);
      ranges_.push_back(range);
      pushes_.emplace_back(range.size());
      replies_.emplace_back(range.size());
    }
  }

  // The most steps this worker may take (async: it usually stops earlier, when told).
  void setTotalSteps(uint64_t steps) { total_steps_ = steps; }
  // async: the servers said stop, and the final parameters are in.
  bool finished() const { return finished_; }

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
      // Server 0 says when the job's pushes are done; the other servers then hear that this
      // worker leaves (and so does a worker that reached its own last step).
      bool leaving = step_ >= total_steps_;
      for (int s = 0; s < ps_.servers; ++s) {
        RM_RETURN_IF_ERROR(push(s, grads, leaving));
        RM_ASSIGN_OR_RETURN(lr, pull(s, kReplyTag, params));
        leaving = leaving || done_told_;
      }
      // Every worker ends on the servers' final parameters (see the header).
      if (leaving) {
        for (int s = 0; s < ps_.servers; ++s) {
          RM_ASSIGN_OR_RETURN(lr, pull(s, kFinalTag, params));
        }
        finished_ = true;
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
  Status push(int shard, std::span<const float> grads, bool leaving = false) {
    Message<PushHeader>& message = pushes_[shard];
    message.setHeader(PushHeader{pulled_[shard], step_, leaving ? 1u : 0u});
    message.setFloats(grads.subspan(ranges_[shard].begin, ranges_[shard].size()));
    const ServerLink& link = links_[shard];
    const Status sent = link.comm->send(message.data(), message.size(), link.peer, kPushTag);
    if (!sent.isOk()) {
      return withContext(sent, "push to server rank " + std::to_string(link.server_rank));
    }
    bytes_sent_ += message.size();
    return Status::ok();
  }

  Result<double> pull(int shard, uint32_t tag, std::span<float> params) {
    Message<ReplyHeader>& message = replies_[shard];
    const ServerLink& link = links_[shard];
    const Status received = link.comm->recv(message.data(), message.size(), link.peer, tag);
    if (!received.isOk()) {
      return withContext(received, "pull from server rank " + std::to_string(link.server_rank));
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
      done_told_ = done_told_ || header.done != 0;
    }
    return header.lr;
  }

  std::vector<ServerLink> links_;
  train::ParameterServerConfig ps_;
  std::vector<train::ShardRange> ranges_;
  std::vector<Message<PushHeader>> pushes_;
  std::vector<Message<ReplyHeader>> replies_;
  std::vector<uint64_t> pulled_;  // per shard: the version of the last pull
  uint64_t step_ = 0;
  uint64_t total_steps_ = 0;
  bool done_told_ = false;
  bool finished_ = false;
  size_t bytes_sent_ = 0;
  size_t bytes_received_ = 0;
  uint64_t staleness_ = 0;
  uint64_t refused_ = 0;
  double comm_seconds_ = 0.0;
};

Status runWorker(const train::NativeConfig& config, const WorkerOptions& options,
                 std::vector<ServerLink> links, job::PhaseBoard& phase, std::FILE* out,
                 std::FILE* log) {
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
  // async: a worker steps until the servers have taken the job's pushes (N workers x the spec's
  // steps), however many of them are its own; N times the spec's length is its most.
  const bool async = ps.mode == train::PsMode::kAsync;
  train::NativeConfig own = config;
  if (async) {
    own.epochs *= static_cast<uint64_t>(layout.workers());
    own.steps *= static_cast<uint64_t>(layout.workers());
  }
  RM_ASSIGN_OR_RETURN(train::Trainer trainer, train::Trainer::create(own, trainer_options));
  worker = std::make_unique<PsWorker>(std::move(links), ps, trainer.model().numParams());
  worker->setTotalSteps(trainer.totalSteps());
  std::fprintf(log, "rank %d: parameter-server worker %d of %d (%s, %d server%s)\n", options.rank,
               options.rank, layout.workers(), ps.mode == train::PsMode::kSync ? "sync" : "async",
               ps.servers, ps.servers == 1 ? "" : "s");

  const auto evaluate = [&](const train::StepReport& report) {
    phase.enter(job::RankPhase::kEvaluation);
    const train::EvalReport eval = trainer.evaluate();
    MetricLine(report.step).addEval(eval, report.epoch, config.model.task).print(out);
  };
  while (!trainer.done() && !worker->finished()) {
    phase.enter(job::RankPhase::kCompute, trainer.completedSteps() + 1);
    RM_ASSIGN_OR_RETURN(train::StepReport report, trainer.step());
    const bool last = trainer.done() || worker->finished();
    if (report.step % options.metrics_every == 0 || last) {
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
    if (trainer.evaluationDue(report) || last) evaluate(report);  // the final model, always
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

// What the async server's threads share (see serveAsync), under one mutex.
struct AsyncShard {
  train::ShardServer& server;
  const int shard;
  const uint64_t budget;  // the job's pushes (server 0 counts them)
  const int workers;
  const train::ParameterServerConfig& ps;
  const std::vector<std::unique_ptr<comm::Communicator>>& pairs;
  const WorkerOptions& options;
  job::PhaseBoard& phase;
  std::FILE* out;

  std::mutex mutex{};    // guards everything below, and `server`
  uint64_t served = 0;   // pushes applied or refused
  uint64_t handled = 0;  // served, and the pushes answered with done
  std::vector<uint64_t> pushes = std::vector<uint64_t>(static_cast<size_t>(workers));  // served
  std::vector<bool> left = std::vector<bool>(static_cast<size_t>(workers));            // told done
  std::condition_variable turn{};  // a worker pushed or left, or something failed (max_lead)
  ServerStep figures{};
  Status failure{};

  // max_lead: worker `w` is ahead when it has served more than max_lead pushes beyond the upper
  // median of the other workers still going (so that one straggler holds nobody back).
  bool ahead(int w) const {
    std::vector<uint64_t> others;
    for (int u = 0; u < workers; ++u) {
      if (u != w && !left[static_cast<size_t>(u)]) others.push_back(pushes[static_cast<size_t>(u)]);
    }
    if (others.empty()) return false;
    std::sort(others.begin(), others.end());
    return pushes[static_cast<size_t>(w)] > others[others.size() / 2] + ps.max_lead;
  }

  // The first failure ends every thread's wait.
  void fail(const Status& status) {
    std::lock_guard lock(mutex);
    failLocked(status);
  }
  void failLocked(const Status& status) {
    if (failure.isOk()) failure = status;
    for (const auto& pair : pairs) pair->abort();
    turn.notify_all();
  }

  // Applies worker `w`'s push (or takes its leave) and fills the reply; false when the push
  // cannot be taken (the failure is set). `done`: the worker leaves after this reply.
  bool answer(int w, const Message<PushHeader>& push, double waited_s, Message<ReplyHeader>* reply,
              bool* done) {
    std::unique_lock lock(mutex);
    const PushHeader header = push.header();
    figures.comm_s += waited_s;
    figures.bytes_received += push.size();
    if (header.pulled_version > server.version()) {
      failLocked(protocolError("worker rank " + std::to_string(w) + " pushed step " +
                               std::to_string(header.step) + " on version " +
                               std::to_string(header.pulled_version) +
                               ", newer than the server's " + std::to_string(server.version())));
      return false;
    }
    ReplyHeader reply_header;
    // Server 0 takes the job's pushes (workers x steps); each later one is answered with done,
    // and a worker told so pushes `leaving` to the other servers.
    if (header.leaving != 0 || (shard == 0 && served >= budget)) {
      reply_header.done = 1;
      *done = true;
      left[static_cast<size_t>(w)] = true;
      turn.notify_all();
    } else {
      const float scale = 1.0f / static_cast<float>(workers);
      const train::PushVerdict verdict =
          server.applyPush(push.floats(), header.pulled_version, ps.max_staleness, scale);
      figures.staleness = std::max(figures.staleness, verdict.staleness);
      figures.refused += verdict.accepted ? 0 : 1;
      reply_header.refused = verdict.accepted ? 0 : 1;
      reply_header.staleness = verdict.staleness;
      ++served;
      ++pushes[static_cast<size_t>(w)];
      turn.notify_all();
      // A worker ahead of the others waits for its reply, after its push is applied (so that it
      // is not made stale by the wait) and before the shard is copied (so that it goes on from
      // the newest parameters).
      if (ps.max_lead > 0 && ahead(w)) {
        const Clock::time_point held = Clock::now();
        turn.wait(lock, [&] { return !failure.isOk() || !ahead(w); });
        figures.comm_s += secondsSince(held);
        if (!failure.isOk()) return false;
      }
    }
    reply_header.version = server.version();
    reply_header.lr = server.lastLr();
    reply->setHeader(reply_header);
    reply->setFloats(server.params());
    ++handled;
    figures.bytes_sent += reply->size();
    const uint64_t per_round = static_cast<uint64_t>(workers);
    phase.enter(job::RankPhase::kAllreduce, handled / per_round + 1);
    // A step of a server: as many pushes as there are workers. The last one's line is printed
    // after the final parameters went out (sendFinal).
    const bool someone_going = std::find(left.begin(), left.end(), false) != left.end();
    if (handled % per_round == 0 && someone_going) {
      const uint64_t round = handled / per_round;
      if (round % options.metrics_every == 0) {
        printServerStep(out, round, figures, server.lastLr(), true);
      }
      figures = ServerStep{};
    }
    return true;
  }

  // One worker's thread: its pushes, answered in turn, until it leaves or something fails.
  void serve(int w) {
    comm::Communicator& link = *pairs[static_cast<size_t>(w)];
    Message<PushHeader> push(server.size());
    Message<ReplyHeader> reply(server.size());
    for (;;) {
      const Clock::time_point wait = Clock::now();
      const Status received = link.recv(push.data(), push.size(), 1, kPushTag);
      if (!received.isOk()) {
        return fail(withContext(received, "push from worker rank " + std::to_string(w)));
      }
      bool done = false;
      if (!answer(w, push, secondsSince(wait), &reply, &done)) return;
      const Clock::time_point send = Clock::now();
      const Status sent = link.send(reply.data(), reply.size(), 1, kReplyTag);
      if (!sent.isOk()) return fail(withContext(sent, "reply to worker rank " + std::to_string(w)));
      {
        std::lock_guard lock(mutex);
        figures.comm_s += secondsSince(send);
      }
      if (done) return;
    }
  }

  // Every worker has left: the final parameters to each (it waits for them after its last
  // push), counted in the last step's figures. After the threads have ended.
  Status sendFinal() {
    Message<ReplyHeader> final_shard(server.size());
    ReplyHeader header;
    header.version = server.version();
    header.done = 1;
    header.lr = server.lastLr();
    final_shard.setHeader(header);
    final_shard.setFloats(server.params());
    for (int w = 0; w < workers; ++w) {
      const Clock::time_point start = Clock::now();
      const Status sent =
          pairs[static_cast<size_t>(w)]->send(final_shard.data(), final_shard.size(), 1, kFinalTag);
      if (!sent.isOk()) {
        return withContext(sent, "final parameters to worker rank " + std::to_string(w));
      }
      figures.comm_s += secondsSince(start);
      figures.bytes_sent += final_shard.size();
    }
    const uint64_t per_round = static_cast<uint64_t>(workers);
    printServerStep(out, (handled + per_round - 1) / per_round, figures, server.lastLr(), true);
    return Status::ok();
  }
};

// async: one thread per worker, each on the pair communicator of the two, so that a worker that
// is slow to send or to take its reply (descheduled, stopped) holds up its own thread only; the
// shard and the figures are shared under a mutex.
Status serveAsync(train::ShardServer& server, int shard, uint64_t budget,
                  const train::ParameterServerConfig& ps,
                  const std::vector<std::unique_ptr<comm::Communicator>>& pairs,
                  const WorkerOptions& options, job::PhaseBoard& phase, std::FILE* out,
                  std::FILE* log) {
  const int workers = static_cast<int>(pairs.size());
  AsyncShard state{server, shard, budget, workers, ps, pairs, options, phase, out};
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) threads.emplace_back([&state, w] { state.serve(w); });
  for (std::thread& t : threads) t.join();
  if (!state.failure.isOk()) return state.failure;
  RM_RETURN_IF_ERROR(state.sendFinal());
  std::fprintf(log, "rank %d: served %llu pushes, applied %llu\n", options.rank,
               static_cast<unsigned long long>(state.served),
               static_cast<unsigned long long>(server.version()));
  return Status::ok();
}

Status runServer(const train::NativeConfig& config, const WorkerOptions& options,
                 comm::Communicator* comm,
                 const std::vector<std::unique_ptr<comm::Communicator>>& pairs,
                 job::PhaseBoard& phase, std::FILE* out, std::FILE* log) {
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
            sendShard(w, kReplyTag, ReplyHeader{server.version(), 0, 0, 0, lr}, &figures));
      }
      if (step % options.metrics_every == 0 || step == steps) {
        printServerStep(out, step, figures, lr, false);
      }
    }
  } else {
    RM_RETURN_IF_ERROR(serveAsync(server, shard, steps * static_cast<uint64_t>(workers), ps, pairs,
                                  options, phase, out, log));
  }
  std::fprintf(log, "rank %d done: shard %d at version %llu\n", options.rank, shard,
               static_cast<unsigned long long>(server.version()));
  return Status::ok();
}

}  // namespace

Status runParameterServerRank(const train::NativeConfig& config, const WorkerOptions& options,
                              comm::KeyValueStore* store, comm::Communicator* comm,
                              job::PhaseBoard& phase, std::FILE* out, std::FILE* log) {
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
  const bool server = layout.isServer(options.rank);
  // async: a communicator of its own for every (server, worker) pair, made in the order of
  // server + worker, which both sides follow, so no two wait for each other.
  std::vector<std::unique_ptr<comm::Communicator>> pairs;
  if (ps.mode == train::PsMode::kAsync) {
    const int count = server ? layout.workers() : ps.servers;
    for (int other = 0; other < count; ++other) {
      const int shard = server ? layout.shardOf(options.rank) : other;
      const int worker = server ? other : options.rank;
      comm::GlooOptions gloo;
      gloo.rank = server ? 0 : 1;
      gloo.size = 2;
      gloo.store = store;
      gloo.storePrefix = "attempt-" + std::to_string(options.attempt) + "/ps/" +
                         std::to_string(shard) + "-" + std::to_string(worker) + "/";
      gloo.hostname = options.bind_address;
      Result<std::unique_ptr<comm::Communicator>> pair = comm::createGlooCommunicator(gloo);
      if (!pair.isOk()) {
        return withContext(pair.status(), "connecting server " + std::to_string(shard) +
                                              " and worker " + std::to_string(worker));
      }
      pairs.push_back(std::move(*pair));
    }
  }
  Status done;
  if (server) {
    done = runServer(config, options, comm, pairs, phase, out, log);
  } else {
    std::vector<ServerLink> links;
    for (int s = 0; s < ps.servers; ++s) {
      const int rank = layout.serverRank(s);
      links.push_back(pairs.empty() ? ServerLink{comm, rank, rank}
                                    : ServerLink{pairs[static_cast<size_t>(s)].get(), 0, rank});
    }
    done = runWorker(config, options, std::move(links), phase, out, log);
  }
  RM_RETURN_IF_ERROR(done);
  // Peers may still be finishing their last message (see NOTES.md on Gloo).
  phase.enter(job::RankPhase::kBarrier);
  return comm->barrier();
}

}  // namespace ringmaster::agent
