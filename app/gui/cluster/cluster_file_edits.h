#pragma once
// Add, replace and remove one agent of a cluster file. Each call re-reads the file, so an edit
// made meanwhile by someone else (ringmasterctl demo, a text editor) is kept, checks the entry
// with core's rules and rewrites the file atomically (client::writeClusterFile).

#include <string>
#include <vector>

// The generated protobuf code has Inventory::slots(), which Qt's `slots` keyword macro would
// eat: hide the macro while core's headers are parsed, whatever was included before.
#pragma push_macro("slots")
#undef slots
#include "ringmaster/client/agent_connection.h"
#include "ringmaster/util/result.h"
#pragma pop_macro("slots")

namespace ringmaster::gui {

// The agents of `path`; a file that does not exist yet is an empty list.
Result<std::vector<client::AgentEndpoint>> readAgentsForEdit(const std::string& path);

Status addAgentToFile(const std::string& path, const client::AgentEndpoint& agent);
// Replaces the agent called `old_name` (its name may change too).
Status replaceAgentInFile(const std::string& path, const std::string& old_name,
                          const client::AgentEndpoint& agent);
Status removeAgentFromFile(const std::string& path, const std::string& name);

}  // namespace ringmaster::gui
