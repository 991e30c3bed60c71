// native.strategy.parameter_server end to end: resources/jobs/strategies/parameter_server_sync
// and parameter_server_async (on digits as strategySpec rewrites them for the test suite, 3 workers
// and 1 server) trained by ringmaster-worker ranks on
// two real agents, metrics through the agents into SQLite. Each job must succeed and reach the
// issue's 0.93 held-out accuracy; the workers end with identical parameters; every rank reports
// its role (rank 3 the server) and the bytes it sent and received every step, exactly what the
// messages hold; async pushes report their staleness, and exactly those staler than
// max_staleness are refused. Prints each job's accuracy, bytes per step and refusals.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "harness.h"

namespace ringmaster::testing {
namespace {

using nlohmann::json;

// The digits MLP 64-128-64-10 has 17226 float32 parameters, all on the one server. A push is a
// 24-byte header and the gradient, a reply a 40-byte header and the parameters.
constexpr double kPushBytes = 24 + 4 * 17226.0;
constexpr double kReplyBytes = 40 + 4 * 17226.0;
constexpr int kWorkers = 3;
constexpr int kServerRank = 3;
constexpr double kMaxStaleness = 4;  // parameter_server_async.yaml

class ParameterServerJobTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(cluster_.addAgent("a1", 2, &error)) << error;
    ASSERT_TRUE(cluster_.addAgent("a2", 2, &error)) << error;
  }
  json metric(const std::string& job, const std::string& name) {
    return json::parse(cluster_.ctl({"metrics", job, "--name", name, "--format", "json"}).out);
  }
  // rank -> step -> value
  std::map<int, std::map<int, double>> byRank(const std::string& job, const std::string& name) {
    std::map<int, std::map<int, double>> out;
    for (const auto& p : metric(job, name)) {
      out[p.value("rank", 0)][p["step"].get<int>()] = p["value"].get<double>();
    }
    return out;
  }
  Cluster cluster_;
};

