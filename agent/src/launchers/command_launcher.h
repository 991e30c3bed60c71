#pragma once
// launcher: command. The program runs as it is, with the common contract (torchrun's variables,
// which a plain program can read too). A .py first word is exec'd itself (its #! line picks the
// interpreter) unless the spec names one with python:.

#include "launcher.h"

namespace ringmaster::agent {

class CommandLauncher : public Launcher {
 public:
  job::Launcher kind() const override { return job::Launcher::kCommand; }
  std::vector<std::string> argv(const proto::JobLaunch& launch, const proto::RankAssignment& rank,
                                const JobFiles& files) const override;
};

}  // namespace ringmaster::agent
