#pragma once
// One line about an agent for the placement table: "free 3/4 slots, 2 GPUs" when it answers,
// its state and the client library's reason when it does not.

#include <QString>

#include "ringmaster/client/agent_status.h"

namespace ringmaster::gui {

QString agentSummary(const client::AgentStatus& agent);

}  // namespace ringmaster::gui
