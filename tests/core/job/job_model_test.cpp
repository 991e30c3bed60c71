// JobModel: the one fold of a job's journal records into its phase, its ranks and its verdicts.
#include "ringmaster/job/job_model.h"

#include <gtest/gtest.h>

namespace ringmaster::job {
namespace {

proto::JournalRecord record(uint32_t attempt, double time = 100) {
  proto::JournalRecord r;
  r.set_job("j1");
  r.set_attempt(attempt);
  r.set_time(time);
  return r;
}

proto::JournalRecord accepted(uint32_t attempt, std::vector<int> ranks, int world_size,
                              uint32_t max_restarts = 0) {
  proto::JournalRecord r = record(attempt);
  auto* a = r.mutable_job_accepted();
  a->set_name("train");
  a->set_world_size(world_size);
  a->set_max_restarts(max_restarts);
  for (int rank : ranks) {
    auto* assignment = a->add_ranks();
    assignment->set_rank(rank);
    assignment->set_local_rank(rank);
  }
  return r;
}

proto::JournalRecord started(uint32_t attempt, int rank) {
  proto::JournalRecord r = record(attempt, 101);
  r.mutable_rank_started()->set_rank(rank);
  r.mutable_rank_started()->set_pid(1000 + rank);
  return r;
}

proto::JournalRecord exited(uint32_t attempt, int rank, proto::RankState state, int code = 0,
                            int signal = 0) {
  proto::JournalRecord r = record(attempt, 150);
  auto* e = r.mutable_rank_exited();
  e->set_rank(rank);
  e->set_state(state);
  e->set_exit_code(code);
  e->set_signal(signal);
  return r;
}

proto::JournalRecord outcome(uint32_t attempt, proto::RankState state) {
  proto::JournalRecord r = record(attempt, 160);
  r.mutable_job_outcome()->set_state(state);
  r.mutable_job_outcome()->set_attempts(attempt);
  return r;
}

// Each agent resolves the interpreter on its own PATH: a rank carries its agent's.
TEST(JobModel, EachRankKeepsTheInterpreterItsAgentRecorded) {
  JobModel job("j1");
  proto::JournalRecord first = accepted(1, {0, 1}, 4);
  first.mutable_job_accepted()->set_interpreter(
      "/usr/bin/python3 -> /usr/bin/python3.11, Python 3.11");
  proto::JournalRecord second = accepted(1, {2, 3}, 4);
  second.mutable_job_accepted()->set_interpreter("/opt/venv/bin/python, Python 3.10.4");
  job.apply("a1", first);
  job.apply("a2", second);
  EXPECT_EQ(job.ranks().at(1).interpreter, "/usr/bin/python3 -> /usr/bin/python3.11, Python 3.11");
  EXPECT_EQ(job.ranks().at(2).interpreter, "/opt/venv/bin/python, Python 3.10.4");
}

proto::JournalRecord decision(uint32_t attempt, proto::JobDecision::Next next,
                              uint32_t restarts_left = 0) {
  proto::JournalRecord r = record(attempt, 151);
  r.mutable_job_decision()->set_next(next);
  r.mutable_job_decision()->set_restarts_left(restarts_left);
  return r;
}

TEST(JobModel, FromAcceptedToRunningToSucceeded) {
  JobModel job("j1");
  job.apply("a1", accepted(1, {0, 1}, 2));
  EXPECT_EQ(job.phase(), JobPhase::kSubmitted);
  EXPECT_FALSE(job.finished());
  job.apply("a1", started(1, 0));
  job.apply("a1", started(1, 1));
  EXPECT_EQ(job.phase(), JobPhase::kRunning);
  EXPECT_EQ(job.ranks().at(1).pid, 1001);
  EXPECT_EQ(job.ranks().at(1).agent, "a1");
  job.apply("a1", exited(1, 0, proto::SUCCEEDED));
  EXPECT_FALSE(job.allExited());
  job.apply("a1", exited(1, 1, proto::SUCCEEDED));
  EXPECT_TRUE(job.allExited());
  // The agents decide: every rank succeeded, but the job is not over until its leader says so.
  EXPECT_EQ(job.phase(), JobPhase::kRunning);
  EXPECT_FALSE(job.finished());
  EXPECT_DOUBLE_EQ(job.endTime(), 0);
  job.apply("a1", outcome(1, proto::SUCCEEDED));
  EXPECT_TRUE(job.decided());
  EXPECT_TRUE(job.succeeded());
  EXPECT_TRUE(job.finished());
  EXPECT_DOUBLE_EQ(job.endTime(), 160);
}

TEST(JobModel, RecordsOfOtherJobsAreIgnored) {
  JobModel job("j1");
  proto::JournalRecord other = accepted(1, {0}, 1);
  other.set_job("j2");
  job.apply("a1", other);
  EXPECT_EQ(job.worldSize(), 0);
  EXPECT_TRUE(job.ranks().empty());
}

// Nothing is predicted: a failed rank leaves the job running until the leader decides, and the
// restarts left are the leader's count.
TEST(JobModel, AFailedRankIsTheLeadersToJudge) {
  JobModel job("j1");
  job.apply("a1", accepted(1, {0, 1}, 2, /*max_restarts=*/1));
  job.apply("a1", started(1, 0));
  job.apply("a1", started(1, 1));
  EXPECT_EQ(job.restartsLeft(), 1u);
  job.apply("a1", exited(1, 1, proto::FAILED, 3));
  EXPECT_EQ(job.phase(), JobPhase::kRunning);
  job.apply("a1", decision(1, proto::JobDecision::RESTART, 0));
  EXPECT_EQ(job.phase(), JobPhase::kRestarting);
  EXPECT_EQ(job.restartsLeft(), 0u);
  job.apply("a1", exited(1, 0, proto::STOPPED, 0, 15));
  EXPECT_FALSE(job.finished()) << "the next attempt is on its way";
  EXPECT_EQ(job.ranks().at(1).exit_code, 3);
  EXPECT_EQ(job.ranks().at(0).status, RankStatus::kStopped);

  // Attempt 2 on one rank: the ranks start from scratch; restarting until one runs.
  job.apply("a1", accepted(2, {0}, 1, 1));
  EXPECT_EQ(job.phase(), JobPhase::kRestarting);
  job.apply("a1", started(2, 0));
  EXPECT_EQ(job.attempt(), 2u);
  EXPECT_EQ(job.phase(), JobPhase::kRunning);
  ASSERT_EQ(job.ranks().size(), 1u);
  // A late exit of attempt 1 from another agent changes nothing now.
  job.apply("a2", exited(1, 0, proto::FAILED, 1));
  EXPECT_EQ(job.ranks().at(0).status, RankStatus::kRunning);
  // It fails again: the leader has no restart left.
  job.apply("a1", exited(2, 0, proto::FAILED, 1));
  EXPECT_EQ(job.phase(), JobPhase::kRunning);
  job.apply("a1", decision(2, proto::JobDecision::FAIL));
  EXPECT_EQ(job.phase(), JobPhase::kFailed);
  EXPECT_TRUE(job.finished()) << "decided to fail, and no rank runs";
}

// A client's restart uses none of the policy's restarts: the leader says what is left.
TEST(JobModel, RestartsLeftAreTheLeadersCountAfterAManualRestart) {
  JobModel job("j1");
  job.apply("a1", accepted(1, {0}, 1, /*max_restarts=*/2));
  job.apply("a1", started(1, 0));
  job.apply("a1", exited(1, 0, proto::FAILED, 1));
  job.apply("a1", decision(1, proto::JobDecision::RESTART, 1));
  proto::JournalRecord restart = record(1, 152);
  restart.mutable_job_restart()->set_next_attempt(2);
  restart.mutable_job_restart()->set_restarts_left(1);
  job.apply("a1", restart);
  job.apply("a1", accepted(2, {0}, 1, 2));
  job.apply("a1", started(2, 0));
  EXPECT_EQ(job.restartsLeft(), 1u);
  // The client restarts attempt 2: the leader decides a restart with 1 left still.
  job.apply("a1", decision(2, proto::JobDecision::RESTART, 1));
  EXPECT_EQ(job.phase(), JobPhase::kRestarting);
  EXPECT_EQ(job.restartsLeft(), 1u);
}

TEST(JobModel, TheLeadersWordIsFinalAndFailuresAreKeptPerAttempt) {
  JobModel job("j1");
  job.apply("a1", accepted(1, {0}, 1));
  job.apply("a1", started(1, 0));
  proto::JournalRecord failure = record(1);
  failure.mutable_job_failure()->set_cause("rank 0 on a1 was killed by signal 9");
  failure.mutable_job_failure()->set_kind("signalled");
  job.apply("a1", failure);
  job.apply("a1", outcome(1, proto::FAILED));
  EXPECT_EQ(job.phase(), JobPhase::kFailed);
  EXPECT_TRUE(job.decided());
  EXPECT_TRUE(job.finished());  // even before the rank's exit record arrives
  ASSERT_EQ(job.failures().count(1), 1u);
  EXPECT_EQ(job.failures().at(1).kind(), "signalled");
  // A client restarts the job that was over: a new attempt is not decided.
  job.apply("a1", accepted(2, {0}, 1));
  EXPECT_FALSE(job.decided());
  EXPECT_EQ(job.phase(), JobPhase::kRestarting);
  // The old attempt's outcome, late from another agent, does not end the new one.
  job.apply("a2", outcome(1, proto::FAILED));
  EXPECT_FALSE(job.decided());
}

TEST(JobModel, TheHangWatchIsTheNewestAttemptsUntilCleared) {
  JobModel job("j1");
  job.apply("a1", accepted(1, {0}, 1));
  job.apply("a1", started(1, 0));
  proto::JournalRecord hang = record(1, 130);
  hang.mutable_hang_suspicion()->set_stage("suspected");
  hang.mutable_hang_suspicion()->set_rank(0);
  hang.mutable_hang_suspicion()->set_agent("a1");
  hang.mutable_hang_suspicion()->set_cause("rank 0 on a1 may be hung");
  job.apply("a1", hang);
  ASSERT_TRUE(job.hang());
  EXPECT_EQ(job.hang()->stage, "suspected");
  EXPECT_DOUBLE_EQ(job.hang()->since, 130);
  hang.mutable_hang_suspicion()->set_stage("cleared");
  job.apply("a1", hang);
  EXPECT_FALSE(job.hang());
}

TEST(JobModel, TheHistorysFoldIsOverlaidByRecords) {
  JobModel live("j1");
  live.apply("a1", accepted(3, {0, 1}, 2, 1));
  live.apply("a1", started(3, 0));
  live.apply("a1", started(3, 1));
  StoredJob stored;
  stored.fold = live.fold();
  for (const auto& [number, rank] : live.ranks()) stored.ranks.push_back(rank);

  JobModel job("j1");
  job.applyStored(stored);
  EXPECT_EQ(job.phase(), JobPhase::kRunning);
  EXPECT_EQ(job.attempt(), 3u);
  EXPECT_EQ(job.worldSize(), 2);
  job.apply("a1", exited(3, 0, proto::SUCCEEDED));
  job.apply("a1", exited(3, 1, proto::SUCCEEDED));
  job.apply("a1", outcome(3, proto::SUCCEEDED));
  EXPECT_EQ(job.phase(), JobPhase::kSucceeded);
  EXPECT_TRUE(job.finished());

  // Records applied before the history arrived keep what they decided.
  JobModel early("j1");
  early.apply("a1", outcome(3, proto::STOPPED));
  early.applyStored(stored);
  EXPECT_TRUE(early.decided());
  EXPECT_EQ(early.phase(), JobPhase::kStopped);
}

// A stop is decided at once but takes the ranks' grace to happen: the job is stopping (not over,
// its slots held) until every rank has ended, then stopped.
TEST(JobModel, AStoppedJobIsStoppingUntilItsRanksHaveEnded) {
  JobModel job("j1");
  job.apply("a1", accepted(1, {0, 1}, 2));
  job.apply("a1", started(1, 0));
  job.apply("a1", started(1, 1));
  job.apply("a1", decision(1, proto::JobDecision::STOP, 0));
  EXPECT_EQ(job.phase(), JobPhase::kStopping);
  EXPECT_FALSE(isOver(job.phase()));
  job.apply("a1", exited(1, 0, proto::STOPPED, 0, 15));
  EXPECT_EQ(job.phase(), JobPhase::kStopping);
  job.apply("a1", exited(1, 1, proto::STOPPED, 0, 16));
  EXPECT_EQ(job.phase(), JobPhase::kStopped);
  EXPECT_TRUE(isOver(job.phase()));
}

// A leader cut off from most of its gang waits before it decides: the job is waiting, not
// running with every rank stopped, nor failed while the other side may go on. The other side's
// newer attempt wins; a late outcome of the waiting side's attempt changes nothing.
TEST(JobModel, AWaitingLeaderIsWaitingAndANewerAttemptOfTheMajorityWins) {
  JobModel job("j1");
  job.apply("a1", accepted(1, {0}, 2, /*max_restarts=*/2));
  job.apply("a3", accepted(1, {1}, 2, 2));
  job.apply("a1", started(1, 0));
  job.apply("a3", started(1, 1));
  job.apply("a3", exited(1, 1, proto::STOPPED, 0, 15));
  job.apply("a3", decision(1, proto::JobDecision::WAIT, 1));
  EXPECT_EQ(job.phase(), JobPhase::kWaiting);
  EXPECT_FALSE(job.finished());
  EXPECT_EQ(job.restartsLeft(), 1u);
  EXPECT_FALSE(isOverState(phaseName(job.phase())));

  job.apply("a1", accepted(2, {0}, 1, 2));
  job.apply("a1", started(2, 0));
  job.apply("a3", outcome(1, proto::FAILED));  // the waiting side gave up, late
  EXPECT_EQ(job.attempt(), 2u);
  EXPECT_EQ(job.phase(), JobPhase::kRunning);
}

// Both sides of a split journal that they wait: the majority's wait is shown, whatever order
// the client reads the agents' journals in (on an even split, the side with rank 0's agent).
TEST(JobModel, TheMajoritysWaitIsShownOverTheMinoritys) {
  auto waiting = [](std::vector<std::string> lost, const std::string& reason) {
    proto::JournalRecord r = decision(1, proto::JobDecision::WAIT, 2);
    for (const auto& agent : lost) r.mutable_job_decision()->add_waiting_for(agent);
    r.mutable_job_decision()->set_reason(reason);
    return r;
  };
  for (bool minority_first : {true, false}) {
    JobModel job("j1");
    for (int i = 0; i < 3; ++i) job.apply("a" + std::to_string(i + 1), accepted(1, {i}, 3, 3));
    const auto majority = waiting({"a3"}, "for a3 to answer again");
    const auto minority = waiting({"a1", "a2"}, "no majority here");
    job.apply(minority_first ? "a3" : "a1", minority_first ? minority : majority);
    job.apply(minority_first ? "a1" : "a3", minority_first ? majority : minority);
    EXPECT_EQ(job.phase(), JobPhase::kWaiting);
    EXPECT_EQ(job.decision().reason(), "for a3 to answer again") << minority_first;
    job.apply("a1", waiting({"a3"}, "for a3 to answer again, still"));  // its own: shown
    EXPECT_EQ(job.decision().reason(), "for a3 to answer again, still");
  }
  JobModel even("j1");
  for (int i = 0; i < 4; ++i) even.apply("a" + std::to_string(i + 1), accepted(1, {i}, 4, 3));
  even.apply("a1", waiting({"a3", "a4"}, "the side of a1"));
  even.apply("a3", waiting({"a1", "a2"}, "the side of a3"));
  EXPECT_EQ(even.decision().reason(), "the side of a1");
}

// A side cut off from the others that a client's stop reached alone says it stopped without a
// majority: whatever order the journals are read in, the majority's outcome is the job's.
TEST(JobModel, AnOutcomeWithoutAMajorityGivesWayToTheMajoritys) {
  for (bool minority_first : {true, false}) {
    JobModel job("j1");
    for (int i = 0; i < 3; ++i) job.apply("a" + std::to_string(i + 1), accepted(1, {i}, 3, 3));
    proto::JournalRecord minority = outcome(1, proto::STOPPED);
    minority.mutable_job_outcome()->set_without_majority(true);
    const proto::JournalRecord majority = outcome(1, proto::FAILED);
    job.apply(minority_first ? "a3" : "a1", minority_first ? minority : majority);
    job.apply(minority_first ? "a1" : "a3", minority_first ? majority : minority);
    EXPECT_EQ(job.phase(), JobPhase::kFailed) << minority_first;
    EXPECT_FALSE(job.outcome()->without_majority());
  }
  JobModel alone("j1");  // where no majority decided, the minority's word is all there is
  alone.apply("a1", accepted(1, {0}, 3, 3));
  proto::JournalRecord minority = outcome(1, proto::FAILED);
  minority.mutable_job_outcome()->set_without_majority(true);
  alone.apply("a3", minority);
  EXPECT_EQ(alone.phase(), JobPhase::kFailed);
}

TEST(JobModel, PhaseNamesAreTheHistorysWords) {
  for (JobPhase p :
       {JobPhase::kSubmitted, JobPhase::kRunning, JobPhase::kRestarting, JobPhase::kWaiting,
        JobPhase::kStopping, JobPhase::kSucceeded, JobPhase::kFailed, JobPhase::kStopped}) {
    EXPECT_EQ(jobPhaseNamed(phaseName(p)), p);
    EXPECT_EQ(isOverState(phaseName(p)), isOver(p));
  }
  EXPECT_FALSE(isOverState("unknown"));
  EXPECT_TRUE(isOverState("stopped"));
  EXPECT_FALSE(isOverState("stopping"));
  for (RankStatus p : {RankStatus::kPending, RankStatus::kRunning, RankStatus::kSucceeded,
                       RankStatus::kFailed, RankStatus::kStopped}) {
    EXPECT_EQ(rankStatusNamed(statusName(p)), p);
  }
  EXPECT_FALSE(jobPhaseNamed("RUNNING"));
}

}  // namespace
}  // namespace ringmaster::job
