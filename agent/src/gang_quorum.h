#pragma once
// Who may decide a job's next attempt when its agents cannot all hear each other (DESIGN.md §3
// "One copy"). The agents of a job have no master: after a network split each side sees the
// other as lost, and if both went on, two copies of the job would train and journal at once.
// Only a side holding a strict majority of the attempt's voters may start the next attempt;
// on an even split, the side with the attempt's first voter in line. Voters are the attempt's
// members less those known to be down (their host refuses the agent's port, or the agent
// forgot the job): such an agent runs nothing, so it cannot be half of a split.
//
// Two disjoint sides can never both hold it: a strict majority of the voters as either side
// counts them is more than half of the members neither knows to be down, and an agent really
// down is in neither side; a tie needs both sides to see the same voters and to hold the same
// first one. Pure functions; gang_quorum_test and gang_quorum_simulation_test check them.

#include <set>
#include <string>
#include <vector>

namespace ringmaster::agent {

struct Quorum {
  bool majority = false;  // this side may decide
  int voters = 0;         // the attempt's members not known to be down
  int answering = 0;      // of them, those on this side (this agent included)
  int needed = 0;         // answering voters a side needs to go on (a tie-break counts as one less)
  std::string tie_break;  // the first voter in line, which wins an even split for its side
};

// `members`: the attempt's agents in line (group-rank order). `answering`: those this side
// hears, this agent included. `down`: those known to be down. An agent in both counts as
// answering (it spoke after it was thought down).
Quorum quorumOf(const std::vector<std::string>& members, const std::set<std::string>& answering,
                const std::set<std::string>& down);

// What a side without a majority says while it waits: "1 of 4 agents answer; a majority (3) is
// needed to go on".
std::string describeWait(const Quorum& quorum);

}  // namespace ringmaster::agent
