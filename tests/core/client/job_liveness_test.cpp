// judgeLiveness: ranks last heard going on agents that do not answer are unknown, never running;
// showJob: the one rule by which every front end shows a job's state.
#include "ringmaster/client/job_liveness.h"

#include <gtest/gtest.h>

#include "ringmaster/client/agent_status.h"

namespace ringmaster::client {
namespace {

std::vector<RankLastKnown> fourRanksOn(const std::string& a, const std::string& b) {
  return {{0, a, true}, {1, a, true}, {2, b, true}, {3, b, true}};
}

TEST(JobLiveness, EveryAgentAnsweringKnowsEverything) {
  JobLiveness l = judgeLiveness(fourRanksOn("a1", "a2"), {{"other", 100}});
  EXPECT_FALSE(l.anyUnknown());
  EXPECT_FALSE(l.job_unknown);
  EXPECT_EQ(l.describe(), "");
}

TEST(JobLiveness, TheOnlyAgentSilentMakesTheWholeJobUnknownSinceItsLastAnswer) {
  JobLiveness l = judgeLiveness(fourRanksOn("a1", "a1"), {{"a1", 1000.5}});
  EXPECT_TRUE(l.job_unknown);
  EXPECT_EQ(l.unknown_ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_DOUBLE_EQ(l.evidence_until, 1000.5);
  EXPECT_EQ(l.describe(), "agent a1 not answering since " + clockTime(1000.5) +
                              " \u2014 state of 4 ranks unknown");
}

TEST(JobLiveness, OneSilentAgentOfTwoLeavesTheJobKnownButItsRanksNot) {
  JobLiveness l = judgeLiveness(fourRanksOn("a1", "a2"), {{"a2", 50}});
  EXPECT_FALSE(l.job_unknown);
  EXPECT_EQ(l.unknown_ranks, (std::vector<int>{2, 3}));
}

TEST(JobLiveness, RanksThatAlreadyEndedAreKnownWhateverTheirAgent) {
  std::vector<RankLastKnown> ranks = {{0, "a1", false}, {1, "a1", false}};
  JobLiveness l = judgeLiveness(ranks, {{"a1", 50}});
  EXPECT_FALSE(l.anyUnknown());
  EXPECT_FALSE(l.job_unknown);
  // The oldest last answer is where the job's evidence ends.
  l = judgeLiveness(fourRanksOn("a1", "a2"), {{"a1", 70}, {"a2", 60}});
  EXPECT_TRUE(l.job_unknown);
  EXPECT_DOUBLE_EQ(l.evidence_until, 60);
}

// The one rule status, the History and the dashboard's header show a job by.
TEST(ShowJob, AJobNotOverOnSilentAgentsIsUnknownItsClockStoppedAtTheirLastAnswer) {
  for (const char* state : {"submitted", "running", "restarting"}) {
    ShownJob shown = showJob(state, 0, fourRanksOn("a1", "a1"), {{"a1", 1000.5}});
    EXPECT_EQ(shown.state, "unknown") << state;
    EXPECT_TRUE(shown.unknown());
    EXPECT_DOUBLE_EQ(shown.clock_stop, 1000.5);
  }
  // Half its ranks' agents silent: still running, those ranks unknown.
  ShownJob half = showJob("running", 0, fourRanksOn("a1", "a2"), {{"a2", 50}});
  EXPECT_EQ(half.state, "running");
  EXPECT_EQ(half.clock_stop, 0);
  EXPECT_EQ(half.liveness.unknown_ranks, (std::vector<int>{2, 3}));
}

TEST(ShowJob, AJobThatIsOverIsWhatItWasWhateverItsAgents) {
  for (const char* state : {"succeeded", "failed", "stopped"}) {
    ShownJob shown = showJob(state, 0, fourRanksOn("a1", "a1"), {{"a1", 1000.5}});
    EXPECT_EQ(shown.state, state);
    EXPECT_FALSE(shown.liveness.anyUnknown());
  }
  // Decided and ending (finished_at set by Slurm, the stop heard): over too.
  ShownJob ended = showJob("running", 2000, fourRanksOn("a1", "a1"), {{"a1", 1000.5}});
  EXPECT_EQ(ended.state, "running");
  EXPECT_DOUBLE_EQ(ended.clock_stop, 2000);
}

// Issue 35: after Launch a native job said RUNNING with empty charts while its ranks loaded data
// and met; it is "starting" until a rank reports a step.
TEST(ShowJob, ARunningJobWhoseLauncherReportsStepsIsStartingUntilARankMakesOne) {
  std::vector<RankLastKnown> ranks = fourRanksOn("a1", "a2");
  EXPECT_TRUE(launcherReportsSteps("native"));
  EXPECT_EQ(showJob("running", 0, ranks, {}, true).state, "starting");
  EXPECT_EQ(showJob("running", 0, ranks, {{"other", 5}}, true).state, "starting");
  ranks[2].last_step = 0;  // one rank's first step is enough: the others are a step behind
  EXPECT_EQ(showJob("running", 0, ranks, {}, true).state, "running");
  // A command script may print no step at all: it would never leave "starting".
  EXPECT_FALSE(launcherReportsSteps("command"));
  EXPECT_FALSE(launcherReportsSteps("torchrun"));
  EXPECT_EQ(showJob("running", 0, fourRanksOn("a1", "a2"), {}, false).state, "running");
  // Silent agents say more than a missing step; other states are what they are.
  EXPECT_EQ(showJob("running", 0, fourRanksOn("a1", "a1"), {{"a1", 10}}, true).state, "unknown");
  for (const char* state : {"submitted", "restarting", "succeeded", "failed"})
    EXPECT_EQ(showJob(state, 0, fourRanksOn("a1", "a2"), {}, true).state, state);
  // No rank launched yet, or every rank already gone: nothing is starting.
  EXPECT_EQ(showJob("running", 0, {}, {}, true).state, "running");
  EXPECT_EQ(showJob("running", 0, {{0, "a1", false}}, {}, true).state, "running");
  // Its ranks by the same rule (the rank table, `status`'s rank rows).
  EXPECT_EQ(showRankState("running", -1, true), "starting");
  EXPECT_EQ(showRankState("running", 0, true), "running");
  EXPECT_EQ(showRankState("running", -1, false), "running");
  EXPECT_EQ(showRankState("pending", -1, true), "pending");
  EXPECT_EQ(showRankState("failed", -1, true), "failed");
}

TEST(JobLiveness, AgentStatusesKeepTheSilentAgentsWithTheirLastAnswer) {
  std::map<std::string, double> silent;
  AgentStatus status;
  status.name = "a1";
  status.state = AgentState::kConnecting;
  EXPECT_FALSE(noteAgentStatus(status, &silent));  // not silent yet: no answer expected so far
  status.state = AgentState::kUnreachable;
  status.answered_at = 1000;
  EXPECT_TRUE(noteAgentStatus(status, &silent));
  EXPECT_EQ(silent, (std::map<std::string, double>{{"a1", 1000}}));
  status.state = AgentState::kServerKeyMismatch;  // still silent: nothing changes
  EXPECT_FALSE(noteAgentStatus(status, &silent));
  status.state = AgentState::kOnline;
  EXPECT_TRUE(noteAgentStatus(status, &silent));
  EXPECT_TRUE(silent.empty());
}

}  // namespace
}  // namespace ringmaster::client
