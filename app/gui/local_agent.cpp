#include "local_agent.h"

#include <algorithm>
#include <filesystem>

#include "ringmaster/client/local_agent.h"
#include "ringmaster/security/keys.h"

namespace ringmaster::gui {

std::string localAgentStateDir(const client::ClientPaths& paths) {
  return std::filesystem::path(paths.db_file).parent_path().string() + "/local-agent";
}

Status ensureLocalAgent(const client::ClientPaths& paths, const std::string& client_public_key) {
  const std::string state_dir = localAgentStateDir(paths);
  // Authorized before it starts or while it runs: the agent re-reads authorized_keys.
  RM_RETURN_IF_ERROR(security::authorizeKey(state_dir + "/authorized_keys", client_public_key,
                                            security::Role::kAdmin, "ringmaster desktop app"));
  std::optional<client::LocalAgent> agent = client::findLocalAgent(state_dir);
  if (!agent) {
    client::LocalAgentOptions options;
    options.program = client::executableDir() + "/ringmaster-agent";
    options.state_dir = state_dir;
    options.detach = true;
    RM_ASSIGN_OR_RETURN(client::LocalAgent started, client::startLocalAgent(options));
    agent = started;
  }
  // The cluster file gets (or updates) its `local` entry; other agents stay as they are.
  std::vector<client::AgentEndpoint> agents;
  if (std::filesystem::exists(paths.cluster_file)) {
    RM_ASSIGN_OR_RETURN(agents, client::loadClusterFile(paths.cluster_file));
  }
  auto local = std::find_if(agents.begin(), agents.end(),
                            [](const client::AgentEndpoint& a) { return a.name == "local"; });
  client::AgentEndpoint entry{"local", agent->endpoint, agent->public_key};
  if (local == agents.end()) {
    agents.push_back(entry);
  } else if (local->endpoint == entry.endpoint && local->server_key == entry.server_key) {
    return Status::ok();
  } else {
    *local = entry;
  }
  return client::writeClusterFile(paths.cluster_file, agents);
}

}  // namespace ringmaster::gui
