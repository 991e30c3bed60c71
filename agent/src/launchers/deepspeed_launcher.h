#pragma once
// launcher: deepspeed. What deepspeed.launcher.launch gives each rank it spawns: the common
// contract's RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (deepspeed.comm's
// init_distributed needs all five, or it goes looking for MPI), plus CROSS_RANK (the node's
// index), CROSS_SIZE (nodes) and LOCAL_SIZE (ranks on the node); every GPU of the node visible
// (CUDA_VISIBLE_DEVICES, as the device plan does for torchrun); and the script run as
// `python3 script.py --local_rank=N args...` (launch.py puts --local_rank right after the script
// or, with -m, the module). Contract-tested against launch.py, not run with DeepSpeed.

#include "launcher.h"

namespace ringmaster::agent {

class DeepspeedLauncher : public Launcher {
 public:
  job::Launcher kind() const override { return job::Launcher::kDeepspeed; }
  std::vector<std::string> argv(const proto::JobLaunch& launch, const proto::RankAssignment& rank,
                                const JobFiles& files) const override;
  Result<EnvEntries> environment(const proto::JobLaunch& launch,
                                 const proto::RankAssignment& rank) const override;
  std::optional<std::string> explainFailure(const std::vector<std::string>& tail,
                                            const std::string& interpreter) const override;
};

}  // namespace ringmaster::agent
