// The gang's decisions without sockets: root cause, hang verdicts, the next attempt's layout.
#include "gang_policy.h"

#include <gtest/gtest.h>

namespace ringmaster::agent {
namespace {

proto::JobFailure failure(const std::string& kind, const std::string& cause) {
  proto::JobFailure f;
  f.set_kind(kind);
  f.set_cause(cause);
  return f;
}

proto::RankProgress rank(int r, int64_t step, double idle, const std::string& activity,
                         double slowest = 0.1) {
  proto::RankProgress p;
  p.set_rank(r);
  p.set_step(step);
  p.set_idle_seconds(idle);
  p.set_activity(activity);
  p.set_slowest_step_seconds(slowest);
  return p;
}

proto::GangMember member(const std::string& agent, int ranks) {
  proto::GangMember m;
  m.set_agent(agent);
  m.set_endpoint("tcp://" + agent + ":7070");
  m.set_server_key(agent + "-key");
  m.set_host_address(agent);
  m.set_ranks(ranks);
  return m;
}

proto::RestartPolicy policy(uint32_t max_restarts, int min_nodes = 0, bool exclude = false) {
  proto::RestartPolicy p;
  p.set_max_restarts(max_restarts);
  p.set_min_nodes(min_nodes);
  p.set_exclude_failed_hosts(exclude);
  return p;
}

TEST(RootCause, ASignalOrALostAgentOutranksTheExitsItCaused) {
  EXPECT_EQ(rootCause({failure("exited", "rank 2 exited with code 1"),
                       failure("signalled", "rank 1 was killed by signal 9")}),
            1u);
  EXPECT_EQ(rootCause({failure("exited", "rank 2"), failure("exited", "rank 3"),
                       failure("agent_lost", "agent a1 lost")}),
            2u);
  EXPECT_EQ(rootCause({failure("exited", "rank 2"), failure("exited", "rank 3")}), 0u);
}

// An agent that said it shuts down is lost next: its word is the cause (and the restart it
// leads to is not counted); another agent's loss is not explained by it.
TEST(RootCause, AnAgentsShutdownExplainsItsOwnLossOnly) {
  auto of = [](proto::JobFailure f, const std::string& agent) {
    f.set_agent(agent);
    return f;
  };
  EXPECT_EQ(rootCause({failure("exited", "rank 2"), of(failure("agent_lost", "a2 lost"), "a2"),
                       of(failure("agent_stopped", "a2 shut down"), "a2")}),
            2u);
  EXPECT_EQ(rootCause({of(failure("agent_lost", "a3 lost"), "a3"),
                       of(failure("agent_stopped", "a2 shut down"), "a2")}),
            0u);
}

TEST(HangVerdict, AStoppedRankIsTheCulpritAndTheWaitingOnesAreNamed) {
  std::vector<std::pair<std::string, proto::RankProgress>> ranks = {
      {"a1", rank(0, 812, 40, "waiting")},
      {"a1", rank(1, 812, 40, "waiting")},
      {"a2", rank(2, 812, 40, "waiting")},
      {"a2", rank(3, 811, 41, "stopped (SIGSTOP or a debugger)")}};
  auto verdict = hangVerdict(ranks, 30);
  ASSERT_TRUE(verdict);
  EXPECT_EQ(verdict->kind(), "hung");
  EXPECT_EQ(verdict->rank(), 3);
  EXPECT_EQ(verdict->agent(), "a2");
  EXPECT_EQ(verdict->cause(),
            "rank 3 on a2 hung: stopped (SIGSTOP or a debugger) at step 811, no new step for "
            "41 s; ranks 0-2 waiting (hang timeout 30 s)");
}

TEST(HangVerdict, ARankStillComputingIsNamedBeforeTheOneThatStoppedFirst) {
  auto verdict =
      hangVerdict({{"a1", rank(0, 10, 50, "waiting")}, {"a2", rank(1, 12, 35, "computing")}}, 30);
  ASSERT_TRUE(verdict);
  EXPECT_EQ(verdict->rank(), 1);
  EXPECT_NE(verdict->cause().find("computing at step 12"), std::string::npos);
}

proto::RankProgress inPhase(proto::RankProgress p, const std::string& phase, double seconds) {
  p.set_phase(phase);
  p.set_phase_seconds(seconds);
  p.set_phase_step(p.step() + 1);
  return p;
}

// Native workers say where they are: the one in compute is the culprit, whatever its CPU use, and
// the others are named by the collective they wait in.
TEST(HangVerdict, WithPhasesTheRankStuckInComputeIsNamedAndTheOthersByTheirCollective) {
  std::vector<std::pair<std::string, proto::RankProgress>> ranks = {
      {"gpu01", inPhase(rank(0, 811, 40, "waiting"), "allreduce", 39.6)},
      {"gpu01", inPhase(rank(1, 811, 40, "waiting"), "allreduce", 39.7)},
      {"gpu02", inPhase(rank(2, 811, 40, "waiting"), "allreduce", 39.5)},
      {"gpu02", inPhase(rank(3, 811, 41, "waiting"), "compute", 40.2)}};
  auto verdict = hangVerdict(ranks, 30);
  ASSERT_TRUE(verdict);
  EXPECT_EQ(verdict->rank(), 3);
  EXPECT_EQ(verdict->cause(),
            "rank 3 on gpu02 hung: stuck in compute at step 812 for 40 s; ranks 0-2 waiting in "
            "allreduce (hang timeout 30 s)");
}

TEST(HangVerdict, AStoppedRankSaysWhichPhaseItWasStoppedIn) {
  auto verdict = hangVerdict(
      {{"a1", inPhase(rank(0, 88, 5, "waiting"), "allreduce", 5)},
       {"a2", inPhase(rank(1, 88, 5, "stopped (SIGSTOP or a debugger)"), "allreduce", 5.2)},
       {"a2", inPhase(rank(2, 88, 5, "waiting"), "checkpoint", 4.9)}},
      3);
  ASSERT_TRUE(verdict);
  EXPECT_EQ(verdict->rank(), 1);
  EXPECT_EQ(verdict->cause(),
            "rank 1 on a2 hung: stopped (SIGSTOP or a debugger) in allreduce at step 89 for 5 s; "
            "rank 0 waiting in allreduce; rank 2 in checkpoint (hang timeout 3 s)");
}

TEST(HangVerdict, NoVerdictBeforeTheTimeoutOrBeforeTheFirstStep) {
  EXPECT_FALSE(hangVerdict({{"a1", rank(0, 10, 29, "waiting")}}, 30));
  EXPECT_FALSE(hangVerdict({{"a1", rank(0, -1, 500, "computing")}}, 30));
}

TEST(HangTimeout, ThePolicysOrTenSlowestStepsWithAFloor) {
  proto::RestartPolicy explicit_timeout;
  explicit_timeout.set_hang_timeout_seconds(7);
  EXPECT_DOUBLE_EQ(hangTimeout(explicit_timeout, {{"a1", rank(0, 1, 0, "", 100)}}), 7);
  EXPECT_DOUBLE_EQ(hangTimeout({}, {{"a1", rank(0, 1, 0, "", 0.5)}}), 60);
  EXPECT_DOUBLE_EQ(hangTimeout({}, {{"a1", rank(0, 1, 0, "", 12)}, {"a2", rank(1, 1, 0, "", 3)}}),
                   120);
}

// Issue 35: a rank stopped for 90 s in an 18-minute job raised no suspicion: the longest wait
// ever seen, ten times, was the timeout for good. A wait that reached the suspicion of its time
// is not a step; a slow step is, and weighs less with every step after it.
TEST(HangTimeout, AStallThatEndedIsNotAStepTimeAndASlowStepFades) {
  double slowest = 0;
  for (double step : {0.2, 0.3, 0.25}) slowest = slowestAfter(slowest, step);
  EXPECT_NEAR(slowest, 0.3, 0.01);
  EXPECT_DOUBLE_EQ(slowestAfter(slowest, 90), slowest);  // a stop of 90 s, let go
  EXPECT_DOUBLE_EQ(slowestAfter(slowest, 30), slowest);  // the suspicion of a 60 s timeout
  EXPECT_DOUBLE_EQ(slowestAfter(slowest, 29.9), 29.9);   // under it: a slow step
  EXPECT_DOUBLE_EQ(slowestAfter(8, 39), 39);             // slow steps raise the bar (40 s)
  EXPECT_DOUBLE_EQ(slowestAfter(8, 40), 8);
  // An 18 s step, then 1,000 steps of 0.1 s: the timeout is back at its floor, and a rank
  // stopped 31 s is suspected.
  slowest = slowestAfter(slowest, 18);
  EXPECT_DOUBLE_EQ(hangTimeout({}, {{"a1", rank(0, 500, 0, "", slowest)}}), 180);
  for (int step = 0; step < 1000; ++step) slowest = slowestAfter(slowest, 0.1);
  EXPECT_LT(slowest, 0.2);
  const double timeout = hangTimeout({}, {{"a1", rank(0, 1500, 0, "", slowest)}});
  EXPECT_DOUBLE_EQ(timeout, 60);
  EXPECT_TRUE(hangSuspicion({{"a1", rank(0, 1500, 31, "stopped (SIGSTOP)", slowest)}}, timeout));
}

// Issue 21: hangs come in two stages; the first names the culprit at half the timeout.
TEST(HangSuspicion, NamesTheCulpritAtHalfTheTimeout) {
  EXPECT_FALSE(hangSuspicion({{"a1", rank(0, 10, 14, "waiting")}}, 30));
  auto suspect = hangSuspicion(
      {{"a1", rank(0, 10, 15, "waiting")}, {"a2", rank(1, 9, 16, "stopped (SIGSTOP)")}}, 30);
  ASSERT_TRUE(suspect);
  EXPECT_EQ(suspect->rank(), 1);
  EXPECT_EQ(suspect->agent(), "a2");
  EXPECT_EQ(suspect->cause().rfind("rank 1 on a2 may be hung: ", 0), 0u) << suspect->cause();
  EXPECT_NE(suspect->cause().find("(hang timeout 30 s)"), std::string::npos) << suspect->cause();
  EXPECT_FALSE(hangVerdict({{"a1", rank(0, 10, 16, "waiting")}}, 30));
}

// Silence is often legitimate where we cannot see inside the ranks: command and torchrun jobs
// only warn unless the spec asks for more; native jobs restart, as before.
TEST(HangAction, WarnForOpaqueLaunchersUnlessTheSpecSaysOtherwise) {
  proto::RestartPolicy none;
  EXPECT_EQ(hangAction(none, proto::NATIVE), "restart");
  EXPECT_EQ(hangAction(none, proto::COMMAND), "warn");
  EXPECT_EQ(hangAction(none, proto::TORCHRUN), "warn");
  EXPECT_EQ(hangAction(none, proto::TENSORFLOW), "warn");
  EXPECT_EQ(hangAction(none, proto::DEEPSPEED), "warn");
  proto::RestartPolicy timed;
  timed.set_hang_timeout_seconds(120);
  EXPECT_EQ(hangAction(timed, proto::COMMAND), "restart");
  proto::RestartPolicy explicit_action;
  explicit_action.set_on_hang("fail");
  EXPECT_EQ(hangAction(explicit_action, proto::TORCHRUN), "fail");
  explicit_action.set_on_hang("warn");
  EXPECT_EQ(hangAction(explicit_action, proto::NATIVE), "warn");
}

TEST(NextAttempt, RestartsOnEveryAgentUntilTheyAreUsedUp) {
  const std::vector<proto::GangMember> gang = {member("a1", 2), member("a2", 2)};
  NextAttempt next = planNextAttempt(gang, {}, "a1", policy(2), 2, 1);
  EXPECT_TRUE(next.refused.empty());
  ASSERT_EQ(next.members.size(), 2u);
  next = planNextAttempt(gang, {}, "a1", policy(2), 2, 2);
  EXPECT_EQ(next.refused, "all 2 restarts are used");
  EXPECT_FALSE(next.too_few_agents);  // nothing to wait for: no agent coming back changes it
  EXPECT_TRUE(next.members.empty());
  EXPECT_EQ(planNextAttempt(gang, {}, "a1", policy(0), 2, 0).refused,
            "the job has no restarts (restart.max_restarts is 0)");
}

TEST(NextAttempt, ALostAgentIsLeftOutOnlyWhenMinNodesAllows) {
  const std::vector<proto::GangMember> gang = {member("a1", 2), member("a2", 2)};
  NextAttempt next = planNextAttempt(gang, {"a1"}, "a1", policy(1, 1), 2, 0);
  EXPECT_TRUE(next.refused.empty()) << next.refused;
  ASSERT_EQ(next.members.size(), 1u);
  EXPECT_EQ(next.members[0].agent(), "a2");
  EXPECT_EQ(next.left_out, std::vector<std::string>{"a1"});
  next = planNextAttempt(gang, {"a1"}, "a1", policy(1), 2, 0);
  EXPECT_EQ(next.refused,
            "1 of the job's agents can go on and the job needs all 2 (set restart.min_nodes to "
            "go on with fewer)");
  EXPECT_TRUE(next.too_few_agents);  // a1 coming back would change it
}

TEST(NextAttempt, AFailedHostIsExcludedWhenTheRestCanGoOn) {
  const std::vector<proto::GangMember> gang = {member("a1", 2), member("a2", 2), member("a3", 1)};
  NextAttempt next = planNextAttempt(gang, {}, "a2", policy(1, 2, true), 3, 0);
  ASSERT_EQ(next.members.size(), 2u);
  EXPECT_EQ(next.members[0].agent(), "a1");
  EXPECT_EQ(next.members[1].agent(), "a3");
  EXPECT_EQ(next.left_out, std::vector<std::string>{"a2"});
  // Not when that would leave fewer than min_nodes: the failed host gets another chance.
  next = planNextAttempt(gang, {"a3"}, "a2", policy(1, 2, true), 3, 0);
  ASSERT_EQ(next.members.size(), 2u);
  EXPECT_EQ(next.left_out, std::vector<std::string>{"a3"});
}

TEST(LaunchForAttempt, RanksAreRenumberedInMemberOrderAndTheFirstMemberHosts) {
  proto::JobLaunch previous;
  previous.set_job_id("j");
  previous.set_attempt(1);
  previous.set_world_size(5);
  proto::GangRestart restart;
  *restart.add_members() = member("a2", 2);
  *restart.add_members() = member("a3", 1);
  restart.set_master_addr("a2");
  restart.set_master_port(29500);
  auto launch = launchForAttempt(previous, restart, 2, "a3");
  ASSERT_TRUE(launch.isOk()) << launch.status().message();
  EXPECT_EQ(launch->attempt(), 2u);
  EXPECT_EQ(launch->world_size(), 3);
  EXPECT_EQ(launch->group_rank(), 1);
  EXPECT_EQ(launch->group_world_size(), 2);
  ASSERT_EQ(launch->ranks_size(), 1);
  EXPECT_EQ(launch->ranks(0).rank(), 2);
  EXPECT_EQ(launch->ranks(0).local_rank(), 0);
  EXPECT_EQ(launch->rendezvous_endpoint(), "tcp://a2:7070");
  EXPECT_EQ(launch->rendezvous_server_key(), "a2-key");
  EXPECT_EQ(launch->master_port(), 29500u);
  EXPECT_EQ(launch->gang_size(), 2);
  EXPECT_EQ(launchForAttempt(previous, restart, 2, "a1").status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace ringmaster::agent
