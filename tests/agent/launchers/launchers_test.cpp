// The launchers' contracts on their own: argv, environment, validation and failure reasons of
// each kind (launchers_contract_test runs them for real through agents).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "env_contract.h"
#include "launchers/launcher.h"
#include "launchers/python_entry.h"
#include "launchers/tensorflow_launcher.h"

namespace ringmaster::agent {
namespace {

using nlohmann::json;

// 4 ranks on 2 agents (a1: ranks 0-1 on 10.0.0.1, a2: ranks 2-3 on 10.0.0.2), seen from `agent`.
proto::JobLaunch twoAgentJob(proto::Launcher kind, int agent) {
  proto::JobLaunch job;
  job.set_job_id("job-7");
  job.set_attempt(1);
  job.set_launcher(kind);
  job.set_world_size(4);
  job.set_group_rank(agent);
  job.set_group_world_size(2);
  job.set_master_addr("10.0.0.1");
  job.set_master_port(29500);
  job.add_argv("train.py");
  job.add_argv("--epochs");
  job.add_argv("3");
  for (int g = 0; g < 2; ++g) {
    proto::GangMember* member = job.add_gang();
    member->set_agent("a" + std::to_string(g + 1));
    member->set_host_address("10.0.0." + std::to_string(g + 1));
    member->set_ranks(2);
  }
  for (int local = 0; local < 2; ++local) {
    proto::RankAssignment* r = job.add_ranks();
    r->set_rank(agent * 2 + local);
    r->set_local_rank(local);
  }
  return job;
}

std::map<std::string, std::string> envOf(const Launcher& launcher, const proto::JobLaunch& job,
                                         int local) {
  auto entries = launcher.environment(job, job.ranks(local));
  EXPECT_TRUE(entries.isOk()) << entries.status().message();
  RankContext context;
  context.launcher_env = *entries;
  std::map<std::string, std::string> out;
  for (const std::string& entry :
       buildRankEnvironment(job, job.ranks(local), context, {"PATH=/usr/bin"})) {
    out[entry.substr(0, entry.find('='))] = entry.substr(entry.find('=') + 1);
  }
  return out;
}

TEST(Launchers, EveryKindHasOneAndAnUnknownOneHasNone) {
  for (proto::Launcher kind :
       {proto::NATIVE, proto::TORCHRUN, proto::COMMAND, proto::TENSORFLOW, proto::DEEPSPEED}) {
    EXPECT_NE(launcherFor(kind), nullptr) << kind;
  }
  EXPECT_EQ(launcherFor(proto::LAUNCHER_UNSPECIFIED), nullptr);
  EXPECT_EQ(launcherFor(static_cast<proto::Launcher>(99)), nullptr);
  EXPECT_TRUE(launcherFor(proto::NATIVE)->reportsPhase());
  EXPECT_FALSE(launcherFor(proto::TORCHRUN)->reportsPhase());
}

TEST(Launchers, APythonScriptGetsPython3ButACommandRunsAsItIs) {
  const proto::JobLaunch job = twoAgentJob(proto::TORCHRUN, 0);
  using Argv = std::vector<std::string>;
  EXPECT_EQ(launcherFor(proto::TORCHRUN)->argv(job, job.ranks(1), {}),
            (Argv{"python3", "train.py", "--epochs", "3"}));
  EXPECT_EQ(launcherFor(proto::TENSORFLOW)->argv(job, job.ranks(1), {}),
            (Argv{"python3", "train.py", "--epochs", "3"}));
  EXPECT_EQ(launcherFor(proto::COMMAND)->argv(job, job.ranks(1), {}),
            (Argv{"train.py", "--epochs", "3"}));
  proto::JobLaunch native = job;
  native.set_backend("nccl");
  EXPECT_EQ(launcherFor(proto::NATIVE)->argv(native, job.ranks(0), {"/opt/w", "/s/jobs/job-7"}),
            (Argv{"/opt/w", "--config", "/s/jobs/job-7/native.yaml", "--backend", "nccl"}));
  EXPECT_FALSE(launcherFor(proto::NATIVE)->validate(job).isOk()) << "no native: section";
}

// deepspeed/launcher/launch.py: cmd = [sys.executable, "-u", (-m), script, f"--local_rank=
// {local_rank}", *script_args], or with --no_python [script, --local_rank=N, *args].
TEST(Launchers, DeepspeedPutsLocalRankRightAfterTheEntryPoint) {
  using Argv = std::vector<std::string>;
  const Launcher& ds = *launcherFor(proto::DEEPSPEED);
  proto::JobLaunch job = twoAgentJob(proto::DEEPSPEED, 1);
  EXPECT_EQ(ds.argv(job, job.ranks(1), {}),
            (Argv{"python3", "train.py", "--local_rank=1", "--epochs", "3"}));
  job.clear_argv();
  for (const char* a : {"/venv/bin/python", "-u", "-m", "pkg.train", "--lr", "0.1"}) {
    job.add_argv(a);
  }
  EXPECT_EQ(ds.argv(job, job.ranks(0), {}),
            (Argv{"/venv/bin/python", "-u", "-m", "pkg.train", "--local_rank=0", "--lr", "0.1"}));
  job.clear_argv();
  for (const char* a : {"/opt/train", "--steps", "5"}) job.add_argv(a);
  EXPECT_EQ(ds.argv(job, job.ranks(0), {}), (Argv{"/opt/train", "--local_rank=0", "--steps", "5"}));
}

TEST(Launchers, DeepspeedGivesTheNodeItsCrossRankAndSizes) {
  const proto::JobLaunch job = twoAgentJob(proto::DEEPSPEED, 1);
  auto env = envOf(*launcherFor(proto::DEEPSPEED), job, 1);
  EXPECT_EQ(env["RANK"], "3");
  EXPECT_EQ(env["LOCAL_RANK"], "1");
  EXPECT_EQ(env["WORLD_SIZE"], "4");
  EXPECT_EQ(env["MASTER_ADDR"], "10.0.0.1");
  EXPECT_EQ(env["MASTER_PORT"], "29500");
  EXPECT_EQ(env["CROSS_RANK"], "1");
  EXPECT_EQ(env["CROSS_SIZE"], "2");
  EXPECT_EQ(env["LOCAL_SIZE"], "2");
}

TEST(Launchers, TensorflowConfigNamesEveryTaskAndTheRanksOwn) {
  proto::JobLaunch job = twoAgentJob(proto::TENSORFLOW, 1);
  job.mutable_tensorflow()->set_chief(true);
  job.mutable_tensorflow()->set_ps(1);
  const json expected_cluster = {{"chief", {"10.0.0.1:29500"}},
                                 {"worker", {"10.0.0.1:29501", "10.0.0.2:29502"}},
                                 {"ps", {"10.0.0.2:29503"}}};
  const std::vector<std::pair<std::string, int>> tasks = {
      {"chief", 0}, {"worker", 0}, {"worker", 1}, {"ps", 0}};
  for (int rank = 0; rank < 4; ++rank) {
    auto config = tensorflowConfig(job, rank);
    ASSERT_TRUE(config.isOk()) << config.status().message();
    const json parsed = json::parse(*config);
    EXPECT_EQ(parsed["cluster"], expected_cluster) << *config;
    EXPECT_EQ(parsed["task"]["type"], tasks[static_cast<size_t>(rank)].first) << rank;
    EXPECT_EQ(parsed["task"]["index"], tasks[static_cast<size_t>(rank)].second) << rank;
  }
  EXPECT_EQ(json::parse(envOf(*launcherFor(proto::TENSORFLOW), job, 1)["TF_CONFIG"])["task"],
            json({{"type", "ps"}, {"index", 0}}));
}

TEST(Launchers, TensorflowWithoutRolesIsWorkersOnly) {
  const proto::JobLaunch job = twoAgentJob(proto::TENSORFLOW, 0);
  const json parsed = json::parse(*tensorflowConfig(job, 2));
  EXPECT_EQ(parsed["cluster"].size(), 1u) << parsed.dump();
  EXPECT_EQ(parsed["cluster"]["worker"].size(), 4u);
  EXPECT_EQ(parsed["task"], json({{"type", "worker"}, {"index", 2}}));
}

TEST(Launchers, TensorflowRefusesRolesThatLeaveNoWorkerAndAJobWithoutItsGang) {
  const Launcher& tf = *launcherFor(proto::TENSORFLOW);
  proto::JobLaunch job = twoAgentJob(proto::TENSORFLOW, 0);
  job.mutable_tensorflow()->set_chief(true);
  job.mutable_tensorflow()->set_ps(3);
  Status refused = tf.validate(job);
  EXPECT_FALSE(refused.isOk());
  EXPECT_NE(refused.message().find("at least one worker"), std::string::npos) << refused.message();
  job.mutable_tensorflow()->set_ps(1);
  EXPECT_TRUE(tf.validate(job).isOk());
  // Prepared without its gang (a Slurm node does so before it hears the others), but not run.
  job.clear_gang();
  EXPECT_TRUE(tf.validate(job).isOk());
  auto without_gang = tf.environment(job, job.ranks(0));
  ASSERT_FALSE(without_gang.isOk());
  EXPECT_NE(without_gang.status().message().find("gang"), std::string::npos)
      << without_gang.status().message();
  proto::JobLaunch high = twoAgentJob(proto::TENSORFLOW, 0);
  high.set_master_port(65534);
  auto past = tensorflowConfig(high, 0);
  ASSERT_FALSE(past.isOk());
  EXPECT_NE(past.status().message().find("65534"), std::string::npos);
}

TEST(Launchers, TensorflowOnOneAgentWithoutAGangUsesItsHost) {
  proto::JobLaunch job;
  job.set_world_size(2);
  job.set_master_port(4000);
  job.set_host_address("::1");
  for (int r = 0; r < 2; ++r) job.add_ranks()->set_rank(r);
  const json parsed = json::parse(*tensorflowConfig(job, 1));
  EXPECT_EQ(parsed["cluster"]["worker"], json({"[::1]:4000", "[::1]:4001"}));
}

TEST(PythonEntry, FindsTheEntryPointPastTheInterpretersOptions) {
  using Argv = std::vector<std::string>;
  EXPECT_TRUE(runsPython({"/usr/bin/python3.11", "-c", "pass"}));
  EXPECT_TRUE(runsPython({"/opt/interp", "train.py"}));
  EXPECT_FALSE(runsPython({"/bin/sh", "-c", "x"}));
  EXPECT_EQ(pythonEntryIndex(Argv{"python3", "-u", "-W", "ignore", "t.py", "a"}), 4u);
  EXPECT_EQ(pythonEntryIndex(Argv{"python3", "-m", "pkg", "a"}), 2u);
  EXPECT_EQ(pythonEntryIndex(Argv{"python3", "-c", "print(1)"}), 3u);
}

TEST(PythonEntry, TheVersionComesFromTheFileOrItsVenv) {
  const std::string dir = std::filesystem::canonical(::testing::TempDir()).string() +
                          "/python_entry_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir + "/usr/bin");
  std::filesystem::create_directories(dir + "/venv/bin");
  std::ofstream(dir + "/usr/bin/python3.12") << "";
  std::filesystem::create_symlink(dir + "/usr/bin/python3.12", dir + "/usr/bin/python3");
  EXPECT_EQ(describeInterpreter(dir + "/usr/bin/python3"),
            dir + "/usr/bin/python3 -> " + dir + "/usr/bin/python3.12, Python 3.12");
  std::ofstream(dir + "/venv/bin/python") << "#!/bin/sh\n";
  std::ofstream(dir + "/venv/pyvenv.cfg") << "home = /usr/bin\nversion = 3.10.4\n";
  EXPECT_EQ(describeInterpreter(dir + "/venv/bin/python"), dir + "/venv/bin/python, Python 3.10.4");
  std::ofstream(dir + "/usr/bin/mystery") << "";
  EXPECT_EQ(describeInterpreter(dir + "/usr/bin/mystery"),
            dir + "/usr/bin/mystery, version unknown");
  std::filesystem::remove_all(dir);
}

TEST(PythonEntry, AMissingFrameworkIsNamedWithItsInterpreter) {
  const std::vector<std::string> tail = {
      "Traceback (most recent call last):", "  File \"train.py\", line 1, in <module>",
      "ModuleNotFoundError: No module named 'torch'"};
  auto reason = launcherFor(proto::TORCHRUN)->explainFailure(tail, "/usr/bin/python3.11");
  ASSERT_TRUE(reason);
  EXPECT_EQ(*reason,
            "interpreter /usr/bin/python3.11 has no torch (ModuleNotFoundError: No module named "
            "'torch'): name one that has it with python: in the spec");
  EXPECT_TRUE(launcherFor(proto::DEEPSPEED)->explainFailure(tail, "p"));
  EXPECT_FALSE(launcherFor(proto::COMMAND)->explainFailure(tail, "p"));
  EXPECT_FALSE(launcherFor(proto::TORCHRUN)
                   ->explainFailure({"ModuleNotFoundError: No module named 'torchvision'"}, "p"));
  EXPECT_TRUE(launcherFor(proto::TENSORFLOW)
                  ->explainFailure({"ModuleNotFoundError: No module named 'tensorflow'"}, "p"));
}

}  // namespace
}  // namespace ringmaster::agent
