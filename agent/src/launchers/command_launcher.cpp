#include "command_launcher.h"

namespace ringmaster::agent {

std::vector<std::string> CommandLauncher::argv(const proto::JobLaunch& launch,
                                               const proto::RankAssignment&,
                                               const JobFiles&) const {
  return {launch.argv().begin(), launch.argv().end()};
}

}  // namespace ringmaster::agent
