// bench_trainer: samples/s of the native trainer (one rank, MLP 32-128-64-4, batch 64, SGD with
// momentum, 1 BLAS thread) side by side with PyTorch on the CPU training the same MLP with the
// same batch and thread count in the same run; and data-parallel scaling from 1 to 2 ranks
// (threads of this process, Gloo over loopback TCP, bucketed allreduce overlapping backward),
// for that MLP and for a larger one (32-1024-1024-4, batch 256) whose steps are long enough for
// communication not to dominate. scaling = samples/s of both ranks together / of one rank.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "ringmaster/comm/communicator.h"
#include "ringmaster/train/blas_choice.h"
#include "ringmaster/train/model.h"
#include "ringmaster/train/trainer.h"
#include "worker/gradient_sync.h"

using namespace ringmaster;

namespace {

struct BenchModel {
  size_t hidden1, hidden2, batch;
  uint64_t steps;  // timed steps (3 stretches)
};
constexpr size_t kFeatures = 32, kClasses = 4;
constexpr BenchModel kSmall{128, 64, 64, 3000};
constexpr BenchModel kLarge{1024, 1024, 256, 90};

train::NativeConfig benchConfig(const BenchModel& m) {
  train::NativeConfig config;
  config.model.hidden = {m.hidden1, m.hidden2};
  config.dataset.samples = 40000;
  config.dataset.features = kFeatures;
  config.dataset.classes = kClasses;
  config.batch_size = m.batch;
  config.steps = m.steps + 400;
  config.optimizer.lr = 0.05;
  config.optimizer.momentum = 0.9;
  return config;
}

// Best of three timed stretches after a warm-up, in samples/s of this rank.
double timeRank(train::Trainer& trainer, const BenchModel& m, comm::Communicator* comm) {
  for (uint64_t i = 0; i < std::min<uint64_t>(100, m.steps / 3); ++i) {
    if (!trainer.step().isOk()) return 0;
  }
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    if (comm && !comm->barrier().isOk()) return 0;
    const auto start = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < m.steps / 3; ++i) {
      if (!trainer.step().isOk()) return 0;
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, static_cast<double>(m.steps / 3 * m.batch) / seconds);
  }
  return best;
}

double oneRank(const BenchModel& m) {
  auto trainer = train::Trainer::create(benchConfig(m));
  return trainer.isOk() ? timeRank(*trainer, m, nullptr) : 0;
}

double twoRanks(const BenchModel& m) {
  comm::InMemoryStore store;
  std::vector<double> rates(2, 0);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      comm::GlooOptions options;
      options.rank = rank;
      options.size = 2;
      options.store = &store;
      options.hostname = "127.0.0.1";
      auto comm = comm::createGlooCommunicator(options);
      if (!comm.isOk()) return;
      agent::GradientSync sync(comm->get());
      train::TrainerOptions trainer_options;
      trainer_options.rank = rank;
      trainer_options.world_size = 2;
      trainer_options.on_layer_grad_ready = [&](size_t, float* g, size_t n) {
        sync.onLayerReady(g, n);
      };
      trainer_options.reduce_gradients = [&](std::span<float> g) { return sync.finish(g); };
      auto trainer = train::Trainer::create(benchConfig(m), trainer_options);
      if (!trainer.isOk()) return;
      rates[static_cast<size_t>(rank)] = timeRank(*trainer, m, comm->get());
      if (!(*comm)->barrier().isOk()) rates[static_cast<size_t>(rank)] = 0;
    });
  }
  for (auto& t : threads) t.join();
  return rates[0] + rates[1];
}

double torchPeer(const BenchModel& m) {
  auto peer = testing::runCommand(
      {"/usr/bin/python3", testing::sourcePath("tests/bench/torch_trainer_peer.py"),
       std::to_string(kFeatures), std::to_string(m.hidden1), std::to_string(m.hidden2),
       std::to_string(kClasses), std::to_string(m.batch), std::to_string(m.steps / 3), "1"},
      {}, 110000);
  if (peer.exit_code == 0 && peer.out.rfind("samples_per_s=", 0) == 0) {
    return std::stod(peer.out.substr(14));
  }
  std::fprintf(stderr, "bench_trainer: PyTorch peer unavailable: %s\n", peer.err.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // OpenBLAS picks its kernels when it loads; both sides must run with the same ones, the ones
  // the agent gives native ranks (NativeLauncher::tune).
  const std::string core = train::preferredOpenblasCoreType();
  if (!std::getenv("OPENBLAS_CORETYPE") && !core.empty()) {
    ::setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
    ::execv("/proc/self/exe", argv);
  }
  (void)argc;
  train::setBlasThreads(1);
  const double ours = oneRank(kSmall);
  const double torch = torchPeer(kSmall);
  const double two = twoRanks(kSmall);
  const double large_one = oneRank(kLarge);
  const double large_two = twoRanks(kLarge);

  std::printf("OpenBLAS kernels: %s (OPENBLAS_CORETYPE=%s), 1 thread per rank\n",
              train::blasCoreName().c_str(),
              std::getenv("OPENBLAS_CORETYPE") ? std::getenv("OPENBLAS_CORETYPE") : "unset");
  std::printf(
      "MLP 32-128-64-4, batch 64:  native 1 rank %.0f samples/s, PyTorch %.0f, native 2 "
      "ranks %.0f\n",
      ours, torch, two);
  std::printf("MLP 32-1024-1024-4, batch 256: native 1 rank %.0f samples/s, 2 ranks %.0f\n",
              large_one, large_two);
  std::printf(
      "RESULT samples_per_s=%.0f torch_samples_per_s=%.0f ratio_vs_torch=%.3f "
      "samples_per_s_2ranks=%.0f scaling_2ranks=%.3f large_samples_per_s=%.0f "
      "large_scaling_2ranks=%.3f\n",
      ours, torch, torch > 0 ? ours / torch : 0.0, two, ours > 0 ? two / ours : 0.0, large_one,
      large_one > 0 ? large_two / large_one : 0.0);
  return ours > 0 && two > 0 ? 0 : 1;
}
