// The dashboard's checkpoint economics (issue 39) for a running job, against a hand calculation:
// 4 GPUs on hosts a and b; a failed twice in 1,000 rank-hours of history, b never in 500; the job
// checkpoints every 200 steps, 10 minutes apart, and a write took at most 2 s and 3 s.
#include <gtest/gtest.h>

#include <QApplication>
#include <QDir>

#include "bridge/session_bridge.h"
#include "dashboard/dashboard_view.h"
#include "ringmaster/util/wall_clock.h"

namespace ringmaster::gui {
namespace {

proto::JournalRecord record(double time, const std::string& source) {
  proto::JournalRecord r;
  r.set_job("job-ckpt");
  r.set_attempt(1);
  r.set_time(time);
  r.set_source(source);
  return r;
}

AgentRecords agentRecords(const std::string& agent, int first_rank, double start) {
  AgentRecords out{agent, {}};
  proto::JournalRecord accepted = record(start, "agent:" + agent);
  accepted.mutable_job_accepted()->set_name("train");
  accepted.mutable_job_accepted()->set_launcher(proto::NATIVE);
  accepted.mutable_job_accepted()->set_world_size(4);
  for (int rank = first_rank; rank < first_rank + 2; ++rank) {
    accepted.mutable_job_accepted()->add_ranks()->set_rank(rank);
  }
  out.records.push_back(accepted);
  for (int rank = first_rank; rank < first_rank + 2; ++rank) {
    proto::JournalRecord started = record(start + 1, "rank:" + std::to_string(rank));
    started.mutable_rank_started()->set_rank(rank);
    started.mutable_rank_started()->set_device("GPU " + std::to_string(rank - first_rank) +
                                               " NVIDIA H100 80GB HBM3 (GPU-" + agent +
                                               std::to_string(rank) + ")");
    out.records.push_back(started);
  }
  return out;
}

proto::JournalRecord checkpoint(int rank, int64_t step, double time, double seconds) {
  proto::JournalRecord r = record(time, "rank:" + std::to_string(rank));
  auto* m = r.mutable_metric();
  m->set_rank(rank);
  m->set_step(step);
  auto* saved = m->add_values();
  saved->set_name(metrics::kCheckpointMetric);
  saved->set_value(1);
  auto* took = m->add_values();
  took->set_name(metrics::kCheckpointSecondsMetric);
  took->set_value(seconds);
  return r;
}

TEST(CheckpointLine, ARunningJobShowsWhatIsAtRiskAndTheIntervalThatLosesLeast) {
  SessionBridge bridge;  // no session: the view asks nothing of the history
  DashboardView view(&bridge, "job-ckpt", /*live=*/true);
  const double now = unixSeconds();

  client::JobSnapshot snapshot;  // what the history says of the hosts
  snapshot.job.job_id = "job-ckpt";
  snapshot.host_records = {{"a", 1000 * 3600.0, 2}, {"b", 500 * 3600.0, 0}};
  view.ingestSnapshot(snapshot);

  std::vector<AgentRecords> batch = {agentRecords("a", 0, now - 1500),
                                     agentRecords("b", 2, now - 1500)};
  for (int rank = 0; rank < 4; ++rank) {
    AgentRecords& agent = batch[static_cast<size_t>(rank / 2)];
    agent.records.push_back(checkpoint(rank, 200, now - 900, rank == 0 ? 2.0 : 1.0));
    agent.records.push_back(checkpoint(rank, 400, now - 300, rank == 3 ? 3.0 : 0.5));
  }
  view.ingest(batch);
  view.refreshNow();

  // At risk: 4 GPUs x 300 s = 0.33 GPU-hours. Cost: the median of the writes' slowest ranks
  // (2 s and 3 s: the upper one, 3 s). The job's failure rate: 2 ranks on a x 2/1000 per hour =
  // 0.004/h, an MTBF of 250 h. Daly: sqrt(2 x 3 s x 900,000 s) = 2323.8 s (Young's) x (1 +
  // sqrt(3 / 1,800,000) / 3 + ...) - 3 s = 2321.8 s (38.7 min), 774 steps of 3 s. Lost a day: 4 x
  // 24 x (1 - 600 / (900,000 x (e^(603 / 900,000) - 1))) = 0.51 GPU-hours at every 10 minutes,
  // 0.25 at Daly's interval (Young's first order: 4 x 24 x (3/600 + 600/1,800,000) = 0.51).
  EXPECT_EQ(view.checkpointText().toStdString(),
            "0.33 GPU-hours at risk (5.0 min since the last checkpoint, 4 GPUs); a checkpoint "
            "stops training for 3 s; these hosts fail once every 250.0 h of this job; your "
            "interval (every "
            "10.0 min) wastes about 0.51 GPU-hours a day; every 774 steps (38.7 min) would waste "
            "0.25");
  view.resize(1280, 720);
  const std::string dir = std::string(RM_BIN_DIR) + "/../screenshots";
  QDir().mkpath(QString::fromStdString(dir));
  EXPECT_TRUE(
      view.grab(QRect(0, 0, 1280, 150)).save(QString::fromStdString(dir + "/checkpoint_line.png")));

  // Over: nothing is at risk any more, and the line goes.
  AgentRecords end{"a", {}};
  proto::JournalRecord outcome = record(now, "agent:a");
  outcome.mutable_job_outcome()->set_state(proto::SUCCEEDED);
  outcome.mutable_job_outcome()->set_attempts(1);
  end.records.push_back(outcome);
  view.ingest({end});
  view.refreshNow();
  EXPECT_EQ(view.checkpointText(), "");
}

}  // namespace
}  // namespace ringmaster::gui