TEST_P(ParameterServerJobTest, TrainsDigitsWithOneServerAndThreeWorkers) {
  const std::string name = GetParam();
  const bool async = name == "parameter_server_async";
  const std::string spec = strategySpec(name);
  ASSERT_FALSE(spec.empty()) << name;
  auto submitted =
      cluster_.ctl({"submit", cluster_.writeSpec(name + ".yaml", spec), "--wait"}, 240000);
  const std::string job = submitted.firstLine();
  ASSERT_EQ(submitted.exit_code, 0)
      << submitted.out << submitted.err << cluster_.ctl({"logs", job}).out;

  // The workers end on the same parameters (async: the servers' final ones); the server reports
  // no checksum of its own. Sync workers take the spec's 210 steps each (10 epochs of 21);
  // async ones share the 630 pushes the server takes, each as many as it got to, plus the push
  // answered with done.
  json checksums = metric(job, "param_checksum");
  ASSERT_EQ(checksums.size(), static_cast<size_t>(kWorkers)) << checksums.dump();
  std::set<double> distinct;
  std::map<int, int> last_step;  // worker -> its last step
  int worker_steps = 0;
  for (const auto& c : checksums) {
    const int rank = c.value("rank", 0);
    EXPECT_LT(rank, kServerRank);
    distinct.insert(c["value"].get<double>());
    last_step[rank] = c["step"].get<int>();
    worker_steps += last_step[rank];
  }
  EXPECT_EQ(distinct.size(), 1u) << "workers end with different parameters: " << checksums.dump();
  if (async) {
    EXPECT_EQ(worker_steps, kWorkers * 210 + kWorkers);
  } else {
    for (const auto& [rank, steps] : last_step) EXPECT_EQ(steps, 210) << rank;
  }

  const auto accuracy = byRank(job, "accuracy");
  ASSERT_EQ(accuracy.size(), static_cast<size_t>(kWorkers)) << "only workers evaluate";
  const double final_accuracy = accuracy.at(0).at(last_step.at(0));
  for (int w = 0; w < kWorkers; ++w) {
    EXPECT_EQ(accuracy.at(w).at(last_step.at(w)), final_accuracy) << w;
  }
  EXPECT_GE(final_accuracy, 0.93) << name;

  // Roles, every step.
  const auto roles = byRank(job, "ps_role");
  ASSERT_EQ(roles.size(), 4u);
  for (const auto& [rank, values] : roles) {
    if (rank < kServerRank) {
      EXPECT_EQ(values.size(), static_cast<size_t>(last_step.at(rank))) << rank;
    }
    for (const auto& [step, role] : values) {
      ASSERT_EQ(role, rank == kServerRank ? 2.0 : 1.0) << "rank " << rank << " step " << step;
    }
  }

  // Bytes: a worker pushes one gradient and pulls one model a step (async: its last step also
  // pulls the final parameters). Sync's server takes three pushes and sends three replies a step;
  // async's reports every three pushes it answered, and over the run it sent a reply to each
  // push and the final parameters to each worker.
  const auto sent = byRank(job, "bytes_sent");
  const auto received = byRank(job, "bytes_received");
  for (int w = 0; w < kWorkers; ++w) {
    ASSERT_EQ(sent.at(w).size(), static_cast<size_t>(last_step.at(w))) << w;
    for (const auto& [step, bytes] : sent.at(w)) {
      const int replies = async && step == last_step.at(w) ? 2 : 1;
      ASSERT_EQ(bytes, kPushBytes) << w << " step " << step;
      ASSERT_EQ(received.at(w).at(step), replies * kReplyBytes) << w << " step " << step;
    }
  }
  double server_sent = 0, server_received = 0;
  for (const auto& [step, bytes] : sent.at(kServerRank)) {
    if (!async) {
      ASSERT_EQ(bytes, kWorkers * kReplyBytes) << step;
      ASSERT_EQ(received.at(kServerRank).at(step), kWorkers * kPushBytes) << step;
    }
    server_sent += bytes;
    server_received += received.at(kServerRank).at(step);
  }
  EXPECT_EQ(server_sent, (worker_steps + (async ? kWorkers : 0)) * kReplyBytes);
  EXPECT_EQ(server_received, worker_steps * kPushBytes);

  // Staleness: async only; a push is refused exactly when it is staler than max_staleness.
  const auto staleness = byRank(job, "staleness");
  const auto refused = byRank(job, "refused");
  int refusals = 0;
  double worst = 0;
  if (!async) {
    EXPECT_TRUE(staleness.empty());
    EXPECT_TRUE(refused.empty());
  } else {
    ASSERT_EQ(staleness.size(), 4u);
    for (int w = 0; w < kWorkers; ++w) {
      ASSERT_EQ(staleness.at(w).size(), static_cast<size_t>(last_step.at(w))) << w;
      for (const auto& [step, value] : staleness.at(w)) {
        const double refusal = refused.at(w).at(step);
        EXPECT_EQ(refusal > 0, value > kMaxStaleness) << "worker " << w << " step " << step;
        if (refusal == 0) worst = std::max(worst, value);
        refusals += static_cast<int>(refusal);
      }
    }
    EXPECT_LE(worst, kMaxStaleness);
    double server_refusals = 0;
    for (const auto& [step, value] : refused.at(kServerRank)) server_refusals += value;
    EXPECT_EQ(server_refusals, refusals) << "the server counts the refusals the workers were told";
  }

  double step_time = 0.0;
  const json step_times = metric(job, "step_time");
  for (const auto& t : step_times) {
    if (t.value("rank", 0) < kServerRank) step_time += t["value"].get<double>();
  }
  std::string steps_text;
  for (const auto& [rank, steps] : last_step) steps_text += " " + std::to_string(steps);
  std::printf(
      "[parameter_server] %-24s worker steps%s  final accuracy %.4f  per step: worker sends "
      "%.0f, receives %.0f bytes; server sends %.0f, receives %.0f  worst accepted staleness "
      "%.0f, refused pushes %d  mean worker step_time %.3f ms\n",
      name.c_str(), steps_text.c_str(), final_accuracy, kPushBytes, kReplyBytes,
      kWorkers * kReplyBytes, kWorkers * kPushBytes, worst, refusals,
      1e3 * step_time / worker_steps);
  std::string curve;
  for (const auto& [step, value] : accuracy.at(0)) {
    char point[32];
    std::snprintf(point, sizeof point, " %d:%.3f", step, value);
    curve += point;
  }
  std::printf("[parameter_server] %-24s accuracy by step (rank 0):%s\n", name.c_str(),
              curve.c_str());
}

