#pragma once
// launcher: torchrun. The common contract is torchrun's own (env_contract.h); a .py script runs
// under the spec's python: or the first python3 on the job's PATH, as torchrun runs scripts with
// its interpreter. A rank that dies because that interpreter has no torch is told so.

#include "launcher.h"

namespace ringmaster::agent {

class TorchrunLauncher : public Launcher {
 public:
  job::Launcher kind() const override { return job::Launcher::kTorchrun; }
  std::vector<std::string> argv(const proto::JobLaunch& launch, const proto::RankAssignment& rank,
                                const JobFiles& files) const override;
  std::optional<std::string> explainFailure(const std::vector<std::string>& tail,
                                            const std::string& interpreter) const override;
};

}  // namespace ringmaster::agent
