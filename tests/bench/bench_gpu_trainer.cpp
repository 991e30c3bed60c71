// bench_gpu_trainer: the native trainer's GPU path (CUDA device 0, cuBLAS) measured twice in one
// run. (1) Agreement: the CPU trainer and the GPU trainer start from the same seed and train the
// same MLP on the same batches; their loss trajectories must agree within kLossTolerance
// (relative) at every step: both compute in float32 but sum in different orders (OpenBLAS vs
// cuBLAS), so they drift apart by rounding, not by more. (2) Speed: samples/s of the GPU trainer
// against PyTorch on the same GPU training the same MLP, batch and optimizer; the trainer reads
// the loss back every step (what a rank does by default: it prints every step's loss) and, beside
// it, every 10th step (a rank started with --metrics-every 10). Exits 77 (skipped) on a host
// without a CUDA device, saying so.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "harness.h"
#include "ringmaster/train/gpu_model.h"
#include "ringmaster/train/trainer.h"

using namespace ringmaster;

namespace {

constexpr int kDevice = 0;
constexpr double kLossTolerance = 0.02;  // relative, at every step

struct BenchModel {
  const char* name;
  size_t features, hidden1, hidden2, classes, batch;
  uint64_t steps;  // per timed stretch
};
constexpr BenchModel kModels[] = {
    {"MLP 32-128-64-4, batch 64", 32, 128, 64, 4, 64, 2000},
    {"MLP 32-1024-1024-4, batch 256", 32, 1024, 1024, 4, 256, 1000},
    {"MLP 256-4096-4096-16, batch 1024", 256, 4096, 4096, 16, 1024, 200},
};

train::NativeConfig configFor(const BenchModel& m, uint64_t steps) {
  train::NativeConfig config;
  config.model.hidden = {m.hidden1, m.hidden2};
  config.dataset.samples = 20000;
  config.dataset.features = m.features;
  config.dataset.classes = m.classes;
  config.batch_size = m.batch;
  config.steps = steps;
  config.optimizer.lr = 0.05;
  config.optimizer.momentum = 0.9;
  config.seed = 7;
  return config;
}

struct Agreement {
  double max_relative = 0;
  uint64_t worst_step = 0;
  double cpu_first = 0, cpu_last = 0, gpu_last = 0;
  bool ok = false;
};

Agreement compareTrajectories(uint64_t steps) {
  Agreement result;
  const train::NativeConfig config = configFor(kModels[0], steps);
  auto cpu = train::Trainer::create(config);
  auto gpu = train::GpuTrainer::create(config, kDevice);
  if (!cpu.isOk() || !gpu.isOk()) {
    std::fprintf(stderr, "bench_gpu_trainer: %s\n",
                 (cpu.isOk() ? gpu.status() : cpu.status()).toString().c_str());
    return result;
  }
  for (uint64_t i = 0; i < steps; ++i) {
    auto a = cpu->step();
    auto b = (*gpu)->step();
    if (!a.isOk() || !b.isOk()) {
      std::fprintf(stderr, "bench_gpu_trainer: step %llu: %s\n", static_cast<unsigned long long>(i),
                   (a.isOk() ? b.status() : a.status()).toString().c_str());
      return result;
    }
    if (i == 0) result.cpu_first = a->loss;
    result.cpu_last = a->loss;
    result.gpu_last = b->loss;
    const double relative = std::abs(a->loss - b->loss) / std::max(std::abs(a->loss), 1e-3);
    if (relative > result.max_relative) {
      result.max_relative = relative;
      result.worst_step = i;
    }
  }
  result.ok = result.max_relative <= kLossTolerance;
  return result;
}

// Best of three timed stretches after a warm-up. Every stretch ends with a measured step (its
// loss read back), so with the device done: the steps per stretch are multiples of report_every.
double gpuSamplesPerSecond(const BenchModel& m, uint64_t report_every) {
  train::TrainerOptions options;
  options.report_every = report_every;
  auto trainer = train::GpuTrainer::create(configFor(m, 100 + 3 * m.steps), kDevice, options);
  if (!trainer.isOk()) {
    std::fprintf(stderr, "bench_gpu_trainer: %s\n", trainer.status().toString().c_str());
    return 0;
  }
  for (int i = 0; i < 100; ++i) {
    if (!(*trainer)->step().isOk()) return 0;
  }
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < m.steps; ++i) {
      if (!(*trainer)->step().isOk()) return 0;
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, static_cast<double>(m.steps * m.batch) / seconds);
  }
  return best;
}

