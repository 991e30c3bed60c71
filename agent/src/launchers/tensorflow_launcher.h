#pragma once
// launcher: tensorflow. Each rank gets TF_CONFIG, the JSON TensorFlow's TFConfigClusterResolver
// reads: {"cluster": {"chief": [...], "worker": [...], "ps": [...]}, "task": {"type": T,
// "index": I}}, one cluster for every rank and a task of its own. The roles come from the spec's
// `tensorflow: {chief: true, ps: N}`: rank 0 is the chief when asked for, the last N ranks are
// parameter servers, the others workers in rank order (without a chief, worker 0 leads, as
// multi_worker_util.is_chief says). Task addresses are HOST:PORT with the host of the rank's
// agent (the gang's host_address) and port MASTER_PORT + rank: rank 0's is the port its agent
// reserved, the others must be free on their hosts. Roles with no task are left out of the
// cluster (a job with no ps has no "ps" key). Contract-tested against TensorFlow's parsing
// rules, not run with TensorFlow.

#include "launcher.h"

namespace ringmaster::agent {

// TF_CONFIG for global rank `rank` of the launch; an error naming what is missing (the roles do
// not fit world_size, a rank's agent is unknown, the ports would pass 65535).
Result<std::string> tensorflowConfig(const proto::JobLaunch& launch, int rank);

class TensorflowLauncher : public Launcher {
 public:
  job::Launcher kind() const override { return job::Launcher::kTensorflow; }
  Status validate(const proto::JobLaunch& launch) const override;
  std::vector<std::string> argv(const proto::JobLaunch& launch, const proto::RankAssignment& rank,
                                const JobFiles& files) const override;
  Result<EnvEntries> environment(const proto::JobLaunch& launch,
                                 const proto::RankAssignment& rank) const override;
  std::optional<std::string> explainFailure(const std::vector<std::string>& tail,
                                            const std::string& interpreter) const override;
};

}  // namespace ringmaster::agent
