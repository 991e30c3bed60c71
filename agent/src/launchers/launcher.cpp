#include "launcher.h"

#include "command_launcher.h"
#include "deepspeed_launcher.h"
#include "native_launcher.h"
#include "tensorflow_launcher.h"
#include "torchrun_launcher.h"

namespace ringmaster::agent {

Status Launcher::validate(const proto::JobLaunch&) const { return Status::ok(); }

Result<EnvEntries> Launcher::environment(const proto::JobLaunch&,
                                         const proto::RankAssignment&) const {
  return EnvEntries{};
}

void Launcher::tune(std::vector<std::string>*) const {}

std::optional<std::string> Launcher::explainFailure(const std::vector<std::string>&,
                                                    const std::string&) const {
  return std::nullopt;
}

const Launcher* launcherFor(proto::Launcher kind) {
  // Stateless, so one of each serves every job (function-local: built on first use).
  static const NativeLauncher native;
  static const TorchrunLauncher torchrun;
  static const CommandLauncher command;
  static const TensorflowLauncher tensorflow;
  static const DeepspeedLauncher deepspeed;
  switch (kind) {
    case proto::NATIVE:
      return &native;
    case proto::TORCHRUN:
      return &torchrun;
    case proto::COMMAND:
      return &command;
    case proto::TENSORFLOW:
      return &tensorflow;
    case proto::DEEPSPEED:
      return &deepspeed;
    default:
      return nullptr;
  }
}

}  // namespace ringmaster::agent
