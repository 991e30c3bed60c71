// native.strategy.pipeline end to end: resources/jobs/strategies/pipeline.yaml (2 stages, 1
// replica) and pipeline_hybrid.yaml (2 stages x 2 replicas), on digits as strategySpec rewrites
// them for the test suite, trained by ringmaster-worker ranks on
// two real agents, metrics through the agents into SQLite. Each job must succeed and reach 0.93
// held-out accuracy (reported by the last stage only); the ranks of one stage end with the same
// parameters; every rank reports its stage, bytes sent and received and its bubble every step,
// with the byte counts the spec implies. Prints the accuracy, bytes and the measured bubble next
// to the GPipe formula.
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

struct Expected {
  const char* spec;
  int world;
  int stages;
  int batch;  // per replica
};

class PipelineJobTest : public ::testing::TestWithParam<Expected> {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(cluster_.addAgent("a1", 2, &error)) << error;
    ASSERT_TRUE(cluster_.addAgent("a2", 2, &error)) << error;
  }
  json metric(const std::string& job, const std::string& name) {
    return json::parse(cluster_.ctl({"metrics", job, "--name", name, "--format", "json"}).out);
  }
  Cluster cluster_;
};

class PipelineStopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(cluster_.addAgent("a1", 2, &error)) << error;
    ASSERT_TRUE(cluster_.addAgent("a2", 2, &error)) << error;
  }
  Cluster cluster_;
};

TEST_P(PipelineJobTest, TrainsDigitsThroughRealAgentsToItsAccuracy) {
  const Expected e = GetParam();
  const std::string name = e.spec;
  const std::string spec = strategySpec(name);
  ASSERT_FALSE(spec.empty()) << name;
  auto submitted =
      cluster_.ctl({"submit", cluster_.writeSpec(name + ".yaml", spec), "--wait"}, 240000);
  const std::string job = submitted.firstLine();
  ASSERT_EQ(submitted.exit_code, 0)
      << submitted.out << submitted.err << cluster_.ctl({"logs", job}).out;

  // Rank r is stage r % stages of replica r / stages.
  std::map<int, int> stage_of;
  for (const auto& s : metric(job, "pipeline_stage")) {
    stage_of[s["rank"].get<int>()] = static_cast<int>(s["value"].get<double>());
  }
  ASSERT_EQ(stage_of.size(), static_cast<size_t>(e.world)) << name;
  for (const auto& [rank, stage] : stage_of) EXPECT_EQ(stage, rank % e.stages) << rank;

  json checksums = metric(job, "param_checksum");
  ASSERT_EQ(checksums.size(), static_cast<size_t>(e.world));
  std::map<int, std::set<double>> per_stage;
  for (const auto& c : checksums) {
    per_stage[c["rank"].get<int>() % e.stages].insert(c["value"].get<double>());
  }
  for (const auto& [stage, distinct] : per_stage) {
    EXPECT_EQ(distinct.size(), 1u) << "stage " << stage << "'s replicas end apart";
  }
  const int steps = checksums[0]["step"].get<int>();

  // Loss and accuracy come from the last stage of each replica only.
  double final_accuracy = 0.0;
  std::set<int> reporting;
  std::string curve;
  for (const auto& a : metric(job, "accuracy")) {
    reporting.insert(a["rank"].get<int>());
    if (a["step"].get<int>() == steps) final_accuracy = a["value"].get<double>();
    if (a["rank"].get<int>() == e.stages - 1) {
      char point[32];
      std::snprintf(point, sizeof point, " %d:%.3f", a["step"].get<int>(),
                    a["value"].get<double>());
      curve += point;
    }
  }
  for (int rank : reporting) EXPECT_EQ(rank % e.stages, e.stages - 1) << rank;
  EXPECT_EQ(reporting.size(), static_cast<size_t>(e.world / e.stages));
  EXPECT_GE(final_accuracy, 0.93) << name;
  for (const auto& l : metric(job, "loss")) {
    EXPECT_EQ(l["rank"].get<int>() % e.stages, e.stages - 1);
  }

  // Bytes: stage 0 sends activations (128 floats a sample) and receives gradients of the same
  // size; with replicas, each stage's ring allreduce adds its share both ways. Every step but an
  // epoch's short last one carries a full batch.
  const int replicas = e.world / e.stages;
  const double activations = 128.0 * 4 * e.batch;
  const double ring = replicas > 1 ? 2.0 * (replicas - 1) / replicas * 4 : 0.0;
  const double stage_params[] = {8320.0, 8906.0};
  json sent = metric(job, "bytes_sent");
  json received = metric(job, "bytes_received");
  ASSERT_EQ(sent.size(), static_cast<size_t>(e.world * steps));
  ASSERT_EQ(received.size(), sent.size());
  double per_step = 0.0;
  for (const auto& b : sent) {
    if (b["step"].get<int>() != 1) continue;
    const int stage = b["rank"].get<int>() % e.stages;
    EXPECT_DOUBLE_EQ(b["value"].get<double>(), activations + ring * stage_params[stage])
        << b.dump();
    per_step += b["value"].get<double>() / e.world;
  }
  for (const auto& b : received) {
    if (b["step"].get<int>() != 1) continue;
    const int stage = b["rank"].get<int>() % e.stages;
    EXPECT_DOUBLE_EQ(b["value"].get<double>(), activations + ring * stage_params[stage])
        << b.dump();
  }

  json bubble = metric(job, "bubble_fraction");
  ASSERT_EQ(bubble.size(), static_cast<size_t>(e.world * steps));
  double bubble_sum = 0.0;
  for (const auto& b : bubble) {
    const double v = b["value"].get<double>();
    EXPECT_GE(v, 0.0);
    EXPECT_LE(v, 1.0);
    bubble_sum += v;
  }
  double step_time = 0.0;
  const json step_times = metric(job, "step_time");
  for (const auto& t : step_times) step_time += t["value"].get<double>();
  std::printf(
      "[pipeline] %-16s steps %d  final accuracy %.4f  bytes_sent/step/rank %.0f  mean "
      "step_time %.3f ms  bubble_fraction %.3f (GPipe formula %.3f; digits stages are "
      "latency-bound, see pipeline_worker_test for compute-bound stages)\n",
      name.c_str(), steps, final_accuracy, per_step,
      1e3 * step_time / static_cast<double>(step_times.size()),
      bubble_sum / static_cast<double>(bubble.size()), 1.0 / (4 + 1));
  double bubble_time = 0.0;
  double comm_time = 0.0;
  for (const auto& t : metric(job, "bubble_time")) bubble_time += t["value"].get<double>();
  for (const auto& t : metric(job, "comm_time")) comm_time += t["value"].get<double>();
  const double n = static_cast<double>(step_times.size());
  std::printf("[pipeline] %-16s per step: bubble_time %.3f ms, replicas' allreduce %.3f ms\n",
              name.c_str(), 1e3 * bubble_time / n, 1e3 * (comm_time - bubble_time) / n);
  std::printf("[pipeline] %-16s accuracy by step (rank %d):%s\n", name.c_str(), e.stages - 1,
              curve.c_str());
}

