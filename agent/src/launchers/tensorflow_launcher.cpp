#include "tensorflow_launcher.h"

#include <nlohmann/json.hpp>

#include "python_entry.h"

namespace ringmaster::agent {
namespace {

struct Task {
  const char* type;
  int index;
};

// Rank 0 the chief (when asked for), the last `ps` ranks parameter servers, workers between.
Task taskOf(const proto::TensorflowRoles& roles, int world_size, int rank) {
  const int chief = roles.chief() ? 1 : 0;
  if (rank < chief) return {"chief", 0};
  if (rank >= world_size - roles.ps()) return {"ps", rank - (world_size - roles.ps())};
  return {"worker", rank - chief};
}

Status checkRoles(const proto::JobLaunch& launch) {
  const proto::TensorflowRoles& roles = launch.tensorflow();
  const int taken = (roles.chief() ? 1 : 0) + roles.ps();
  if (roles.ps() < 0 || taken > launch.world_size() ||
      (roles.ps() > 0 && taken == launch.world_size())) {
    return invalidArgument("tensorflow roles (" + std::string(roles.chief() ? "a chief and " : "") +
                           std::to_string(roles.ps()) + " ps) do not fit the job's " +
                           std::to_string(launch.world_size()) +
                           " rank(s): parameter servers need at least one worker");
  }
  return Status::ok();
}

// The host each global rank runs on: ranks are numbered in gang order, each agent's in a row.
Result<std::vector<std::string>> rankHosts(const proto::JobLaunch& launch) {
  std::vector<std::string> hosts;
  if (launch.gang().empty()) {
    // A launch without its gang (one agent, e.g. under Slurm's single step) runs every rank here.
    if (launch.ranks_size() != launch.world_size()) {
      return invalidArgument(
          "launcher tensorflow needs the address of every rank's agent (the job's gang) for "
          "TF_CONFIG's cluster");
    }
    const std::string host = !launch.host_address().empty()  ? launch.host_address()
                             : !launch.master_addr().empty() ? launch.master_addr()
                                                             : "127.0.0.1";
    hosts.assign(static_cast<size_t>(launch.world_size()), host);
    return hosts;
  }
  for (const proto::GangMember& member : launch.gang()) {
    if (member.host_address().empty()) {
      return invalidArgument("agent '" + member.agent() +
                             "' of the job has no host address for TF_CONFIG's cluster");
    }
    hosts.insert(hosts.end(), static_cast<size_t>(std::max(member.ranks(), 0)),
                 member.host_address());
  }
  if (static_cast<int>(hosts.size()) != launch.world_size()) {
    return invalidArgument("the job's agents run " + std::to_string(hosts.size()) +
                           " ranks, not its world_size " + std::to_string(launch.world_size()));
  }
  return hosts;
}

}  // namespace

Result<std::string> tensorflowConfig(const proto::JobLaunch& launch, int rank) {
  RM_RETURN_IF_ERROR(checkRoles(launch));
  RM_ASSIGN_OR_RETURN(std::vector<std::string> hosts, rankHosts(launch));
  if (launch.master_port() == 0 || launch.master_port() + launch.world_size() - 1 > 65535) {
    return invalidArgument("MASTER_PORT " + std::to_string(launch.master_port()) +
                           " leaves no port for each of the " +
                           std::to_string(launch.world_size()) + " TensorFlow tasks");
  }
  if (rank < 0 || rank >= launch.world_size()) {
    return invalidArgument("rank " + std::to_string(rank) + " is outside the job");
  }
  // nlohmann's ordered_json keeps "cluster" before "task", as people write it.
  nlohmann::ordered_json cluster = nlohmann::ordered_json::object();
  for (int r = 0; r < launch.world_size(); ++r) {
    const Task task = taskOf(launch.tensorflow(), launch.world_size(), r);
    const std::string& host = hosts[static_cast<size_t>(r)];
    // An IPv6 address needs brackets before its port (gRPC's "[::1]:2222").
    const std::string address = (host.find(':') != std::string::npos ? "[" + host + "]" : host) +
                                ":" + std::to_string(launch.master_port() + r);
    cluster[task.type].push_back(address);
  }
  const Task own = taskOf(launch.tensorflow(), launch.world_size(), rank);
  nlohmann::ordered_json config;
  config["cluster"] = std::move(cluster);
  config["task"] = {{"type", own.type}, {"index", own.index}};
  return config.dump();
}

// The hosts are not checked here: under Slurm a node prepares before it knows the others
// (slurm_node.cpp); environment() refuses a launch without them.
Status TensorflowLauncher::validate(const proto::JobLaunch& launch) const {
  return checkRoles(launch);
}

std::vector<std::string> TensorflowLauncher::argv(const proto::JobLaunch& launch,
                                                  const proto::RankAssignment&,
                                                  const JobFiles&) const {
  return withPythonInterpreter({launch.argv().begin(), launch.argv().end()});
}

Result<EnvEntries> TensorflowLauncher::environment(const proto::JobLaunch& launch,
                                                   const proto::RankAssignment& rank) const {
  RM_ASSIGN_OR_RETURN(std::string config, tensorflowConfig(launch, rank.rank()));
  return EnvEntries{{"TF_CONFIG", std::move(config)}};
}

std::optional<std::string> TensorflowLauncher::explainFailure(
    const std::vector<std::string>& tail, const std::string& interpreter) const {
  return missingFrameworkReason(tail, "tensorflow", interpreter);
}

}  // namespace ringmaster::agent
