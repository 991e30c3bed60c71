#include "native_launcher.h"

#include "ringmaster/train/blas_choice.h"

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

// OpenBLAS's best kernels for this CPU (train::preferredOpenblasCoreType), unless the environment
// already chose.
void NativeLauncher::tune(std::vector<std::string>* env) const {
  for (const auto& entry : *env) {
    if (entry.rfind("OPENBLAS_CORETYPE=", 0) == 0) return;
  }
  const std::string core = train::preferredOpenblasCoreType();
  if (!core.empty()) env->push_back("OPENBLAS_CORETYPE=" + core);
}

}  // namespace ringmaster::agent
