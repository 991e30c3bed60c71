#pragma once
// Add, replace and remove one agent of a cluster file: the app's cluster view, `ringmasterctl
// cluster` and the agent installer (several hosts at once) all edit it. Each call takes an
// exclusive lock on the file's directory, re-reads the file (an edit made meanwhile by someone
// else is kept), checks the entry with core's rules and rewrites the file atomically
// (writeClusterFile): two editors at once never lose each other's change.

#include <string>
#include <vector>

#include "ringmaster/client/agent_connection.h"
#include "ringmaster/util/result.h"

namespace ringmaster::client {

// The agents of `path`; a file that does not exist yet is an empty list.
Result<std::vector<AgentEndpoint>> readAgentsForEdit(const std::string& path);

Status addAgentToFile(const std::string& path, const AgentEndpoint& agent);
// Replaces the agent called `old_name` (its name may change too).
Status replaceAgentInFile(const std::string& path, const std::string& old_name,
                          const AgentEndpoint& agent);
// Replaces the agent of the same name, or adds it when there is none.
Status putAgentInFile(const std::string& path, const AgentEndpoint& agent);
Status removeAgentFromFile(const std::string& path, const std::string& name);

}  // namespace ringmaster::client
