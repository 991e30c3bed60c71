#pragma once
// The layout of a large job's gang (gang_coordinator.h). The leader of a star hears every agent
// itself: at 128 agents it spent 63-82 ms of CPU a second on their beats and their connections'
// pings (each agent 3.5-4.1), linear in the agents. A gang of more than fanout + 2 agents is a
// tree instead: the attempt's members in order fill a heap of `fanout` children a place (member
// i's children are members fanout*i+1 .. fanout*i+fanout), so that no agent talks to more than
// fanout + 1 others, whatever the gang's size. A member found lost is cut out: its children
// report to its nearest ancestor not lost, and when the root's member is lost, the first member
// not lost leads and takes the orphans. Pure functions: each agent computes the tree from its own
// view of who is lost.

#include <cstddef>
#include <optional>
#include <vector>

namespace ringmaster::agent {

// Children a place. Each contact costs an agent about 0.6 ms of CPU a second (its beats and
// answers, and libzmq's pings both ways on two connections) over a base of about 3 with one
// sleeping rank: 4 children keep the leader (4 contacts) and inner agents (5) within 2x of a leaf
// (`bench_scale --hold 20 128:1024`: 6 children gave 2.0-2.3x). A star of fanout + 2 agents gives
// its leader as many peers as a tree's inner agent. RINGMASTER_GANG_FANOUT overrides it (tests
// build trees of a few agents); every agent of a job must see the same value.
inline constexpr size_t kGangFanout = 4;
size_t gangFanout();

inline bool gangIsTree(size_t agents, size_t fanout) { return agents > fanout + 2; }

struct TreePlace {
  std::optional<size_t> parent;  // none for the leader
  std::vector<size_t> children;  // those that report to it (a lost one too: it may come back)
  std::vector<size_t> below;     // its children, theirs and so on
};

// Member `self`'s place among `lost.size()` members in order, `lost` as it sees them (its own
// entry false).
TreePlace treePlace(size_t self, const std::vector<bool>& lost, size_t fanout);

}  // namespace ringmaster::agent
