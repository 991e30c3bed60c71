#pragma once
// Placement: which agent runs which global ranks of a job.
//
// Thread safety: resolvePlacement() is pure and may be called from any thread.

#include <string>
#include <vector>

#include "ringmaster/job/spec.h"

namespace ringmaster::job {

// What an agent can take right now (one slot runs one rank).
struct AgentCapacity {
  std::string name;
  int slots_total = 0;
  int slots_free = 0;
};

// The ranks one agent runs: global ranks in ascending order; a rank's local_rank is its index here.
struct AgentShare {
  std::string agent;
  std::vector<int> ranks;
};

// Maps the job's ranks to agents.
//  - With spec.placement, ranks are numbered in placement order (A 2 ranks, B 2 ranks ->
//    A:{0,1}, B:{2,3}). Listing an agent twice is an error.
//  - Otherwise, spec.world_size ranks fill the agents' free slots in the order of `agents`;
//    agents that get no rank get no share.
// Errors carry spec.file and the placement entry's line (spec.world_size_line for world_size):
// an unknown agent (hint: the closest known name, or the list of known agents), more ranks than
// an agent's free slots (says how many of how many are free), a world_size larger than all free
// slots. On success returns no diagnostics and sets *shares (when not null); on failure *shares is
// left empty.
std::vector<SpecDiagnostic> resolvePlacement(const JobSpec& spec,
                                             const std::vector<AgentCapacity>& agents,
                                             std::vector<AgentShare>* shares);

}  // namespace ringmaster::job
