#pragma once
// The layout of a large job's gang (gang_coordinator.h). The leader of a star hears every agent
// itself: at 128 agents it spent 63-82 ms of CPU a second on their beats and their connections'
// pings (each agent 3.5-4.1), linear in the agents. A gang of more than fanout + 2 agents is a
// tree instead: the attempt's members in order fill it level by level, the root (the leader) with
// fanout / 2 children (members 1 .. fanout/2), every other member with `fanout` (so that no agent
// talks to more than fanout + 1 others, whatever the gang's size). The leader keeps half: it also
// checks every rank for hangs, decides and journals for the gang, and hosts the rendezvous, and
// with 4 children it measured 1.7-2.3x a leaf's CPU (2 children: see README). A member found lost
// is cut out: its children report to its nearest ancestor not lost, and when the root's member is
// lost, the first member not lost leads and takes the orphans. Pure functions: each agent
// computes the tree from its own view of who is lost.

#include <cstddef>
#include <optional>
#include <vector>

namespace ringmaster::agent {

// Children a place. Each contact costs an agent about 0.6-0.8 ms of CPU a second (its beats and
// answers, and libzmq's pings both ways on two connections) over a base of about 2-3 with one
// sleeping rank: with 4, inner agents talk to 5 others (6 children gave the leader 2.0-2.3x a
// leaf's CPU in `bench_scale --hold 20 128:1024`). A star of fanout + 2 agents gives its leader as
// many peers as a tree's inner agent. RINGMASTER_GANG_FANOUT overrides it (tests build trees of a
// few agents); every agent of a job must see the same value.
inline constexpr size_t kGangFanout = 4;
size_t gangFanout();

inline bool gangIsTree(size_t agents, size_t fanout) { return agents > fanout + 2; }
inline size_t rootChildren(size_t fanout) { return fanout > 1 ? fanout / 2 : 1; }

struct TreePlace {
  std::optional<size_t> parent;  // none for the leader
  std::vector<size_t> children;  // those that report to it (a lost one too: it may come back)
  std::vector<size_t> below;     // its children, theirs and so on
};

// Member `self`'s place among `lost.size()` members in order, `lost` as it sees them (its own
// entry false).
TreePlace treePlace(size_t self, const std::vector<bool>& lost, size_t fanout);

}  // namespace ringmaster::agent
