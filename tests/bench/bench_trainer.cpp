// bench_trainer: samples/s of the native trainer (one rank, MLP 32-128-64-4, batch 64, SGD with
// momentum, 1 BLAS thread) side by side with PyTorch on the CPU training the same MLP with the
// same batch and thread count in the same run; and data-parallel scaling from 1 to 2 ranks
// (threads of this process, Gloo over loopback TCP, bucketed overlapped allreduce).
// scaling_2ranks = (samples/s of both ranks together) / (samples/s of one rank).
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "ringmaster/comm/communicator.h"
#include "ringmaster/train/model.h"
#include "ringmaster/train/trainer.h"
#include "worker/gradient_sync.h"

using namespace ringmaster;

namespace {

constexpr size_t kFeatures = 32, kHidden1 = 128, kHidden2 = 64, kClasses = 4, kBatch = 64;
constexpr uint64_t kSteps = 3000;

train::NativeConfig benchConfig() {
  train::NativeConfig config;
  config.model.hidden = {kHidden1, kHidden2};
  config.dataset.samples = 40000;
  config.dataset.features = kFeatures;
  config.dataset.classes = kClasses;
  config.batch_size = kBatch;
  config.steps = kSteps + 200;
  config.optimizer.lr = 0.05;
  config.optimizer.momentum = 0.9;
  return config;
}

// Best of three timed stretches of kSteps steps after a warm-up, in samples/s of this rank.
double timeRank(train::Trainer& trainer, comm::Communicator* comm) {
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    if (comm) comm->barrier();
    const auto start = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < kSteps / 3; ++i) {
      if (!trainer.step().isOk()) return 0;
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, static_cast<double>(kSteps / 3 * kBatch) / seconds);
  }
  return best;
}

double oneRank() {
  auto trainer = train::Trainer::create(benchConfig());
  if (!trainer.isOk()) return 0;
  for (int i = 0; i < 200; ++i) trainer->step();
  return timeRank(*trainer, nullptr);
}

double twoRanks() {
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
      auto trainer = train::Trainer::create(benchConfig(), trainer_options);
      if (!trainer.isOk()) return;
      for (int i = 0; i < 200; ++i) trainer->step();
      rates[static_cast<size_t>(rank)] = timeRank(*trainer, comm->get());
      (*comm)->barrier();
    });
  }
  for (auto& t : threads) t.join();
  return rates[0] + rates[1];
}

}  // namespace

int main() {
  train::setBlasThreads(1);
  const double ours = oneRank();
  const double two = twoRanks();
  double torch = 0;
  auto peer = testing::runCommand(
      {"/usr/bin/python3", testing::sourcePath("tests/bench/torch_trainer_peer.py"),
       std::to_string(kFeatures), std::to_string(kHidden1), std::to_string(kHidden2),
       std::to_string(kClasses), std::to_string(kBatch), std::to_string(kSteps / 3), "1"},
      {}, 110000);
  if (peer.exit_code == 0 && peer.out.rfind("samples_per_s=", 0) == 0) {
    torch = std::stod(peer.out.substr(14));
  } else {
    std::fprintf(stderr, "bench_trainer: PyTorch peer unavailable: %s\n", peer.err.c_str());
  }
  std::printf("native trainer, 1 rank, MLP %zu-%zu-%zu-%zu, batch %zu, 1 thread: %.0f samples/s\n",
              kFeatures, kHidden1, kHidden2, kClasses, kBatch, ours);
  std::printf("PyTorch %s, same model, batch and threads:               %.0f samples/s\n",
              torch > 0 ? "CPU" : "(absent)", torch);
  std::printf("native trainer, 2 ranks (Gloo, loopback), both together:   %.0f samples/s\n", two);
  std::printf(
      "RESULT samples_per_s=%.0f torch_samples_per_s=%.0f ratio_vs_torch=%.3f "
      "samples_per_s_2ranks=%.0f scaling_2ranks=%.3f\n",
      ours, torch, torch > 0 ? ours / torch : 0.0, two, ours > 0 ? two / ours : 0.0);
  return ours > 0 && two > 0 ? 0 : 1;
}
