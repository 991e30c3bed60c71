#pragma once
// The app's embedded local agent: started detached (it outlives the window, so that closing the
// app never stops a job) with its state in DATA_DIR/local-agent, this client's key authorized
// there, and an entry `local` in the cluster file. Found again, not restarted, when it runs.

#include <string>

#include "ringmaster/client/cluster_config.h"
#include "ringmaster/util/result.h"

namespace ringmaster::gui {

// Blocking (up to a few seconds): call it off the GUI thread.
Status ensureLocalAgent(const client::ClientPaths& paths, const std::string& client_public_key);

// DATA_DIR/local-agent, beside the history file.
std::string localAgentStateDir(const client::ClientPaths& paths);

}  // namespace ringmaster::gui
