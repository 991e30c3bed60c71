// A real PyTorch DDP job (gloo, init_method="env://") under the torchrun launcher, 2 ranks on 2
// agents: it must succeed, its loss must fall, and every rank must end with the same parameters.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace ringmaster::testing {
namespace {

using nlohmann::json;

TEST(TorchDdp, TrainsOnTwoAgentsUnderTorchrunLauncher) {
  if (runCommand({"/usr/bin/python3", "-c", "import torch.distributed"}).exit_code != 0) {
    GTEST_SKIP() << "python3-torch is not installed for /usr/bin/python3";
  }
  Cluster cluster;
  std::string error;
  ASSERT_TRUE(cluster.addAgent("a1", 1, &error)) << error;
  ASSERT_TRUE(cluster.addAgent("a2", 1, &error)) << error;
  auto spec = cluster.writeSpec(
      "ddp.yaml", "name: ddp\nlauncher: torchrun\nworkdir: " + sourcePath("resources") +
                      "\ncommand: [/usr/bin/python3, examples/ddp_train.py, --steps, \"80\"]\n"
                      "placement: [{agent: a1, ranks: 1}, {agent: a2, ranks: 1}]\n");
  auto submitted = cluster.ctl({"submit", spec, "--wait"}, 180000);
  const std::string job = submitted.firstLine();
  ASSERT_EQ(submitted.exit_code, 0)
      << submitted.out << submitted.err << cluster.ctl({"logs", job}).out;

  for (int rank = 0; rank < 2; ++rank) {
    auto result = cluster.ctl(
        {"metrics", job, "--rank", std::to_string(rank), "--name", "loss", "--format", "json"});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    json loss = json::parse(result.out);
    ASSERT_EQ(loss.size(), 80u);
    double first = 0, last = 0;
    for (int i = 0; i < 5; ++i) first += loss[i]["value"].get<double>() / 5;
    for (size_t i = loss.size() - 5; i < loss.size(); ++i)
      last += loss[i]["value"].get<double>() / 5;
    EXPECT_LT(last, first * 0.2) << "rank " << rank << " loss did not fall: " << first << " -> "
                                 << last;
    auto agree = json::parse(cluster
                                 .ctl({"metrics", job, "--rank", std::to_string(rank), "--name",
                                       "params_agree", "--format", "json"})
                                 .out);
    ASSERT_EQ(agree.size(), 1u);
    EXPECT_EQ(agree[0]["value"], 1.0);
  }
}

// torchrun's error file: PyTorch's @record writes the exception that ended a rank into
// TORCHELASTIC_ERROR_FILE (the launcher test script dies with KeyError without it), and that
// exception is the failure's root cause, as torchrun prints it. PWD is the rank's directory.
TEST(TorchDdp, AnExceptionRecordedByTorchIsTheRootCause) {
  if (runCommand({"/usr/bin/python3", "-c", "import torch.distributed"}).exit_code != 0) {
    GTEST_SKIP() << "python3-torch is not installed for /usr/bin/python3";
  }
  Cluster cluster;
  std::string error;
  ASSERT_TRUE(cluster.addAgent("a1", 1, &error)) << error;
  const std::string script =
      "import os\n"
      "from torch.distributed.elastic.multiprocessing.errors import record\n"
      "assert os.environ['PWD'] == os.getcwd(), (os.environ['PWD'], os.getcwd())\n"
      "assert os.environ['NCCL_ASYNC_ERROR_HANDLING'] == '1'\n"
      "@record\n"
      "def main():\n"
      "    raise ValueError('bad batch at step 12')\n"
      "main()\n";
  auto spec = cluster.writeSpec("raise.py", script);
  auto job_spec = cluster.writeSpec(
      "raise.yaml", "name: raise\nlauncher: command\ncommand: [/usr/bin/python3, " + spec +
                        "]\nplacement: [{agent: a1, ranks: 1}]\n");
  auto submitted = cluster.ctl({"submit", job_spec, "--wait"}, 120000);
  EXPECT_NE(submitted.exit_code, 0);
  EXPECT_NE(submitted.out.find("ValueError: bad batch at step 12"), std::string::npos)
      << submitted.out << submitted.err;
  EXPECT_EQ(submitted.out.find("AssertionError"), std::string::npos) << submitted.out;
  auto status = cluster.ctl({"status", submitted.firstLine()});
  EXPECT_NE(status.out.find("ValueError: bad batch at step 12"), std::string::npos) << status.out;
}

}  // namespace
}  // namespace ringmaster::testing
