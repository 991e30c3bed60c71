#pragma once
// A deterministic simulation of one job's gang: 3-16 real GangCoordinators (the agent's own
// code, gang_coordinator.h) on a virtual clock and network (gang_world.h), with ranks that
// train only while their whole attempt runs and can reach each other, as a collective does.
// A seed draws the job's restart policy and a schedule of faults: network splits (even and
// uneven), one-way loss, a cut between two agents only, flapping links, agent crashes (kill -9)
// and clean shutdowns with or without a restart, rank failures, delayed, reordered and
// duplicated messages, and a client's stop. After every event it checks, from the ranks and
// journals themselves:
// - at most one attempt trains at a time (no two copies of the job);
// - each next attempt is journaled once, by one agent, and every agent that starts an attempt
//   starts the same one (the same agents);
// - no agent starts ranks of the job after a client's stop reached it;
// and at the end, once the network is whole again: no rank of the job runs anywhere, every
// agent has let the job go, and every agent that decided an outcome with a majority decided the
// same one. The same seed always gives the same run; a violation comes with the schedule and
// the events before it.

#include <cstdint>
#include <string>

namespace ringmaster::agent::sim {

struct Options {
  uint64_t seed = 1;
  int agents = 0;      // 0: drawn from the seed, 3-16
  bool trace = false;  // keep every event, not only the last ones before a violation
};

struct Report {
  std::string violation;  // empty when every invariant held
  std::string schedule;   // the policy and faults drawn, one per line
  std::string trace;      // the events before the violation (or all, with Options::trace)
  int agents = 0;
  uint64_t events = 0;
  uint64_t messages = 0;  // gang messages handled
  double virtual_seconds = 0;
  uint32_t last_attempt = 0;  // the newest attempt started
  std::string outcome;        // how the job ended, as journaled ("succeeded", "failed", ...)
};

Report run(const Options& options);

}  // namespace ringmaster::agent::sim
