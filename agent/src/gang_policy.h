#pragma once
// The decisions of a job's gang (see gang_coordinator.h) as pure functions, so that they are
// tested without sockets or processes: which failure is the root cause, whether the job is hung
// and who hangs it, where the next attempt runs, and each agent's share of it.

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ringmaster/protocol/ringmaster.pb.h"
#include "ringmaster/util/result.h"

namespace ringmaster::agent {

// Of the failures seen for one attempt (in the order seen), the index of the first cause. A
// client's restart comes first (it decides the next layout); then a lost agent, a hang, a signal
// or a launch failure before a rank that exited with an error: such exits are mostly the other
// ranks' reaction to a peer that vanished from a collective. An agent's loss after it said it
// shuts down (kind agent_stopped) is explained by that.
size_t rootCause(const std::vector<proto::JobFailure>& failures);

// The least hang timeout a job without one of its own gets, seconds.
inline constexpr double kHangFloorSeconds = 60;

// The hang timeout of a job: the policy's, or (0 there) ten times the slowest step seen on any
// rank, at least `floor_seconds`.
double hangTimeout(const proto::RestartPolicy& policy,
                   const std::vector<std::pair<std::string, proto::RankProgress>>& ranks,
                   double floor_seconds = kHangFloorSeconds);
// The same from the slowest step of every rank.
double hangTimeout(const proto::RestartPolicy& policy, double slowest_step_seconds,
                   double floor_seconds = kHangFloorSeconds);

// A rank without a new step for this long is passed up a gang's tree for the leader's hang check
// (GangReport): a quarter of the least timeout the policy can give, so that every rank the
// suspicion (at half the timeout) would name has reached the leader.
double stallReportSeconds(const proto::RestartPolicy& policy,
                          double floor_seconds = kHangFloorSeconds);

// A rank's slowest wait for a new step, after one more wait of `gap` seconds: the longest of the
// recent ones, an older one weighing less with every step (half after 138 steps), so that one
// slow moment does not set the hang timeout for the rest of the attempt. A wait that reached the
// hang suspicion of its time (half the timeout `slowest` gives) is a stall that ended (a stopped
// rank let go, a debugger), not a step. Taken as the longest for good, one stop of 18 s had set
// the timeout to 180 s, and a rank stopped 90 s later in an 18-minute job raised no suspicion
// (issue 35).
inline constexpr double kSlowestStepKeptPerStep = 0.995;
double slowestAfter(double slowest, double gap, double floor_seconds = kHangFloorSeconds);

// `ranks` are every running rank of the attempt with its agent. The job is hung when some rank
// has made no new step for `timeout` seconds; ranks that have not made their first step yet are
// not judged (loading data or a checkpoint can take long). The culprit is a stopped rank, else
// one still working (in a compute-like phase, or busy on the CPU when its phase is unknown), else
// the rank whose progress stopped first. With native workers' phases the cause says where each
// rank is: "rank 3 on a2 hung: stuck in compute at step 812 for 40 s; ranks 0-2 waiting in
// allreduce (hang timeout 30 s)".
std::optional<proto::JobFailure> hangVerdict(
    const std::vector<std::pair<std::string, proto::RankProgress>>& ranks, double timeout);

// The first stage: the same judgement at half the timeout, "rank 3 on a2 may be hung: ...".
std::optional<proto::JobFailure> hangSuspicion(
    const std::vector<std::pair<std::string, proto::RankProgress>>& ranks, double timeout);

// What a confirmed hang does: the policy's on_hang, else "restart" for launchers whose ranks
// report their phase (native: phase files tell a hang from a pause) and for jobs that set a hang
// timeout, else "warn" (a command, torchrun, deepspeed or tensorflow job silent for a while is
// often evaluating, loading data or uploading).
std::string hangAction(const proto::RestartPolicy& policy, proto::Launcher launcher);

// Where the next attempt runs: the current members that are not lost, without the failed host
// when the policy excludes failed hosts and the rest can go on. `refused` says why there is no
// next attempt (restarts used up, fewer agents than min_nodes).
struct NextAttempt {
  std::vector<proto::GangMember> members;
  std::vector<std::string> left_out;
  std::string refused;
  bool too_few_agents = false;  // refused for min_nodes (restarts were left)
};
NextAttempt planNextAttempt(const std::vector<proto::GangMember>& current,
                            const std::set<std::string>& lost, const std::string& failed_agent,
                            const proto::RestartPolicy& policy, int original_agents,
                            uint32_t restarts_used);

// This agent's launch of the attempt `restart` starts: ranks numbered in member order, world
// size, group rank, MASTER_ADDR/PORT and the rendezvous at the first member. NotFound when
// `agent` is not among the members.
Result<proto::JobLaunch> launchForAttempt(const proto::JobLaunch& previous,
                                          const proto::GangRestart& restart, uint32_t attempt,
                                          const std::string& agent);

}  // namespace ringmaster::agent
