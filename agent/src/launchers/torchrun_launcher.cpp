#include "torchrun_launcher.h"

#include "python_entry.h"

namespace ringmaster::agent {

std::vector<std::string> TorchrunLauncher::argv(const proto::JobLaunch& launch,
                                                const proto::RankAssignment&,
                                                const JobFiles&) const {
  return withPythonInterpreter({launch.argv().begin(), launch.argv().end()});
}

std::optional<std::string> TorchrunLauncher::explainFailure(const std::vector<std::string>& tail,
                                                            const std::string& interpreter) const {
  return missingFrameworkReason(tail, "torch", interpreter);
}

}  // namespace ringmaster::agent
