#include "cluster/cluster_file_edits.h"

#include <algorithm>

#include "ringmaster/client/cluster_config.h"

namespace ringmaster::gui {
namespace {

using client::AgentEndpoint;

std::vector<std::string> namesExcept(const std::vector<AgentEndpoint>& agents,
                                     const std::string& except) {
  std::vector<std::string> names;
  for (const auto& agent : agents) {
    if (agent.name != except) names.push_back(agent.name);
  }
  return names;
}

Status checkEntry(const AgentEndpoint& agent, const std::vector<std::string>& other_names) {
  const client::AgentEntryProblems problems = client::checkAgentEntry(agent, other_names);
  if (problems.ok()) return Status::ok();
  std::string message = "agent '" + agent.name + "':";
  if (!problems.name.empty()) message += " name " + problems.name + ";";
  if (!problems.endpoint.empty()) message += " endpoint " + problems.endpoint + ";";
  if (!problems.server_key.empty()) message += " server key " + problems.server_key + ";";
  message.pop_back();
  return invalidArgument(message);
}

auto findByName(std::vector<AgentEndpoint>& agents, const std::string& name) {
  return std::find_if(agents.begin(), agents.end(),
                      [&](const AgentEndpoint& a) { return a.name == name; });
}

}  // namespace

Result<std::vector<AgentEndpoint>> readAgentsForEdit(const std::string& path) {
  auto agents = client::loadClusterFile(path);
  if (!agents.isOk() && agents.status().code() == ErrorCode::kNotFound) {
    return std::vector<AgentEndpoint>{};
  }
  return agents;
}

Status addAgentToFile(const std::string& path, const AgentEndpoint& agent) {
  RM_ASSIGN_OR_RETURN(auto agents, readAgentsForEdit(path));
  RM_RETURN_IF_ERROR(checkEntry(agent, namesExcept(agents, "")));
  agents.push_back(agent);
  return client::writeClusterFile(path, agents);
}

Status replaceAgentInFile(const std::string& path, const std::string& old_name,
                          const AgentEndpoint& agent) {
  RM_ASSIGN_OR_RETURN(auto agents, readAgentsForEdit(path));
  auto it = findByName(agents, old_name);
  if (it == agents.end()) {
    return notFound("agent '" + old_name + "' is no longer in " + path +
                    " (the file changed meanwhile)");
  }
  RM_RETURN_IF_ERROR(checkEntry(agent, namesExcept(agents, old_name)));
  *it = agent;
  return client::writeClusterFile(path, agents);
}

Status removeAgentFromFile(const std::string& path, const std::string& name) {
  RM_ASSIGN_OR_RETURN(auto agents, readAgentsForEdit(path));
  auto it = findByName(agents, name);
  if (it == agents.end()) {
    return notFound("agent '" + name + "' is not in " + path + " (the file changed meanwhile)");
  }
  agents.erase(it);
  return client::writeClusterFile(path, agents);
}

}  // namespace ringmaster::gui
