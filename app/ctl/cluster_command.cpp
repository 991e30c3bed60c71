// ringmasterctl cluster add|remove: edits the cluster file the way the app's cluster view does
// (locked, checked, atomic), for scripts such as installer/install-agent.sh.
#include <cstdio>

#include "ctl.h"
#include "ringmaster/client/cluster_config.h"
#include "ringmaster/client/cluster_file_edits.h"

namespace ringmaster::ctl {

int runClusterAdd(const Globals& globals, const ClusterAddFlags& flags) {
  const auto paths = client::ClientPaths::resolve(globals.cluster_file, globals.db_file);
  const client::AgentEndpoint agent{flags.name, flags.endpoint, flags.server_key};
  Status status = flags.replace ? client::putAgentInFile(paths.cluster_file, agent)
                                : client::addAgentToFile(paths.cluster_file, agent);
  if (!status.isOk()) {
    printError(status.message());
    return status.code() == ErrorCode::kInvalidArgument ? kExitBadInput : kExitFailure;
  }
  std::printf("agent '%s' at %s (key %s) is in %s\n", agent.name.c_str(), agent.endpoint.c_str(),
              security::keyFingerprint(agent.server_key).c_str(), paths.cluster_file.c_str());
  return kExitOk;
}

int runClusterRemove(const Globals& globals, const std::string& name) {
  const auto paths = client::ClientPaths::resolve(globals.cluster_file, globals.db_file);
  Status status = client::removeAgentFromFile(paths.cluster_file, name);
  if (!status.isOk()) {
    printError(status.message());
    return status.code() == ErrorCode::kNotFound ? kExitBadInput : kExitFailure;
  }
  std::printf("agent '%s' removed from %s\n", name.c_str(), paths.cluster_file.c_str());
  return kExitOk;
}

}  // namespace ringmaster::ctl
