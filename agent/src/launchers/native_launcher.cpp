#include "native_launcher.h"

namespace ringmaster::agent {

Status NativeLauncher::validate(const proto::JobLaunch& launch) const {
  if (launch.native_yaml().empty())
    return invalidArgument("a native job needs its native: section");
  return Status::ok();
}

std::vector<std::string> NativeLauncher::argv(const proto::JobLaunch& launch,
                                              const proto::RankAssignment&,
                                              const JobFiles& files) const {
  // A job that backend auto put on the CPU (launch.cpu_reason) runs Gloo outright.
  const std::string backend = !launch.cpu_reason().empty() ? "gloo"
                              : launch.backend().empty()   ? "auto"
                                                           : launch.backend();
  return {files.worker_path, "--config", files.job_dir + "/native.yaml", "--backend", backend};
}

// Debian 12's OpenBLAS (0.3.21) does not recognise recent Xeons and falls back to its SSE3
// kernels, 3-5x slower for the native trainer's GEMMs. On a CPU with AVX-512 its SkylakeX kernels
// are safe, so ringmaster-worker gets them unless the environment already chose.
void NativeLauncher::tune(std::vector<std::string>* env) const {
  for (const auto& entry : *env) {
    if (entry.rfind("OPENBLAS_CORETYPE=", 0) == 0) return;
  }
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) env->push_back("OPENBLAS_CORETYPE=SkylakeX");
}

}  // namespace ringmaster::agent
