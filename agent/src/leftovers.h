#pragma once
// Processes that ranks left behind: their children and grandchildren, in the rank's process
// group or not (a double fork, setsid), found by the environment every rank starts with and its
// descendants inherit: RINGMASTER_AGENT_DIR (the state dir of the agent that started it: unique
// within one root, unlike agent names), RINGMASTER_JOB_ID and RINGMASTER_ATTEMPT. A rank's own
// process dies with the agent (PR_SET_PDEATHSIG); what it started does not, so an agent ends these
// when an attempt finishes and when it starts again.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ringmaster::agent {

struct LeftoverFilter {
  std::string agent_dir;            // RINGMASTER_AGENT_DIR
  std::optional<std::string> job;   // any job when unset
  std::optional<uint32_t> attempt;  // any attempt when unset
  // Only this process's descendants: an agent is the subreaper of what its ranks start, so once
  // an attempt's ranks are gone what they left is among its children (and theirs), a few to read
  // rather than every process of the host (hundreds on a busy one, at every job's end).
  bool descendants_only = false;
};

// Processes (other than this one) whose environment matches and that see this process's root
// directory (not another chroot's or container's agent with the same state dir path). Processes
// of other users cannot be read and are not found: the agent only ends what it may.
std::vector<pid_t> findLeftovers(const LeftoverFilter& filter);

// SIGKILLs the matching processes and waits up to `wait` for them to be gone. Returns how many
// were killed; `still_there` (when given) gets those that outlived the wait.
int killLeftovers(const LeftoverFilter& filter, std::chrono::milliseconds wait,
                  std::vector<pid_t>* still_there = nullptr);

}  // namespace ringmaster::agent
