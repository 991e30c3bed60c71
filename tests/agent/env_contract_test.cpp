#include "env_contract.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <string>

#include "job_supervisor.h"

namespace ringmaster::agent {
namespace {

// 4 ranks on 2 agents; this is agent 1, which runs ranks 2 and 3.
proto::JobLaunch twoAgentJob() {
  proto::JobLaunch job;
  job.set_job_id("job-42");
  job.set_attempt(3);
  job.set_world_size(4);
  job.set_group_rank(1);
  job.set_group_world_size(2);
  job.set_master_addr("10.0.0.1");
  job.set_master_port(29500);
  job.set_max_restarts(5);
  for (int r : {2, 3}) {
    auto* a = job.add_ranks();
    a->set_rank(r);
    a->set_local_rank(r - 2);
  }
  return job;
}

proto::RankAssignment rank3() {
  proto::RankAssignment r;
  r.set_rank(3);
  r.set_local_rank(1);
  return r;
}

std::map<std::string, std::string> asMap(const std::vector<std::string>& env) {
  std::map<std::string, std::string> out;
  for (const auto& entry : env) {
    const size_t eq = entry.find('=');
    EXPECT_NE(eq, std::string::npos) << entry;
    EXPECT_TRUE(out.emplace(entry.substr(0, eq), entry.substr(eq + 1)).second)
        << "duplicate " << entry;
  }
  return out;
}

void addEnv(proto::JobLaunch& job, const std::string& name, const std::string& value) {
  auto* v = job.add_env();
  v->set_name(name);
  v->set_value(value);
}

TEST(BuildRankEnvironment, SetsTheWholeContractForRank3OnAgent1) {
  RankContext ctx;
  ctx.agent_dir = "/var/lib/ringmaster-agent";
  ctx.cuda_visible_devices = "GPU-1b2c";
  ctx.checkpoint_dir = "/var/lib/ringmaster/jobs/job-42/checkpoints";
  ctx.error_file = "/var/lib/ringmaster/jobs/job-42/attempt-3/rank-3.error.json";
  ctx.workdir = "/var/lib/ringmaster/jobs/job-42/work";
  const auto env =
      asMap(buildRankEnvironment(twoAgentJob(), rank3(), ctx, {"PATH=/usr/bin", "PWD=/root"}));

  const std::map<std::string, std::string> expected = {
      {"PATH", "/usr/bin"},
      {"RANK", "3"},
      {"LOCAL_RANK", "1"},
      {"WORLD_SIZE", "4"},
      {"LOCAL_WORLD_SIZE", "2"},
      {"GROUP_RANK", "1"},
      {"GROUP_WORLD_SIZE", "2"},
      {"ROLE_RANK", "3"},
      {"ROLE_NAME", "default"},
      {"ROLE_WORLD_SIZE", "4"},
      {"MASTER_ADDR", "10.0.0.1"},
      {"MASTER_PORT", "29500"},
      {"TORCHELASTIC_RESTART_COUNT", "2"},
      {"TORCHELASTIC_MAX_RESTARTS", "5"},
      {"TORCHELASTIC_RUN_ID", "job-42"},
      {"TORCHELASTIC_ERROR_FILE", "/var/lib/ringmaster/jobs/job-42/attempt-3/rank-3.error.json"},
      {"PWD", "/var/lib/ringmaster/jobs/job-42/work"},
      {"OMP_NUM_THREADS", "1"},
      {"CUDA_VISIBLE_DEVICES", "GPU-1b2c"},
      {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"},
      {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"},
      {"NCCL_ASYNC_ERROR_HANDLING", "1"},
      {"RINGMASTER_JOB_ID", "job-42"},
      {"RINGMASTER_ATTEMPT", "3"},
      {"RINGMASTER_RANK", "3"},
      {"RINGMASTER_CHECKPOINT_DIR", "/var/lib/ringmaster/jobs/job-42/checkpoints"},
      {"PYTHONUNBUFFERED", "1"},
      {"RINGMASTER_AGENT_DIR", "/var/lib/ringmaster-agent"},
  };
  EXPECT_EQ(env, expected);
}

// The agent finds what a rank left running by this mark: a job cannot take it off.
TEST(BuildRankEnvironment, TheAgentsMarkCannotBeOverriddenByTheJob) {
  RankContext ctx;
  ctx.agent_dir = "/var/lib/ringmaster-agent";
  proto::JobLaunch job = twoAgentJob();
  addEnv(job, "RINGMASTER_AGENT_DIR", "/elsewhere");
  const auto env = asMap(buildRankEnvironment(job, rank3(), ctx, {"RINGMASTER_AGENT_DIR=/x"}));
  EXPECT_EQ(env.at("RINGMASTER_AGENT_DIR"), "/var/lib/ringmaster-agent");
}

TEST(BuildRankEnvironment, FirstAttemptHasRestartCountZero) {
  auto job = twoAgentJob();
  job.set_attempt(1);
  auto env = asMap(buildRankEnvironment(job, rank3(), {}, {}));
  EXPECT_EQ(env["TORCHELASTIC_RESTART_COUNT"], "0");
  EXPECT_EQ(env["RINGMASTER_ATTEMPT"], "1");
}

TEST(BuildRankEnvironment, CudaVisibleDevicesOnlyWhenThePlanSetsIt) {
  RankContext untouched;  // backend gloo: the agent's own environment decides
  EXPECT_EQ(asMap(buildRankEnvironment(twoAgentJob(), rank3(), untouched,
                                       {"CUDA_VISIBLE_DEVICES=2"}))["CUDA_VISIBLE_DEVICES"],
            "2");
  RankContext hidden;  // backend auto on the CPU
  hidden.cuda_visible_devices = "";
  EXPECT_EQ(asMap(buildRankEnvironment(twoAgentJob(), rank3(), hidden,
                                       {"CUDA_VISIBLE_DEVICES=2"}))["CUDA_VISIBLE_DEVICES"],
            "");
}

TEST(BuildRankEnvironment, CudaDeviceOrderIsPciBusUnlessTheJobChoosesAnother) {
  auto job = twoAgentJob();
  EXPECT_EQ(asMap(buildRankEnvironment(job, rank3(), {}, {}))["CUDA_DEVICE_ORDER"], "PCI_BUS_ID");
  addEnv(job, "CUDA_DEVICE_ORDER", "FASTEST_FIRST");
  EXPECT_EQ(asMap(buildRankEnvironment(job, rank3(), {}, {}))["CUDA_DEVICE_ORDER"],
            "FASTEST_FIRST");
}

TEST(BuildRankEnvironment, OmpNumThreadsDefaultsToOneOnlyWhenUnset) {
  const auto job = twoAgentJob();
  EXPECT_EQ(asMap(buildRankEnvironment(job, rank3(), {}, {}))["OMP_NUM_THREADS"], "1");
  // Set by the agent's environment: kept.
  EXPECT_EQ(asMap(buildRankEnvironment(job, rank3(), {}, {"OMP_NUM_THREADS=8"}))["OMP_NUM_THREADS"],
            "8");
  // Set by the job: the job wins, even over the agent's.
  auto with_omp = job;
  addEnv(with_omp, "OMP_NUM_THREADS", "4");
  EXPECT_EQ(asMap(buildRankEnvironment(with_omp, rank3(), {}, {}))["OMP_NUM_THREADS"], "4");
  EXPECT_EQ(
      asMap(buildRankEnvironment(with_omp, rank3(), {}, {"OMP_NUM_THREADS=8"}))["OMP_NUM_THREADS"],
      "4");
}

TEST(BuildRankEnvironment, PythonUnbufferedDefaultsToOneOnlyWhenUnset) {
  const auto job = twoAgentJob();
  EXPECT_EQ(asMap(buildRankEnvironment(job, rank3(), {}, {}))["PYTHONUNBUFFERED"], "1");
  EXPECT_EQ(
      asMap(buildRankEnvironment(job, rank3(), {}, {"PYTHONUNBUFFERED="}))["PYTHONUNBUFFERED"], "");
  auto with_var = job;
  addEnv(with_var, "PYTHONUNBUFFERED", "0");
  EXPECT_EQ(asMap(buildRankEnvironment(with_var, rank3(), {}, {}))["PYTHONUNBUFFERED"], "0");
}

TEST(BuildRankEnvironment, ContractOverridesBaseAndJobEnvOverridesContract) {
  auto job = twoAgentJob();
  addEnv(job, "MASTER_PORT", "1234");
  addEnv(job, "NCCL_DEBUG", "INFO");
  addEnv(job, "TORCH_NCCL_ASYNC_ERROR_HANDLING", "0");
  const std::vector<std::string> base = {"HOME=/root", "RANK=99", "WORLD_SIZE=1",
                                         "NCCL_DEBUG=WARN"};
  auto env = asMap(buildRankEnvironment(job, rank3(), {}, base));
  EXPECT_EQ(env["HOME"], "/root");
  EXPECT_EQ(env["RANK"], "3");            // contract over base
  EXPECT_EQ(env["WORLD_SIZE"], "4");      // contract over base
  EXPECT_EQ(env["MASTER_PORT"], "1234");  // job over contract
  EXPECT_EQ(env["NCCL_DEBUG"], "INFO");   // job over base
  EXPECT_EQ(env["TORCH_NCCL_ASYNC_ERROR_HANDLING"], "0");
}

TEST(BuildRankEnvironment, NoDuplicatesAndBaseOrderKept) {
  auto job = twoAgentJob();
  addEnv(job, "A", "job1");
  addEnv(job, "A", "job2");  // a later job entry wins too
  const std::vector<std::string> base = {"Z=1", "A=base", "Z=2", "B=x=y", "MALFORMED", "=nameless"};
  const auto env = buildRankEnvironment(job, rank3(), {}, base);
  std::set<std::string> names;
  for (const auto& entry : env) {
    EXPECT_TRUE(names.insert(entry.substr(0, entry.find('='))).second) << "duplicate " << entry;
  }
  // Replacement keeps the first position: Z, A, B lead in base order.
  ASSERT_GE(env.size(), 3u);
  EXPECT_EQ(env[0], "Z=2");
  EXPECT_EQ(env[1], "A=job2");
  EXPECT_EQ(env[2], "B=x=y");  // only the first '=' separates name and value
  EXPECT_EQ(names.count("MALFORMED"), 0u);
  EXPECT_EQ(names.count(""), 0u);
}

TEST(BuildRankEnvironment, DropsJobEnvNamesThatCannotBeExpressed) {
  auto job = twoAgentJob();
  addEnv(job, "", "empty");
  addEnv(job, "A=B", "c");
  const auto env = asMap(buildRankEnvironment(job, rank3(), {}, {}));
  EXPECT_EQ(env.count(""), 0u);
  EXPECT_EQ(env.count("A"), 0u);
}

// MASTER_PORT (and a tensorflow job's MASTER_PORT + rank) come from below the ephemeral range,
// where no outgoing connection takes them, and every port of the block can be bound.
TEST(ReserveFreePort, GivesABlockOfBindablePortsBelowTheEphemeralRange) {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  uint32_t ephemeral_low = 32768;
  range >> ephemeral_low;
  for (int run = 0; run < 5; ++run) {
    Result<uint32_t> first = reserveFreePort(4);
    ASSERT_TRUE(first.isOk()) << first.status().toString();
    EXPECT_GE(*first, 10000u);
    EXPECT_LT(*first + 3, ephemeral_low);
    for (uint32_t port = *first; port < *first + 4; ++port) {
      int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_port = htons(static_cast<uint16_t>(port));
      EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0) << port;
      ::close(fd);
    }
  }
}

}  // namespace
}  // namespace ringmaster::agent