// A stop (SIGTERM to every rank) while the stages exchange activations: the ranks vote as data-
// parallel ranks do, stop together at a step that is a multiple of the vote interval, checkpoint
// their stages there and end; none is left waiting for a peer's message. A restart resumes every
// rank from that step.
TEST_F(PipelineStopTest, AStoppedHybridPipelineEndsTogether) {
  std::string spec = strategySpec("pipeline_hybrid");
  spec.replace(spec.find("epochs: 10"), 10, "epochs: 100000");
  auto submitted = cluster_.ctl({"submit", cluster_.writeSpec("long.yaml", spec)});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string job = submitted.firstLine();
  ASSERT_TRUE(waitUntil(
      [&] {
        auto out = cluster_.ctl({"metrics", job, "--name", "bytes_sent", "--format", "json"}).out;
        return out.size() > 2 && json::parse(out).size() >= 4u * 30;
      },
      std::chrono::seconds(60)))
      << cluster_.ctl({"logs", job}).out;
  auto stopped = cluster_.ctl({"stop", job, "--wait"}, 60000);
  ASSERT_EQ(stopped.exit_code, 0) << stopped.out << stopped.err;
  const json status = json::parse(cluster_.ctl({"status", job, "--json"}).out);
  EXPECT_EQ(status.value("state", ""), "stopped") << status.dump();
  const std::string logs = cluster_.ctl({"logs", job}).out;
  std::set<std::string> steps;  // "stopped at step N" of every rank
  for (size_t at = logs.find("stopped at step "); at != std::string::npos;
       at = logs.find("stopped at step ", at + 1)) {
    const size_t start = at + 16;
    steps.insert(logs.substr(start, logs.find_first_not_of("0123456789", start) - start));
  }
  ASSERT_EQ(steps.size(), 1u) << logs;
  EXPECT_EQ(std::stoll(*steps.begin()) % 10, 0) << logs;
  size_t ranks = 0;
  for (size_t at = logs.find("stopped at step"); at != std::string::npos;
       at = logs.find("stopped at step", at + 1)) {
    ++ranks;
  }
  EXPECT_EQ(ranks, 4u) << logs;
  std::printf("[pipeline] stopped: all 4 ranks at step %s\n", steps.begin()->c_str());

  // Each rank checkpointed its stage there; a restart continues from that step on every rank.
  auto restarted = cluster_.ctl({"restart", job});
  ASSERT_EQ(restarted.exit_code, 0) << restarted.err << restarted.out;
  const std::string resumed = "(step " + *steps.begin() + ")";
  EXPECT_TRUE(waitUntil(
      [&] {
        const std::string now = cluster_.ctl({"logs", job}).out;
        size_t count = 0;
        for (size_t at = now.find(resumed); at != std::string::npos;
             at = now.find(resumed, at + 1)) {
          ++count;
        }
        return count == 4;
      },
      std::chrono::seconds(60)))
      << cluster_.ctl({"logs", job}).out;
  cluster_.ctl({"stop", job, "--wait"}, 60000);
}

INSTANTIATE_TEST_SUITE_P(Specs, PipelineJobTest,
                         ::testing::Values(Expected{"pipeline", 2, 2, 104},
                                           Expected{"pipeline_hybrid", 4, 2, 52}),
                         [](const auto& info) { return std::string(info.param.spec); });

}  // namespace
}  // namespace ringmaster::testing
