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
  EXPECT_EQ(job.phase(), JobPhase::kSucceeded);
  EXPECT_TRUE(job.finished());
  EXPECT_FALSE(job.decided());  // until the leader's word
  EXPECT_DOUBLE_EQ(job.endTime(), 150);
  job.apply("a1", outcome(1, proto::SUCCEEDED));
  EXPECT_TRUE(job.decided());
  EXPECT_TRUE(job.succeeded());
}

TEST(JobModel, RecordsOfOtherJobsAreIgnored) {
  JobModel job("j1");
  proto::JournalRecord other = accepted(1, {0}, 1);
  other.set_job("j2");
  job.apply("a1", other);
  EXPECT_EQ(job.worldSize(), 0);
  EXPECT_TRUE(job.ranks().empty());
}

// The restart limit comes from JobAccepted (the spec's YAML is never parsed again for it).
TEST(JobModel, AFailedRankWithRestartsLeftIsRestartingNotFailedOrFinished) {
  JobModel job("j1");
  job.apply("a1", accepted(1, {0, 1}, 2, /*max_restarts=*/1));
  job.apply("a1", started(1, 0));
  job.apply("a1", started(1, 1));
  job.apply("a1", exited(1, 1, proto::FAILED, 3));
  EXPECT_EQ(job.phase(), JobPhase::kRestarting);
  job.apply("a1", exited(1, 0, proto::STOPPED, 0, 15));
  EXPECT_FALSE(job.finished()) << "the next attempt is on its way";
  EXPECT_EQ(job.ranks().at(1).exit_code, 3);
  EXPECT_EQ(job.ranks().at(0).status, RankStatus::kStopped);

  // Attempt 2 on one rank: the ranks start from scratch.
  job.apply("a1", accepted(2, {0}, 1, 1));
  job.apply("a1", started(2, 0));
  EXPECT_EQ(job.attempt(), 2u);
  EXPECT_EQ(job.phase(), JobPhase::kRunning);
  ASSERT_EQ(job.ranks().size(), 1u);
  // A late exit of attempt 1 from another agent changes nothing now.
  job.apply("a2", exited(1, 0, proto::FAILED, 1));
  EXPECT_EQ(job.ranks().at(0).status, RankStatus::kRunning);
  // It fails again: no restart left.
  job.apply("a1", exited(2, 0, proto::FAILED, 1));
  EXPECT_EQ(job.phase(), JobPhase::kFailed);
  EXPECT_TRUE(job.finished());
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
  EXPECT_EQ(job.phase(), JobPhase::kSubmitted);
}

TEST(JobModel, TheHistorysViewIsOverlaidByRecords) {
  JobModel job("j1");
  StoredJob stored;
  stored.phase = JobPhase::kRunning;
  stored.world_size = 2;
  stored.attempt = 3;
  for (int r = 0; r < 2; ++r) {
    RankState rank;
    rank.rank = r;
    rank.agent = "a1";
    rank.pid = 10 + r;
    rank.status = RankStatus::kRunning;
    stored.ranks.push_back(rank);
  }
  job.applyStored(stored);
  EXPECT_EQ(job.phase(), JobPhase::kRunning);
  EXPECT_EQ(job.attempt(), 3u);
  job.apply("a1", exited(3, 0, proto::SUCCEEDED));
  job.apply("a1", exited(3, 1, proto::SUCCEEDED));
  EXPECT_EQ(job.phase(), JobPhase::kSucceeded);
  EXPECT_TRUE(job.finished());

  JobModel over("j1");
  stored.phase = JobPhase::kStopped;
  stored.decided = true;
  stored.ranks.clear();
  over.applyStored(stored);
  EXPECT_TRUE(over.decided());
  EXPECT_EQ(over.phase(), JobPhase::kStopped);
}

TEST(JobModel, PhaseNamesAreTheHistorysWords) {
  for (JobPhase p : {JobPhase::kSubmitted, JobPhase::kRunning, JobPhase::kRestarting,
                     JobPhase::kSucceeded, JobPhase::kFailed, JobPhase::kStopped}) {
    EXPECT_EQ(jobPhaseNamed(phaseName(p)), p);
  }
  for (RankStatus p : {RankStatus::kPending, RankStatus::kRunning, RankStatus::kSucceeded,
                       RankStatus::kFailed, RankStatus::kStopped}) {
    EXPECT_EQ(rankStatusNamed(statusName(p)), p);
  }
  EXPECT_FALSE(jobPhaseNamed("RUNNING"));
}

}  // namespace
}  // namespace ringmaster::job
