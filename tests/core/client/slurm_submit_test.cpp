// The batch script that submit --slurm hands to sbatch: what it asks of Slurm, and how it ends.
// tests/slurm/ runs such scripts on a real Slurm cluster.
#include "ringmaster/client/slurm_submit.h"

#include <gtest/gtest.h>

#include <string>

namespace ringmaster::client {
namespace {

job::JobSpec parse(const std::string& yaml) {
  job::SpecParseResult parsed = job::parseJobSpec(yaml, "job.yaml");
  EXPECT_TRUE(parsed.ok()) << job::formatDiagnostics(parsed.errors);
  return parsed.ok() ? *parsed.spec : job::JobSpec{};
}

SlurmCluster cluster() {
  SlurmCluster c;
  c.name = "hpc";
  c.job_dir = "/shared/jobs";
  c.defaults.partition = "gpu";
  return c;
}

constexpr char kSpec[] = R"(name: train
launcher: command
command: [/bin/true]
stop_grace_seconds: 20
slurm: {nodes: 4, gpus_per_node: 2, time: "1:00:00", sbatch_args: [--exclusive]}
)";

TEST(SlurmSubmission, AsksSlurmForTheNodesGpusAndTheClustersDefaults) {
  auto plan = planSlurmSubmission(parse(kSpec), cluster(), "train-1", "/opt/rm/ringmaster-agent");
  ASSERT_TRUE(plan.isOk()) << plan.status().message();
  for (const char* line :
       {"#SBATCH --nodes=4\n", "#SBATCH --gpus-per-node=2\n", "#SBATCH --partition=gpu\n",
        "#SBATCH --time=1:00:00\n", "#SBATCH --output=/shared/jobs/train-1/slurm-%j.out\n"}) {
    EXPECT_NE(plan->script.find(line), std::string::npos) << line << plan->script;
  }
  EXPECT_EQ(plan->dir.root, "/shared/jobs/train-1");
  EXPECT_EQ(plan->sbatch, (std::vector<std::string>{"sbatch", "--parsable", "--exclusive",
                                                    "/shared/jobs/train-1/batch.sh"}));
  // Ranks per node default to the GPUs per node.
  EXPECT_NE(plan->script.find("'/opt/rm/ringmaster-agent' slurm-node --job-dir "
                              "'/shared/jobs/train-1' --ranks-per-node 2"),
            std::string::npos)
      << plan->script;
}

TEST(SlurmSubmission, RequeuesAndSignalsTheRanksBeforeTheTimeLimit) {
  auto plan = planSlurmSubmission(parse(kSpec), cluster(), "train-1", "ringmaster-agent");
  ASSERT_TRUE(plan.isOk()) << plan.status().message();
  EXPECT_NE(plan->script.find("#SBATCH --requeue\n"), std::string::npos);
  // The job's stop grace, and 30 s to spare.
  EXPECT_NE(plan->script.find("#SBATCH --signal=TERM@50\n"), std::string::npos) << plan->script;
}

TEST(SlurmSubmission, WaitsForSlurmToEndAJobItsSignalStopped) {
  auto plan = planSlurmSubmission(parse(kSpec), cluster(), "train-1", "ringmaster-agent");
  ASSERT_TRUE(plan.isOk()) << plan.status().message();
  const std::string& s = plan->script;
  // Exiting at once would record a preempted or timed-out job as COMPLETED.
  EXPECT_NE(s.find("if [ $status -eq 143 ]; then sleep 140; fi\nexit $status\n"), std::string::npos)
      << s;
}

TEST(SlurmSubmission, RefusesAJobDirWithASpace) {
  SlurmCluster spaced = cluster();
  spaced.job_dir = "/shared/my jobs";
  auto plan = planSlurmSubmission(parse(kSpec), spaced, "train-1", "ringmaster-agent");
  ASSERT_FALSE(plan.isOk());
  EXPECT_NE(plan.status().message().find("contains a space"), std::string::npos);
}

}  // namespace
}  // namespace ringmaster::client
