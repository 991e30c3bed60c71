// Slurm's job states as Ringmaster reads them. The recorded/ files are real output of Debian's
// Slurm 22.05 (tests/slurm/cluster.sh: pending on Resources and Priority, running, completed,
// failed, cancelled, a node failure, and a job requeued after its node failed). The newer
// releases' lines below follow their documentation (sacct's "CANCELLED by UID", step lines,
// array and het job ids, OUT_OF_MEMORY): no newer Slurm runs here to record them.
#include "ringmaster/slurm/job_state.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

namespace ringmaster::slurm {
namespace {

std::string recorded(const std::string& name) {
  std::ifstream in(std::string(RM_SOURCE_DIR) + "/tests/core/slurm/recorded/" + name);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_FALSE(text.str().empty()) << name;
  return text.str();
}

TEST(SlurmPhase, EveryStateNameAndCodeHasAPhase) {
  EXPECT_EQ(phaseOf("PENDING"), Phase::kPending);
  EXPECT_EQ(phaseOf("PD"), Phase::kPending);
  EXPECT_EQ(phaseOf("REQUEUED"), Phase::kPending);
  EXPECT_EQ(phaseOf("CONFIGURING"), Phase::kPending);
  EXPECT_EQ(phaseOf("RUNNING"), Phase::kRunning);
  // Regression (issue 21): after scancel squeue says COMPLETING while Slurm ends the step's
  // processes; that is not "running".
  EXPECT_EQ(phaseOf("COMPLETING"), Phase::kCompleting);
  EXPECT_STREQ(phaseName(Phase::kCompleting), "completing");
  EXPECT_FALSE(isFinished(Phase::kCompleting));
  EXPECT_EQ(phaseOf("SUSPENDED"), Phase::kSuspended);
  EXPECT_EQ(phaseOf("COMPLETED"), Phase::kCompleted);
  EXPECT_EQ(phaseOf("FAILED"), Phase::kFailed);
  EXPECT_EQ(phaseOf("OUT_OF_MEMORY"), Phase::kFailed);
  EXPECT_EQ(phaseOf("BOOT_FAIL"), Phase::kFailed);
  EXPECT_EQ(phaseOf("CANCELLED"), Phase::kCancelled);
  EXPECT_EQ(phaseOf("CANCELLED by 1000"), Phase::kCancelled);
  EXPECT_EQ(phaseOf("PREEMPTED"), Phase::kPreempted);
  EXPECT_EQ(phaseOf("TIMEOUT"), Phase::kTimedOut);
  EXPECT_EQ(phaseOf("DEADLINE"), Phase::kTimedOut);
  EXPECT_EQ(phaseOf("NODE_FAIL"), Phase::kNodeFailure);
  EXPECT_EQ(phaseOf("running"), Phase::kUnknown);  // Slurm prints upper case
  EXPECT_EQ(phaseOf("LAUNCH_FAILED_SOMEDAY"), Phase::kUnknown);

  EXPECT_STREQ(phaseName(Phase::kTimedOut), "timed out");
  EXPECT_STREQ(phaseName(Phase::kNodeFailure), "node failure");
  EXPECT_TRUE(isFinished(Phase::kPreempted));
  EXPECT_TRUE(isFinished(Phase::kNodeFailure));
  EXPECT_FALSE(isFinished(Phase::kPending));
  EXPECT_FALSE(isFinished(Phase::kSuspended));
  EXPECT_FALSE(isFinished(Phase::kUnknown));
}

TEST(SlurmSqueue, ReadsSlurm2205Output) {
  auto jobs = parseSqueue(recorded("squeue-22.05.txt"));
  ASSERT_TRUE(jobs.isOk()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 3u);
  EXPECT_EQ((*jobs)[0].job_id, "2");
  EXPECT_EQ((*jobs)[0].phase, Phase::kPending);
  EXPECT_EQ((*jobs)[0].reason, "Resources");
  EXPECT_EQ((*jobs)[1].reason, "Priority");
  EXPECT_EQ((*jobs)[2].phase, Phase::kRunning);
  EXPECT_EQ((*jobs)[2].reason, "");  // "None"

  auto all = parseSqueue(recorded("squeue-all-22.05.txt"));
  ASSERT_TRUE(all.isOk()) << all.status().message();
  ASSERT_EQ(all->size(), 7u);
  std::map<std::string, JobState> by_id;
  for (const auto& job : *all) by_id[job.job_id] = job;
  EXPECT_EQ(by_id["1"].phase, Phase::kCancelled);
  EXPECT_EQ(by_id["4"].phase, Phase::kFailed);
  EXPECT_EQ(by_id["4"].reason, "NonZeroExitCode");
  EXPECT_EQ(by_id["6"].phase, Phase::kNodeFailure);
  EXPECT_EQ(by_id["6"].reason, "NodeDown");
  EXPECT_EQ(by_id["7"].phase, Phase::kPending);  // requeued after its node failed
}

TEST(SlurmSqueue, NewerReleasesIdsAndStates) {
  auto jobs = parseSqueue(
      "1234_7|RUNNING|None\n1235+0|PENDING|Dependency\n1236|OUT_OF_MEMORY|OutOfMemory\r\n"
      "1237_[1-4]|PENDING|QOSMaxJobsPerUserLimit\n\n");
  ASSERT_TRUE(jobs.isOk()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 4u);
  EXPECT_EQ((*jobs)[0].job_id, "1234_7");
  EXPECT_EQ((*jobs)[1].job_id, "1235+0");
  EXPECT_EQ((*jobs)[1].reason, "Dependency");
  EXPECT_EQ((*jobs)[2].phase, Phase::kFailed);
  EXPECT_EQ((*jobs)[3].job_id, "1237_[1-4]");
  EXPECT_EQ((*jobs)[3].reason, "QOSMaxJobsPerUserLimit");
}

TEST(SlurmSqueue, ABrokenLineIsNamed) {
  auto jobs =
      parseSqueue("12|RUNNING|None\nslurm_load_jobs error: Unable to contact slurm controller\n");
  ASSERT_FALSE(jobs.isOk());
  EXPECT_NE(jobs.status().message().find("squeue line 2: expected 3 fields"), std::string::npos)
      << jobs.status().message();
  EXPECT_NE(jobs.status().message().find("Unable to contact"), std::string::npos);
  EXPECT_FALSE(parseSqueue("|RUNNING|None").isOk());
}

TEST(SlurmSacct, ReadsParsable2JobLinesAndSkipsSteps) {
  // sacct -n --parsable2 -o JobID,State,ExitCode,Reason (23.11-25.x; without -X steps follow).
  auto jobs = parseSacct(
      "4242|CANCELLED by 1000|0:15|None\n4242.batch|CANCELLED|0:15|\n4242.extern|COMPLETED|0:0|\n"
      "4242.0|CANCELLED|0:15|\n4243|TIMEOUT|0:0|TimeLimit\n4244|PREEMPTED|0:0|\n"
      "4245|FAILED|3:0|NonZeroExitCode\n4246|PENDING|0:0|BeginTime\n");
  ASSERT_TRUE(jobs.isOk()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 5u);
  EXPECT_EQ((*jobs)[0].job_id, "4242");
  EXPECT_EQ((*jobs)[0].phase, Phase::kCancelled);
  EXPECT_EQ((*jobs)[0].slurm_state, "CANCELLED by 1000");
  EXPECT_EQ((*jobs)[0].exit_code, "0:15");
  EXPECT_EQ((*jobs)[1].phase, Phase::kTimedOut);
  EXPECT_EQ((*jobs)[1].reason, "TimeLimit");
  EXPECT_EQ((*jobs)[2].phase, Phase::kPreempted);
  EXPECT_EQ((*jobs)[3].exit_code, "3:0");
  EXPECT_EQ((*jobs)[4].reason, "BeginTime");
  auto wrong = parseSacct("4242|COMPLETED|0:0\n");
  ASSERT_FALSE(wrong.isOk());
  EXPECT_NE(wrong.status().message().find("sacct line 1: expected 4 fields"), std::string::npos);
}

TEST(SlurmScontrol, ReadsEveryRecordedJob) {
  std::map<std::string, JobState> by_id;
  std::istringstream lines(recorded("scontrol-22.05.txt"));
  for (std::string line; std::getline(lines, line);) {
    auto job = parseScontrolJob(line);
    ASSERT_TRUE(job.isOk()) << job.status().message();
    by_id[job->job_id] = *job;
  }
  ASSERT_EQ(by_id.size(), 7u);
  EXPECT_EQ(by_id["4"].phase, Phase::kFailed);
  EXPECT_EQ(by_id["4"].exit_code, "3:0");
  EXPECT_EQ(by_id["4"].reason, "NonZeroExitCode");
  EXPECT_EQ(by_id["5"].phase, Phase::kCompleted);
  EXPECT_EQ(by_id["6"].phase, Phase::kNodeFailure);
  EXPECT_EQ(by_id["7"].phase, Phase::kPending);
}

TEST(SlurmScontrol, ValuesWithSpacesAndNewerFields) {
  auto job = parseScontrolJob(
      "JobId=77 JobName=train big Comment=two words here JobState=PENDING "
      "Reason=ReqNodeNotAvail,_UnavailableNodes:n2 ExitCode=0:0 MCS_label=N/A "
      "AllocNode:Sid=login1:4242 TRES=cpu=2,mem=1G");
  ASSERT_TRUE(job.isOk()) << job.status().message();
  EXPECT_EQ(job->job_id, "77");
  EXPECT_EQ(job->phase, Phase::kPending);
  EXPECT_EQ(job->reason, "ReqNodeNotAvail,_UnavailableNodes:n2");
  auto missing = parseScontrolJob("slurm_load_jobs error: Invalid job id specified");
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(missing.status().message().find("Invalid job id"), std::string::npos);
}

TEST(SlurmScontrol, AnIdOfOnlyCarriageReturnsIsNoId) {
  // Found by the fuzzer: "\r" survived the emptiness check and was trimmed away afterwards.
  auto job = parseScontrolJob("JobId=\r\r\r JobState=RUNNING");
  ASSERT_FALSE(job.isOk());
  EXPECT_NE(job.status().message().find("no JobId"), std::string::npos);
}

}  // namespace
}  // namespace ringmaster::slurm
