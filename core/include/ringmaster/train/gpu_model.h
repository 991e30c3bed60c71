#pragma once
// The native trainer's GPU path: the same MLP as model.h computed with cuBLAS and small CUDA
// kernels, the optimizers of optimizer.h on the device, and a trainer loop (GpuTrainer) that
// reuses the CPU path's config, data, sampler and checkpoint code.
//
// A plain C++ header (no CUDA types), so code built without CUDA can include it. When Ringmaster
// is built without CUDA, the factories return UNIMPLEMENTED ("built without CUDA") and
// gpuAvailable() is false.
//
// Semantics match the CPU Mlp / Optimizer (same parameter layout, losses, activations, update
// formulas); results agree to float rounding, not bit for bit (summation orders differ, and GELU
// and tanh use CUDA's functions where the CPU uses approximations good to ~2e-7). cuBLAS runs in
// full FP32 (no TF32). No kernel uses atomics, so data-parallel ranks stay bit-identical as on the
// CPU: they apply the same reduced gradients with the same element-wise updates.
//
// Device memory: params and grads live on the device. deviceParams() / deviceGrads() are device
// pointers (for NCCL); copy*() move them to and from the host.
//
// Synchronisation: the model's work runs in order on its own CUDA stream, the optimizer's too.
// Calls that hand results to the host (forward(), evaluate(), clipGradNorm(), the copies,
// takeTotals(), synchronize()) return when the device is done. The training step's calls
// (forwardRows(), backward(), queueClipGradNorm(), zeroGrads(), GpuOptimizer::apply()) only
// queue their work, so the host prepares the next step while the device computes; the per-layer
// backward callback still runs when that layer's gradient is complete in device memory. Before
// another stream (NCCL's) reads deviceGrads() outside such a callback, call synchronize().
//
// Thread safety: a GpuMlp / GpuOptimizer / GpuTrainer is not thread-safe; one thread drives it
// (the calls make the model's device current on the calling thread). Distinct objects may be used
// from different threads.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ringmaster/train/checkpoint.h"
#include "ringmaster/train/config.h"
#include "ringmaster/train/data.h"
#include "ringmaster/train/model.h"
#include "ringmaster/train/optimizer.h"
#include "ringmaster/train/sampler.h"
#include "ringmaster/train/trainer.h"
#include "ringmaster/util/result.h"

namespace ringmaster::train {

// Number of CUDA devices this process can use (cudaGetDeviceCount), always >= 1 when ok.
// Errors: UNAVAILABLE when the CUDA runtime reports any error (no driver, a driver older than
// the runtime, no device) or no device: the message says which; UNIMPLEMENTED when built without
// CUDA.
Result<int> gpuCount();
// gpuCount().isOk().
bool gpuAvailable();

// An Mlp on one GPU. Create with createGpuMlp().
class GpuMlp {
 public:
  virtual ~GpuMlp() = default;
  GpuMlp(const GpuMlp&) = delete;
  GpuMlp& operator=(const GpuMlp&) = delete;

  virtual const MlpOptions& options() const = 0;
  virtual const std::vector<LayerView>& layers() const = 0;
  virtual size_t numParams() const = 0;
  virtual size_t numOutputs() const = 0;
  // The CUDA device ordinal this model lives on.
  virtual int device() const = 0;

  // Device memory, numParams() floats each, laid out as Mlp::params() / Mlp::grads().
  virtual std::span<float> deviceParams() = 0;
  virtual std::span<float> deviceGrads() = 0;

  // REQUIRES: the span has numParams() floats (INVALID_ARGUMENT otherwise).
  virtual Status copyParamsFrom(std::span<const float> host) = 0;
  virtual Status copyParamsTo(std::span<float> host) const = 0;
  virtual Status copyGradsTo(std::span<float> host) const = 0;
  virtual Status zeroGrads() = 0;

  // As Mlp::forward(), with the batch in host memory (copied to the device). Returns the mean
  // loss. Errors: INVALID_ARGUMENT (empty batch; a classification target that is not a class
  // index), INTERNAL (a CUDA or cuBLAS error).
  virtual Result<float> forward(const Batch& batch) = 0;
  // As Mlp::backward(), queued: `grad` in the callback is a device pointer into deviceGrads().
  // After forwardRows(), `batch` needs only its size. Errors: INVALID_ARGUMENT (not the batch of
  // the last forward() or forwardRows()), INTERNAL.
  virtual Status backward(const Batch& batch, const LayerGradReadyFn& on_layer_grad_ready = {},
                          const BackwardOptions& options = {}) = 0;
  // As Mlp::evaluate(), with features and targets in host memory.
  virtual Result<EvalTotals> evaluate(const float* features, const float* targets, size_t n,
                                      size_t chunk = 256) = 0;
  // As clipGradNorm() (optimizer.h) on deviceGrads(): the norm before clipping.
  virtual Result<double> clipGradNorm(double max_norm) = 0;