// Two servers of half the parameters each (8613 values), serving two async workers: pushes go
// server by server, and each server takes them from whichever worker comes first.
TEST_F(ParameterServerJobTest, TwoAsyncServersShareTheParameters) {
  std::string spec = strategySpec("parameter_server_async");
  const std::string one = "servers: 1, mode: async";
  ASSERT_NE(spec.find(one), std::string::npos);
  spec.replace(spec.find(one), one.size(), "servers: 2, mode: async");
  auto submitted =
      cluster_.ctl({"submit", cluster_.writeSpec("two_servers.yaml", spec), "--wait"}, 240000);
  const std::string job = submitted.firstLine();
  ASSERT_EQ(submitted.exit_code, 0)
      << submitted.out << submitted.err << cluster_.ctl({"logs", job}).out;

  json checksums = metric(job, "param_checksum");
  ASSERT_EQ(checksums.size(), 2u) << checksums.dump();
  EXPECT_EQ(checksums[0]["value"], checksums[1]["value"]);
  // Server 0 takes 10 epochs of 1617 / (2 x 26) batches from each of the 2 workers, 640 pushes;
  // each worker's done push is one step more.
  std::map<int, int> last_step;
  for (const auto& c : checksums) last_step[c.value("rank", 0)] = c["step"].get<int>();
  EXPECT_EQ(last_step.at(0) + last_step.at(1), 640 + 2);
  const auto roles = byRank(job, "ps_role");
  ASSERT_EQ(roles.size(), 4u);
  for (int rank = 0; rank < 4; ++rank) EXPECT_EQ(roles.at(rank).at(1), rank < 2 ? 1.0 : 2.0);
  // A worker pushes 2 shards of 8613 gradients (and a header each) a step.
  const auto sent = byRank(job, "bytes_sent");
  EXPECT_EQ(sent.at(0).at(1), 2 * (24 + 4 * 8613.0));
  EXPECT_EQ(sent.at(2).at(1), 2 * (40 + 4 * 8613.0));  // a server: one reply to each worker
  const auto accuracy = byRank(job, "accuracy");
  const double final_accuracy = accuracy.at(0).at(last_step.at(0));
  EXPECT_EQ(accuracy.at(1).at(last_step.at(1)), final_accuracy);
  EXPECT_GE(final_accuracy, 0.93);
  std::printf(
      "[parameter_server] two async servers, 2 workers (%d and %d steps): final "
      "accuracy %.4f\n",
      last_step.at(0), last_step.at(1), final_accuracy);
}

// A parameter server needs a worker: as many servers as ranks is refused before anything runs,
// naming the field and its line.
TEST_F(ParameterServerJobTest, AsManyServersAsRanksIsRefusedAtSubmit) {
  std::string spec = strategySpec("parameter_server_sync");
  const std::string one = "servers: 1";
  spec.replace(spec.find(one), one.size(), "servers: 4");
  auto submitted = cluster_.ctl({"submit", cluster_.writeSpec("all_servers.yaml", spec)});
  EXPECT_EQ(submitted.exit_code, 2) << submitted.out << submitted.err;
  EXPECT_NE(submitted.err.find("native.strategy.parameter_server.servers (line 18): 4 servers "
                               "leave no worker among the job's 4 ranks; expected 1 to 3"),
            std::string::npos)
      << submitted.err;
}

INSTANTIATE_TEST_SUITE_P(Specs, ParameterServerJobTest,
                         ::testing::Values("parameter_server_sync", "parameter_server_async"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace ringmaster::testing
