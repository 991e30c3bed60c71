#pragma once
// What a client saw of an agent that the history of its jobs should keep: the agent stopped
// answering while it ran ranks of a job, and it answered again. Without them a run read later
// shows a hole in its charts and nothing to say why. Events of source "watch".

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ringmaster/client/agent_status.h"
#include "ringmaster/store/rows.h"

namespace ringmaster::client {

// The events of an agent whose state went from `before` to `now.state`: "agent_silent" for every
// job its last inventory ran ranks of, when an online agent stops answering (unreachable, or its
// keys refused); "agent_back" for those jobs when it answers again. `lost_jobs` (job id to
// attempt) carries the jobs from the one to the other, per agent.
std::vector<store::EventRow> watchEvents(AgentState before, const AgentStatus& now,
                                         std::map<std::string, uint32_t>* lost_jobs);

}  // namespace ringmaster::client
