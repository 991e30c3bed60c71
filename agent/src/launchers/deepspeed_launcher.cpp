#include "deepspeed_launcher.h"

#include "python_entry.h"

namespace ringmaster::agent {

std::vector<std::string> DeepspeedLauncher::argv(const proto::JobLaunch& launch,
                                                 const proto::RankAssignment& rank,
                                                 const JobFiles&) const {
  std::vector<std::string> argv =
      withPythonInterpreter({launch.argv().begin(), launch.argv().end()});
  const std::string local_rank = "--local_rank=" + std::to_string(rank.local_rank());
  if (argv.empty()) return argv;
  // launch.py: [python, -u, (-m), script, --local_rank=N, args...]; with --no_python the program
  // itself is the "script": [program, --local_rank=N, args...].
  const size_t entry = runsPython(argv) ? pythonEntryIndex(argv) : 0;
  argv.insert(argv.begin() + static_cast<std::ptrdiff_t>(std::min(entry + 1, argv.size())),
              local_rank);
  return argv;
}

Result<EnvEntries> DeepspeedLauncher::environment(const proto::JobLaunch& launch,
                                                  const proto::RankAssignment&) const {
  return EnvEntries{{"CROSS_RANK", std::to_string(launch.group_rank())},
                    {"CROSS_SIZE", std::to_string(launch.group_world_size())},
                    {"LOCAL_SIZE", std::to_string(launch.ranks_size())}};
}

std::optional<std::string> DeepspeedLauncher::explainFailure(const std::vector<std::string>& tail,
                                                             const std::string& interpreter) const {
  if (auto torch = missingFrameworkReason(tail, "torch", interpreter)) return torch;
  return missingFrameworkReason(tail, "deepspeed", interpreter);
}

}  // namespace ringmaster::agent
