// The GPU path when Ringmaster is built without CUDA (RINGMASTER_WITH_CUDA=OFF, no CUDA toolkit,
// or no CUDA compiler): there is no GPU model, and every factory says so. GpuTrainer
// (gpu_trainer.cpp) is built either way and fails in createGpuMlp().
#include "ringmaster/train/gpu_model.h"

namespace ringmaster::train {
namespace {

Status builtWithoutCuda() {
  return Status(ErrorCode::kUnimplemented,
                "gpu: Ringmaster was built without CUDA (RINGMASTER_WITH_CUDA=OFF, or no CUDA "
                "toolkit or compiler found): the native trainer has no GPU path");
}

}  // namespace

Result<int> gpuCount() { return builtWithoutCuda(); }

bool gpuAvailable() { return false; }

Result<std::unique_ptr<GpuMlp>> createGpuMlp(const MlpOptions&, int) { return builtWithoutCuda(); }

Result<std::unique_ptr<GpuOptimizer>> createGpuOptimizer(const OptimizerOptions&, GpuMlp*) {
  return builtWithoutCuda();
}

}  // namespace ringmaster::train
