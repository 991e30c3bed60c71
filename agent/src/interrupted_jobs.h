#pragma once
// Crash recovery at agent start: ranks that were running when a previous agent process died
// are gone with it. Each is journaled as failed, and its attempt as finished, so that no client
// waits for them forever.

#include <functional>
#include <string>

namespace ringmaster::agent {

class Journal;

void recordInterruptedJobs(Journal& journal, const std::string& agent_name,
                           const std::function<void(const std::string&)>& log);

}  // namespace ringmaster::agent
