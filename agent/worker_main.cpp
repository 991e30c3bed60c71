// ringmaster-worker: one rank of a `native` job, started by ringmaster-agent with the job's
// environment (RANK, WORLD_SIZE, RINGMASTER_*). Thin: environment and flags in, runNativeWorker.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "ringmaster/client/rendezvous_store.h"
#include "worker/native_worker.h"

using namespace ringmaster;

namespace {

int envInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value && *value ? std::atoi(value) : fallback;
}

std::string envString(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::atomic<int> stop_state{agent::kStopKills};
std::atomic<bool> sigterm_received{false};
static_assert(std::atomic<int>::is_always_lock_free, "used in a signal handler");
static_assert(std::atomic<bool>::is_always_lock_free, "used in a signal handler");
// How long a rank that stopped because other ranks were asked waits for its own SIGTERM.
constexpr int kOwnSigtermWaitMs = 5000;

void endBySigterm() {
  std::signal(SIGTERM, SIG_DFL);
  std::raise(SIGTERM);
}

// SIGTERM while training asks the ranks to stop together, for kStopAgreeSeconds
// (native_worker.h); otherwise it ends the rank as it always did.
void onTerminate(int) {
  sigterm_received.store(true);
  int training = agent::kStopAsks;
  if (stop_state.compare_exchange_strong(training, agent::kStopAsked)) {
    ::alarm(agent::kStopAgreeSeconds);
    return;
  }
  if (training == agent::kStopKills) endBySigterm();
}

void onAgreeTimeout(int) {
  if (stop_state.load() != agent::kStopAgreed) endBySigterm();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ringmaster-worker: one rank of a native data-parallel training job"};
  agent::WorkerOptions options;
  app.add_option("--config", options.config_path, "the job's native: section (YAML)")->required();
  app.add_option("--backend", options.backend, "auto | gloo | nccl")
      ->check(CLI::IsMember({"auto", "gloo", "nccl"}))
      ->capture_default_str();
  app.add_option("--metrics-every", options.metrics_every, "report metrics every N steps")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  options.rank = envInt("RANK", 0);
  options.local_rank = envInt("LOCAL_RANK", options.rank);
  options.world_size = envInt("WORLD_SIZE", 1);
  options.attempt = static_cast<uint32_t>(envInt("RINGMASTER_ATTEMPT", 1));
  options.checkpoint_dir = envString("RINGMASTER_CHECKPOINT_DIR");
  options.bind_address = envString("RINGMASTER_HOST_ADDRESS");
  options.phase_file = envString("RINGMASTER_PHASE_FILE");
  if (!options.checkpoint_dir.empty()) {
    // One directory per rank: ranks of one host never write the same file.
    options.checkpoint_dir += "/rank-" + std::to_string(options.rank);
  }

  std::unique_ptr<client::AgentRendezvousStore> store;
  if (options.world_size > 1) {
    auto where = client::RendezvousEndpoint::fromEnvironment();
    if (!where.isOk()) {
      std::fprintf(stderr, "ringmaster-worker: %s\n", where.status().message().c_str());
      return 2;
    }
    auto connected = client::AgentRendezvousStore::connect(*where);
    if (!connected.isOk()) {
      std::fprintf(stderr, "ringmaster-worker: %s\n", connected.status().message().c_str());
      return 1;
    }
    store = std::move(*connected);
  }
  options.stop = &stop_state;
  std::signal(SIGALRM, onAgreeTimeout);
  std::signal(SIGTERM, onTerminate);
  Status status = agent::runNativeWorker(options, store.get(), stdout, stderr);
  if (status.code() == ErrorCode::kCancelled && stop_state.load() == agent::kStopAgreed) {
    // Ended by the SIGTERM, as its agent expects of a stopped rank: now with a checkpoint. The
    // vote may have stopped this rank before its own agent's SIGTERM came (the other ranks'
    // agents heard of the stop first): a rank that ends by SIGTERM its agent did not send is a
    // failure there, so it waits for that SIGTERM a while.
    std::fflush(nullptr);
    for (int waited = 0; !sigterm_received.load() && waited < kOwnSigtermWaitMs; waited += 10) {
      ::usleep(10000);
    }
    endBySigterm();
  }
  if (!status.isOk()) {
    std::fprintf(stderr, "ringmaster-worker: rank %d: %s\n", options.rank,
                 status.toString().c_str());
    return 1;
  }
  return 0;
}