double torchSamplesPerSecond(const BenchModel& m) {
  const char* python = std::getenv("RINGMASTER_PYTHON");
  auto peer = testing::runCommand(
      {python && *python ? python : "python3",
       testing::sourcePath("tests/bench/torch_trainer_peer.py"), std::to_string(m.features),
       std::to_string(m.hidden1), std::to_string(m.hidden2), std::to_string(m.classes),
       std::to_string(m.batch), std::to_string(m.steps), "1", "cuda"},
      {}, 300000);
  if (peer.exit_code == 0 && peer.out.rfind("samples_per_s=", 0) == 0) {
    return std::stod(peer.out.substr(14));
  }
  std::fprintf(stderr, "bench_gpu_trainer: PyTorch CUDA peer unavailable (exit %d): %s%s\n",
               peer.exit_code, peer.out.c_str(), peer.err.c_str());
  return 0;
}

}  // namespace

int main() {
  if (!train::gpuAvailable()) {
    std::printf("bench_gpu_trainer: skipped: %s\n", train::gpuCount().status().message().c_str());
    return 77;
  }
  train::setBlasThreads(1);
  const uint64_t kAgreementSteps = 500;
  const Agreement agreement = compareTrajectories(kAgreementSteps);
  std::printf(
      "CPU vs GPU trainer, same seed, %llu steps of %s: loss %.4f -> %.4f (CPU), %.4f (GPU); "
      "largest relative difference %.2e at step %llu (tolerance %.0e)\n",
      static_cast<unsigned long long>(kAgreementSteps), kModels[0].name, agreement.cpu_first,
      agreement.cpu_last, agreement.gpu_last, agreement.max_relative,
      static_cast<unsigned long long>(agreement.worst_step), kLossTolerance);

  std::string result = "RESULT agreement_max_rel=" + std::to_string(agreement.max_relative);
  bool all_ran = agreement.ok;
  for (size_t i = 0; i < std::size(kModels); ++i) {
    const BenchModel& m = kModels[i];
    const double ours = gpuSamplesPerSecond(m, 1);
    const double ours_every10 = gpuSamplesPerSecond(m, 10);
    const double torch = torchSamplesPerSecond(m);
    const auto ratio = [torch](double x) { return torch > 0 ? x / torch : 0.0; };
    std::printf(
        "%s: native GPU %.0f samples/s (loss read every step), %.0f (every 10th), PyTorch CUDA "
        "%.0f; ratios %.3f, %.3f\n",
        m.name, ours, ours_every10, torch, ratio(ours), ratio(ours_every10));
    const std::string tag = " m" + std::to_string(i);
    result += tag + "_samples_per_s=" + std::to_string(static_cast<long>(ours)) + tag +
              "_every10_samples_per_s=" + std::to_string(static_cast<long>(ours_every10)) + tag +
              "_torch_samples_per_s=" + std::to_string(static_cast<long>(torch)) + tag +
              "_ratio_vs_torch=" + std::to_string(ratio(ours)) + tag +
              "_every10_ratio_vs_torch=" + std::to_string(ratio(ours_every10));
    all_ran = all_ran && ours > 0 && ours_every10 > 0;
  }
  std::printf("%s\n", result.c_str());
  return all_ran ? 0 : 1;
}
