#pragma once
// launcher: native. Each rank is ringmaster-worker with the job's native: section; it reports
// its phase through RINGMASTER_PHASE_FILE, so the agent sees it set up before its first step.

#include "launcher.h"

namespace ringmaster::agent {

class NativeLauncher : public Launcher {
 public:
  job::Launcher kind() const override { return job::Launcher::kNative; }
  Status validate(const proto::JobLaunch& launch) const override;
  std::vector<std::string> argv(const proto::JobLaunch& launch, const proto::RankAssignment& rank,
                                const JobFiles& files) const override;
  void tune(std::vector<std::string>* env) const override;
  bool reportsPhase() const override { return true; }
};

}  // namespace ringmaster::agent