  // --- The training step without a host round trip -------------------------------------------
  // Copies a data set (n rows of options().inputs features, n targets) to the device once, so
  // that forwardRows() gathers each batch there. Classification targets are checked here, once.
  // Errors: INVALID_ARGUMENT (n == 0; a target that is not a class index: names its row),
  // RESOURCE_EXHAUSTED (it would take more than half the device's free memory: use forward()
  // with host batches instead), INTERNAL.
  virtual Status uploadData(const float* features, const float* targets, size_t n) = 0;
  // forward() of the uploaded rows `indices`, queued. The batch's mean loss is added to a device
  // total (started afresh when !add_to_total) that takeTotals() reads.
  // Errors: INVALID_ARGUMENT (no uploadData(); no rows; an index past the data), INTERNAL.
  virtual Status forwardRows(std::span<const uint32_t> indices, bool add_to_total) = 0;
  // clipGradNorm(), queued: the norm stays on the device for takeTotals().
  virtual Status queueClipGradNorm(double max_norm) = 0;
  struct Totals {
    double loss = 0.0;       // the sum of forwardRows()' batch mean losses since the total began
    double grad_norm = 0.0;  // the last queueClipGradNorm()'s norm, before clipping
  };
  // Waits for the queued work and reads the totals.
  virtual Result<Totals> takeTotals() = 0;
  // Waits for the queued work.
  virtual Status synchronize() = 0;

 protected:
  GpuMlp() = default;
};

// Allocates zeroed parameters on CUDA device `device` (LOCAL_RANK % gpuCount() for a rank).
// Initialise them with Mlp::initialize() on a CPU Mlp of the same options and copyParamsFrom(),
// as GpuTrainer does: the initial weights are the CPU path's.
// Errors: INVALID_ARGUMENT (bad options, as Mlp::create(); a device that does not exist),
// UNAVAILABLE (no CUDA device on this host), UNIMPLEMENTED (built without CUDA), INTERNAL.
Result<std::unique_ptr<GpuMlp>> createGpuMlp(const MlpOptions& options, int device);

// Optimizer on a GpuMlp's device buffers: the formulas, schedule and checkpoint state of
// Optimizer (optimizer.h). Its serialised state is Optimizer::serializeState()'s format, so
// checkpoints move between the CPU and the GPU path.
class GpuOptimizer {
 public:
  virtual ~GpuOptimizer() = default;
  GpuOptimizer(const GpuOptimizer&) = delete;
  GpuOptimizer& operator=(const GpuOptimizer&) = delete;

  virtual const OptimizerOptions& options() const = 0;
  virtual uint64_t step() const = 0;
  double currentLr() const { return learningRateAt(options(), step()); }

  // One update of the model's parameters from its gradients (already averaged and clipped).
  // Returns the lr used. Errors: INTERNAL.
  virtual Result<double> apply() = 0;

  virtual Result<std::string> serializeState() const = 0;
  // Refuses what Optimizer::restoreState() refuses, with the same messages.
  virtual Status restoreState(std::string_view bytes) = 0;

 protected:
  GpuOptimizer() = default;
};

// Validates the options as Optimizer::create() and allocates zeroed moments next to `model`'s
// parameters. `model` is not owned and must outlive the optimizer.
// Errors: INVALID_ARGUMENT (names the field), UNIMPLEMENTED (built without CUDA), INTERNAL.
Result<std::unique_ptr<GpuOptimizer>> createGpuOptimizer(const OptimizerOptions& options,
                                                         GpuMlp* model);

// Trainer (trainer.h) with the math on a GPU: the same steps, sampler order, evaluation and
// checkpoints. TrainerOptions::reduce_gradients and on_layer_grad_ready receive DEVICE memory
// (deviceGrads()): hand them to an NCCL communicator.
class GpuTrainer {
 public:
  // Loads the data (loadData()), builds the model on `device` with the CPU path's initial
  // weights, the optimizer and the sampler.
  static Result<std::unique_ptr<GpuTrainer>> create(const NativeConfig& config, int device,
                                                    TrainerOptions options = {});
  static Result<std::unique_ptr<GpuTrainer>> create(const NativeConfig& config, int device,
                                                    Split data, TrainerOptions options);

  // As Trainer, but the loss, gradient norm and timing are read back (a wait for the device) only
  // every options.report_every steps and at the last; the other steps' reports say !measured.
  // REQUIRES: !done()
  Result<StepReport> step();
  Result<EvalReport> evaluate();
  bool done() const { return step_ >= total_steps_; }
  uint64_t completedSteps() const { return step_; }
  uint64_t totalSteps() const { return total_steps_; }
  size_t stepsPerEpoch() const { return steps_per_epoch_; }
  bool evaluationDue(const StepReport& report) const;

  // Whether the training data lives on the device (gathered there each step), or each batch is
  // gathered on the host and copied (when the data takes more than half the free device memory).
  bool dataOnDevice() const { return data_on_device_; }

  // Parameters are copied to the host.
  Result<CheckpointState> checkpointState() const;
  Status restore(const CheckpointState& state);
  Result<uint64_t> paramChecksum() const;

  const NativeConfig& config() const { return config_; }
  GpuMlp& model() { return *model_; }
  const GpuOptimizer& optimizer() const { return *optimizer_; }

 private:
  GpuTrainer(const NativeConfig& config, Split data, TrainerOptions options,
             std::unique_ptr<GpuMlp> model, std::unique_ptr<GpuOptimizer> optimizer,
             DistributedSampler sampler, uint64_t total_steps);

  NativeConfig config_;
  Split data_;
  TrainerOptions options_;
  std::unique_ptr<GpuMlp> model_;
  std::unique_ptr<GpuOptimizer> optimizer_;  // refers to *model_
  DistributedSampler sampler_;
  uint64_t step_ = 0;
  uint64_t total_steps_ = 0;
  size_t steps_per_epoch_ = 0;
  bool data_on_device_ = false;
  // Steps and samples since the last measured step, and when the first of them began.
  uint64_t unmeasured_steps_ = 0;
  size_t unmeasured_samples_ = 0;
  std::chrono::steady_clock::time_point unmeasured_since_;
  std::vector<uint32_t> indices_;
  BatchBuffer batch_;  // on the host-batch path
};

}  // namespace ringmaster::train
