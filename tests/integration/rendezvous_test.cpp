// The per-job rendezvous store on rank 0's agent, used by ranks on two agents with the job's own
// credential (what native workers bootstrap Gloo and NCCL from).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace ringmaster::testing {
namespace {

using nlohmann::json;

TEST(Rendezvous, RanksOnTwoAgentsShareTheJobStoreAndTheCredentialOpensNothingElse) {
  Cluster cluster;
  std::string error;
  ASSERT_TRUE(cluster.addAgent("a1", 2, &error)) << error;
  ASSERT_TRUE(cluster.addAgent("a2", 2, &error)) << error;
  auto spec = cluster.writeSpec("rdzv.yaml", "name: rdzv\nlauncher: command\ncommand: [" +
                                                 binPath("rendezvous_probe") +
                                                 "]\nplacement: [{agent: a1, ranks: 1}, "
                                                 "{agent: a2, ranks: 2}]\n");
  auto submitted = cluster.ctl({"submit", spec, "--wait"}, 60000);
  const std::string job = submitted.firstLine();
  ASSERT_EQ(submitted.exit_code, 0)
      << submitted.out << submitted.err << cluster.ctl({"logs", job}).out;
  auto metrics = json::parse(cluster.ctl({"metrics", job, "--format", "json"}).out);
  ASSERT_EQ(metrics.size(), 9u);  // 3 ranks x 3 values
  for (const auto& m : metrics) EXPECT_EQ(m["value"], 1.0) << m.dump();
}

}  // namespace
}  // namespace ringmaster::testing
