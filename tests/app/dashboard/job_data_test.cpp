// JobData: a dashboard's state from journal records and history snapshots.
#include "dashboard/job_data.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <set>

#include "dashboard/rank_table_model.h"

namespace ringmaster::gui {
namespace {

constexpr const char* kJob = "job-1";

proto::JournalRecord base(uint64_t seq, double time, const std::string& source) {
  proto::JournalRecord r;
  r.set_job(kJob);
  r.set_attempt(1);
  r.set_seq(seq);
  r.set_time(time);
  r.set_source(source);
  return r;
}

proto::JournalRecord accepted(int world_size, int first_rank, int ranks) {
  proto::JournalRecord r = base(1, 100, "agent:a");
  auto* a = r.mutable_job_accepted();
  a->set_name("train");
  a->set_launcher(proto::NATIVE);
  a->set_world_size(world_size);
  for (int i = 0; i < ranks; ++i) {
    auto* assignment = a->add_ranks();
    assignment->set_rank(first_rank + i);
    assignment->set_local_rank(i);
  }
  return r;
}

proto::JournalRecord metric(uint64_t seq, int rank, int64_t step, double step_time,
                            double comm_wait) {
  proto::JournalRecord r =
      base(seq, 100 + static_cast<double>(step) * 0.01, "rank:" + std::to_string(rank));
  auto* m = r.mutable_metric();
  m->set_rank(rank);
  m->set_step(step);
  auto add = [&](const char* name, double value) {
    auto* v = m->add_values();
    v->set_name(name);
    v->set_value(value);
  };
  add("loss", 1.0 / static_cast<double>(step + 1));
  add("samples_per_sec", 1000.0 + rank);
  add("step_time", step_time);
  add("comm_wait", comm_wait);
  return r;
}

proto::JournalRecord exited(uint64_t seq, int rank, proto::RankState state, int code) {
  proto::JournalRecord r = base(seq, 200, "rank:" + std::to_string(rank));
  auto* e = r.mutable_rank_exited();
  e->set_rank(rank);
  e->set_state(state);
  e->set_exit_code(code);
  e->add_tail("rank " + std::to_string(rank) + " said goodbye");
  return r;
}

proto::JournalRecord decision(uint64_t seq, proto::JobDecision::Next next, uint32_t restarts_left) {
  proto::JournalRecord r = base(seq, 201, "agent:a");
  r.mutable_job_decision()->set_next(next);
  r.mutable_job_decision()->set_restarts_left(restarts_left);
  return r;
}

TEST(JobData, IngestsAFloodOfSamplesKeepingEveryPoint) {
  JobData job(kJob);
  job.ingest("a", accepted(8, 0, 8));
  const int steps = 125000;  // 8 ranks: 10^6 records, 4 * 10^6 values
  const auto start = std::chrono::steady_clock::now();
  uint64_t seq = 2;
  for (int64_t step = 0; step < steps; ++step) {
    for (int rank = 0; rank < 8; ++rank) job.ingest("a", metric(seq++, rank, step, 0.02, 0.005));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("ingested 10^6 records in %.2f s (%.0f records/s)\n", seconds, 1e6 / seconds);
  const auto* loss = job.metric("loss");
  ASSERT_NE(loss, nullptr);
  for (int rank = 0; rank < 8; ++rank) EXPECT_EQ(loss->at(rank).size(), static_cast<size_t>(steps));
  // The job total: one point per step once every rank reported it, the sum of the ranks.
  const auto& total = job.metric("samples_per_sec")->at(kJobTotal);
  ASSERT_EQ(total.size(), static_cast<size_t>(steps));
  EXPECT_DOUBLE_EQ(total.back().value, 8 * 1000.0 + 28);
  // Busy time = step time - time waiting in collectives.
  EXPECT_NEAR(job.metric(kBusyTime)->at(3).back().value, 0.015, 1e-12);
  EXPECT_EQ(job.maxStep(), steps - 1);
  EXPECT_EQ(job.ranks().at(5).step, steps - 1);
  EXPECT_EQ(job.points(), static_cast<uint64_t>(steps) * 8 * 5);
}

TEST(JobData, NamesTheFirstFailureAndDerivesTheState) {
  JobData job(kJob);
  job.ingest("a", accepted(2, 0, 2));
  EXPECT_EQ(job.state(), "submitted");
  proto::JournalRecord started = base(2, 101, "rank:0");
  started.mutable_rank_started()->set_rank(0);
  started.mutable_rank_started()->set_pid(42);
  job.ingest("a", started);
  EXPECT_EQ(job.state(), "running");
  EXPECT_FALSE(job.finished());
  job.ingest("a", exited(3, 1, proto::FAILED, 3));
  EXPECT_EQ(job.state(), "running") << "the leader decides, not the dashboard";
  job.ingest("a", decision(4, proto::JobDecision::FAIL, 0));
  job.ingest("a", exited(5, 0, proto::STOPPED, 0));
  EXPECT_EQ(job.state(), "failed");
  EXPECT_TRUE(job.finished());
  auto problem = job.firstProblem();
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->rank, 1);
  EXPECT_NE(problem->detail.find("exit code 3"), std::string::npos) << problem->detail;
  EXPECT_EQ(job.ranks().at(1).exit_code, 3);
  EXPECT_EQ(job.ranks().at(1).log_tail, "rank 1 said goodbye\n");  // for its agent's downtime
  EXPECT_EQ(job.agents(), std::vector<std::string>{"a"});
}

// A rank fails with restarts left: the job is restarting from the leader's decision on, with
// the restarts it has left; with none left the leader decides it fails. Never predicted.
TEST(JobData, TheLeadersDecisionSaysRestartingOrFailed) {
  JobData job(kJob);
  proto::JournalRecord first = accepted(2, 0, 2);
  first.mutable_job_accepted()->set_max_restarts(1);
  job.ingest("a", first);
  job.ingest("a", exited(3, 1, proto::FAILED, 3));
  EXPECT_EQ(job.state(), "running");
  job.ingest("a", decision(4, proto::JobDecision::RESTART, 0));
  EXPECT_EQ(job.state(), "restarting");
  EXPECT_EQ(job.model().restartsLeft(), 0u);

  proto::JournalRecord second = first;
  second.set_attempt(2);
  second.set_seq(5);
  job.ingest("a", second);
  EXPECT_EQ(job.state(), "restarting");
  proto::JournalRecord again = exited(6, 1, proto::FAILED, 3);
  again.set_attempt(2);
  job.ingest("a", again);
  proto::JournalRecord fail = decision(7, proto::JobDecision::FAIL, 0);
  fail.set_attempt(2);
  job.ingest("a", fail);
  EXPECT_EQ(job.state(), "failed");
}

// Attempt 1 of 4 ranks on a and b fails, b is lost, attempt 2 runs ranks 0-1 on a alone.
TEST(JobData, FollowsAttemptsNamesTheRootCauseAndEndsOnTheLeadersWord) {
  JobData job(kJob);
  job.ingest("a", accepted(4, 0, 2));
  job.ingest("a", metric(2, 0, 5, 0.01, 0.001));
  job.ingest("a", exited(3, 1, proto::FAILED, 1));
  proto::JournalRecord failure = base(4, 201, "agent:a");
  failure.mutable_job_failure()->set_cause("agent b lost: not heard from for 4 s");
  failure.mutable_job_failure()->set_kind("agent_lost");
  failure.mutable_job_failure()->set_rank(-1);
  failure.mutable_job_failure()->set_agent("b");
  job.ingest("a", failure);
  proto::JournalRecord restart = base(5, 202, "agent:a");
  restart.mutable_job_restart()->set_next_attempt(2);
  restart.mutable_job_restart()->add_agents("a");
  restart.mutable_job_restart()->add_left_out("b");
  restart.mutable_job_restart()->set_world_size(2);
  job.ingest("a", restart);
  EXPECT_EQ(job.state(), "restarting");
  EXPECT_FALSE(job.finished());
  auto problem = job.firstProblem();
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->kind, "job_failure");
  EXPECT_EQ(problem->agent, "b");
  EXPECT_NE(problem->detail.find("attempt 1 failed: agent b lost"), std::string::npos);
  // Where the failure goes on the charts' step axis: the newest step reported by its time.
  EXPECT_EQ(job.stepAt(problem->time), 5.0);
  job.ingest("a", metric(9, 1, 9, 0.01, 0.001));  // step 9 at t = 100.09
  EXPECT_EQ(job.stepAt(100.07), 5.0);
  EXPECT_EQ(job.stepAt(problem->time), 9.0);
  EXPECT_FALSE(job.stepAt(99));

  proto::JournalRecord second = accepted(2, 0, 2);
  second.set_attempt(2);
  second.set_seq(6);
  job.ingest("a", second);
  EXPECT_EQ(job.attempt(), 2u);
  EXPECT_EQ(job.ranks().size(), 2u);  // ranks 2 and 3 went with b
  EXPECT_EQ(job.worldSize(), 2);
  proto::JournalRecord late = exited(7, 0, proto::STOPPED, 0);  // attempt 1, from a slow agent
  job.ingest("a", late);
  EXPECT_EQ(job.ranks().at(0).state, "pending");
  EXPECT_NE(job.state(), "stopped");

  proto::JournalRecord outcome = base(8, 300, "agent:a");
  outcome.set_attempt(2);
  outcome.mutable_job_outcome()->set_state(proto::SUCCEEDED);
  outcome.mutable_job_outcome()->set_attempts(2);
  job.ingest("a", outcome);
  EXPECT_EQ(job.state(), "succeeded");
  EXPECT_TRUE(job.finished());
}

TEST(JobData, EachRanksDeviceIsShownShortWithTheDetailInItsTooltip) {
  JobData job(kJob);
  job.ingest("a", accepted(2, 0, 2));
  const std::string gpu = "GPU 3 NVIDIA H100 80GB HBM3 (GPU-2c5e38d7-1e0c-dee8-8e4b-3a6faca7aec2)";
  const std::string cpu = "CPU: agent 'b' has 1 GPU for 2 ranks, so backend auto trains on the CPU";
  for (int rank : {0, 1}) {
    proto::JournalRecord started =
        base(2 + static_cast<uint64_t>(rank), 101, "rank:" + std::to_string(rank));
    started.mutable_rank_started()->set_rank(rank);
    started.mutable_rank_started()->set_device(rank == 0 ? gpu : cpu);
    job.ingest("a", started);
  }
  EXPECT_EQ(job.ranks().at(0).device, gpu);
  RankTableModel model;
  model.update(job, 0);
  const QModelIndex gpu_cell = model.index(0, RankTableModel::kDevice);
  EXPECT_EQ(model.data(gpu_cell, Qt::DisplayRole).toString(), "GPU 3 NVIDIA H100 80GB HBM3");
  EXPECT_EQ(model.data(gpu_cell, Qt::ToolTipRole).toString().toStdString(), gpu);
  const QModelIndex cpu_cell = model.index(1, RankTableModel::kDevice);
  EXPECT_EQ(model.data(cpu_cell, Qt::DisplayRole).toString(), "CPU");
  EXPECT_EQ(model.data(cpu_cell, Qt::ToolTipRole).toString().toStdString(), cpu);
}

TEST(JobData, ASnapshotAndTheLiveRecordsItOverlapsAreStoredOnce) {
  JobData job(kJob);
  client::JobSnapshot snapshot;
  snapshot.job.job_id = kJob;
  snapshot.job.name = "train";
  snapshot.job.world_size = 1;
  snapshot.job.attempt = 1;
  snapshot.job.state = "running";
  for (int64_t step = 0; step < 10; ++step) {
    for (const char* name : {"comm_wait", "loss", "step_time"}) {  // the store's order: by name
      store::MetricRow row;
      row.job_id = kJob;
      row.attempt = 1;
      row.rank = 0;
      row.step = step;
      row.name = name;
      row.value = std::string(name) == "step_time" ? 0.03 : 0.01;
      row.time = 100 + static_cast<double>(step) * 0.01;
      snapshot.metrics.push_back(row);
    }
  }
  store::EventRow event;
  event.job_id = kJob;
  event.attempt = 1;
  event.source = "agent:a";
  event.seq = 1;
  event.kind = "job_accepted";
  event.detail = "accepted by a: ranks 0 of 1";
  snapshot.events.push_back(event);
  job.ingestSnapshot(snapshot);
  ASSERT_EQ(job.metric("loss")->at(0).size(), 10u);
  EXPECT_EQ(job.metric(kBusyTime)->at(0).size(), 10u);
  // Live records replaying steps 5..14: only 10..14 are new; the accepted event is not.
  job.ingest("a", accepted(1, 0, 1));
  for (int64_t step = 5; step < 15; ++step)
    job.ingest("a", metric(100 + step, 0, step, 0.03, 0.01));
  EXPECT_EQ(job.metric("loss")->at(0).size(), 15u);
  EXPECT_EQ(job.metric(kBusyTime)->at(0).size(), 15u);
  EXPECT_EQ(job.events().size(), 1u);
  EXPECT_EQ(job.state(), "running");
}

proto::JournalRecord checkpointSaved(uint64_t seq, int rank, int64_t step) {
  proto::JournalRecord r = base(seq, 100 + static_cast<double>(step) * 0.01 + rank * 0.001,
                                "rank:" + std::to_string(rank));
  r.mutable_metric()->set_rank(rank);
  r.mutable_metric()->set_step(step);
  auto* v = r.mutable_metric()->add_values();
  v->set_name(metrics::kCheckpointMetric);
  v->set_value(1);
  return r;
}

// A "checkpoint" metric is an event, once per step whatever the number of ranks that saved it,
// live and from the history alike; it is never a chart.
TEST(JobData, ACheckpointIsOneEventPerStepAndNoChart) {
  JobData live(kJob);
  live.ingest("a", accepted(2, 0, 2));
  for (int64_t step : {10, 20}) {
    for (int rank : {0, 1}) live.ingest("a", checkpointSaved(10 * step + rank, rank, step));
  }
  EXPECT_EQ(live.metric(metrics::kCheckpointMetric), nullptr);
  std::vector<std::string> details;
  for (const JobEvent& e : live.events()) {
    if (e.kind == "checkpoint") details.push_back(e.detail);
  }
  EXPECT_EQ(details, (std::vector<std::string>{"step 10 saved", "step 20 saved"}));

  JobData reopened(kJob);
  client::JobSnapshot snapshot;
  snapshot.job.job_id = kJob;
  snapshot.job.world_size = 2;
  snapshot.job.attempt = 1;
  snapshot.job.state = "running";
  for (int rank : {0, 1}) {
    snapshot.metrics.push_back(
        store::MetricRow{kJob, 1, rank, 10, metrics::kCheckpointMetric, 1, 100.1});
  }
  reopened.ingestSnapshot(snapshot);
  ASSERT_EQ(reopened.events().size(), 1u);
  EXPECT_EQ(reopened.events()[0].kind, "checkpoint");
  EXPECT_NEAR(reopened.events()[0].time, 100.1, 1e-9);
  EXPECT_TRUE(reopened.metricNames().empty());
}

// The ranks' mean and min-max at each step every rank reported, live and from a snapshot alike.
TEST(JobData, TheSpreadAcrossRanksHasAPointForEachCompleteStep) {
  JobData live(kJob);
  live.ingest("a", accepted(3, 0, 3));
  for (int64_t step = 0; step < 4; ++step) {
    for (int rank = 0; rank < 3; ++rank) {
      if (step == 3 && rank == 2) continue;  // rank 2 has not reported step 3 yet
      live.ingest("a", metric(10 * step + rank + 2, rank, step, 0.01 * (rank + 1), 0));
    }
  }
  const RankSpread* spread = live.spread("step_time");
  ASSERT_NE(spread, nullptr);
  ASSERT_EQ(spread->mean.size(), 3u);
  EXPECT_NEAR(spread->mean.back().value, 0.02, 1e-12);
  EXPECT_NEAR(spread->min.back().value, 0.01, 1e-12);
  EXPECT_NEAR(spread->max.back().value, 0.03, 1e-12);
  EXPECT_EQ(live.spread("no such metric"), nullptr);

  JobData reopened(kJob);
  client::JobSnapshot snapshot;
  snapshot.job.job_id = kJob;
  snapshot.job.world_size = 3;
  snapshot.job.attempt = 1;
  snapshot.job.state = "running";
  for (int64_t step = 0; step < 4; ++step) {
    for (int rank = 0; rank < 3; ++rank) {
      if (step == 3 && rank == 2) continue;
      snapshot.metrics.push_back(
          store::MetricRow{kJob, 1, rank, step, "step_time", 0.01 * (rank + 1), 100.0 + step});
    }
  }
  reopened.ingestSnapshot(snapshot);
  const RankSpread* from_history = reopened.spread("step_time");
  ASSERT_NE(from_history, nullptr);
  EXPECT_EQ(from_history->mean.size(), 3u);
  EXPECT_NEAR(from_history->max.back().value, 0.03, 1e-12);
}

TEST(JobData, ClientEventsAreKeptOnceEach) {
  JobData job(kJob);
  JobEvent silent;
  silent.time = 150;
  silent.kind = "agent_silent";
  silent.agent = "a";
  silent.detail = "a not answering";
  const uint64_t before = job.version();
  job.addClientEvent(silent);
  job.addClientEvent(silent);
  EXPECT_GT(job.version(), before);
  ASSERT_EQ(job.events().size(), 1u);
  EXPECT_EQ(job.events()[0].detail, "a not answering");
  EXPECT_FALSE(job.firstProblem());  // what the client saw is not the job's failure
}

// Regression (issue 21): a reopened job had no job total before the reopen (the snapshot's
// points come rank by rank, and the live path's bounded per-step sums never completed).
TEST(JobData, ASnapshotRebuildsTheJobTotalOfEveryStep) {
  JobData job(kJob);
  client::JobSnapshot snapshot;
  snapshot.job.job_id = kJob;
  snapshot.job.world_size = 2;
  snapshot.job.attempt = 1;
  snapshot.job.state = "running";
  const int64_t steps = 5000;  // more than the live path keeps pending
  for (int rank = 0; rank < 2; ++rank) {
    for (int64_t step = 0; step < steps; ++step) {
      store::MetricRow row;
      row.job_id = kJob;
      row.attempt = 1;
      row.rank = rank;
      row.step = step;
      row.name = "samples_per_sec";
      row.value = 100.0 + rank;
      row.time = 100 + static_cast<double>(step) * 0.01;
      snapshot.metrics.push_back(row);
    }
  }
  job.ingestSnapshot(snapshot);
  const auto& total = job.metric("samples_per_sec")->at(kJobTotal);
  ASSERT_EQ(total.size(), static_cast<size_t>(steps));
  EXPECT_DOUBLE_EQ(total.at(0).value, 201.0);
  EXPECT_DOUBLE_EQ(total.back().step, static_cast<double>(steps - 1));
}

// Opened after an elastic restart (4 ranks on a1 and a2, then 2 on a2): the rank rows are the
// newest attempt's, the lines of ranks 2 and 3 stay on the charts.
TEST(JobData, ASnapshotAfterAnElasticRestartHasTheNewestAttemptsRanksAndEveryLine) {
  JobData job(kJob);
  client::JobSnapshot snapshot;
  snapshot.job.job_id = kJob;
  snapshot.job.world_size = 2;
  snapshot.job.attempt = 2;
  snapshot.job.state = "running";
  for (int rank = 0; rank < 2; ++rank) {
    store::RankRow row;
    row.job_id = kJob;
    row.attempt = 2;
    row.rank = rank;
    row.agent = "a2";
    row.state = "running";
    snapshot.ranks.push_back(row);
  }
  auto addMetric = [&](uint32_t attempt, int rank, int64_t step) {
    store::MetricRow row;
    row.job_id = kJob;
    row.attempt = attempt;
    row.rank = rank;
    row.step = step;
    row.name = "loss";
    row.value = 1;
    row.time = 100 + static_cast<double>(step);
    snapshot.metrics.push_back(row);
  };
  for (int rank = 0; rank < 4; ++rank) addMetric(1, rank, 5);
  for (int rank = 0; rank < 2; ++rank) addMetric(2, rank, 8);
  store::EventRow failure;  // journaled by the leader, a1; the culprit is on a2
  failure.job_id = kJob;
  failure.attempt = 1;
  failure.source = "agent:a1";
  failure.agent = "a1";
  failure.kind = "job_failure";
  failure.time = 105.5;
  failure.detail = "attempt 1 failed: rank 3 on a2 was killed by signal 9 (SIGKILL) at step 5";
  failure.rank = 3;  // structured fields: nothing reads the detail text back
  failure.rank_agent = "a2";
  failure.problem = true;
  failure.signal = 9;
  failure.cause_kind = "signalled";
  snapshot.events.push_back(failure);
  job.ingestSnapshot(snapshot);
  auto problem = job.firstProblem();
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->rank, 3);
  EXPECT_EQ(problem->agent, "a2");
  EXPECT_EQ(problem->attempt, 1u);
  EXPECT_EQ(job.ranks().size(), 2u);
  EXPECT_EQ(job.ranks().at(1).agent, "a2");
  EXPECT_EQ(job.ranks().at(1).step, 8);
  EXPECT_EQ(job.metric("loss")->size(), 4u);
}

void expectSameSeries(const metrics::Series& a, const metrics::Series& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a.at(i).step, b.at(i).step) << what << " point " << i;
    ASSERT_EQ(a.at(i).time, b.at(i).time) << what << " point " << i;
    ASSERT_DOUBLE_EQ(a.at(i).value, b.at(i).value) << what << " point " << i;
  }
}

// Every line and band of two views of one job, the job total and busy time included.
void expectSameCharts(const JobData& a, const JobData& b) {
  const std::set<std::string> names(a.metricNames().begin(), a.metricNames().end());
  ASSERT_EQ(names, std::set<std::string>(b.metricNames().begin(), b.metricNames().end()));
  for (const std::string& name : names) {
    const auto& lines = *a.metric(name);
    ASSERT_EQ(lines.size(), b.metric(name)->size()) << name;
    for (const auto& [rank, series] : lines) {
      expectSameSeries(series, b.metric(name)->at(rank), name + " of rank " + std::to_string(rank));
    }
    ASSERT_EQ(a.spread(name) == nullptr, b.spread(name) == nullptr) << name;
    if (!a.spread(name)) continue;
    expectSameSeries(a.spread(name)->mean, b.spread(name)->mean, name + " mean");
    expectSameSeries(a.spread(name)->min, b.spread(name)->min, name + " min");
    expectSameSeries(a.spread(name)->max, b.spread(name)->max, name + " max");
  }
  EXPECT_EQ(a.maxStep(), b.maxStep());
  ASSERT_EQ(a.ranks().size(), b.ranks().size());
  for (const auto& [rank, info] : a.ranks()) {
    EXPECT_EQ(info.step, b.ranks().at(rank).step) << rank;
    EXPECT_EQ(info.samples_per_sec, b.ranks().at(rank).samples_per_sec) << rank;
  }
  EXPECT_EQ(a.checkpoints().size(), b.checkpoints().size());
}

class JobDataHistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/rm_job_data_XXXXXX";
    dir_ = mkdtemp(pattern);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::unique_ptr<store::Reader> write(const std::vector<proto::JournalRecord>& records) {
    {
      auto writer = store::Writer::open(dir_ + "/history.db");
      EXPECT_TRUE(writer.isOk()) << writer.status().toString();
      const Status applied = (*writer)->applyJournal("a", "journal-a", records, records.size() + 1);
      EXPECT_TRUE(applied.isOk()) << applied.toString();
    }
    auto reader = store::Reader::open(dir_ + "/history.db");
    EXPECT_TRUE(reader.isOk()) << reader.status().toString();
    return reader.isOk() ? std::move(*reader) : nullptr;
  }
  std::string dir_;
};

// A past run read series by series off the GUI thread (JobData::fromHistory) draws what the same
// records drew live: every rank's lines, the ranks' spread, the job total, busy time.
TEST_F(JobDataHistoryTest, ARunReadFromTheHistoryDrawsWhatItsRecordsDrewLive) {
  std::vector<proto::JournalRecord> records = {accepted(3, 0, 3)};
  JobData live(kJob);
  for (int64_t step = 0; step < 300; ++step) {
    for (int rank = 0; rank < 3; ++rank) {
      if (step == 299 && rank == 2) continue;  // rank 2 never reported the last step
      records.push_back(metric(records.size() + 1, rank, step, 0.1 + 0.01 * rank, 0.02 * rank));
      if (step == 100) records.push_back(checkpointSaved(records.size() + 1, rank, step));
    }
  }
  for (const auto& record : records) live.ingest("a", record);
  auto history = write(records);
  ASSERT_NE(history, nullptr);
  auto read = JobData::fromHistory(*history, kJob);
  ASSERT_TRUE(read.isOk()) << read.status().toString();
  expectSameCharts(live, **read);
  ASSERT_NE((*read)->spread("loss"), nullptr);
  EXPECT_EQ((*read)->spread("loss")->mean.size(), 299u);  // the steps all three reported
  EXPECT_EQ((*read)->metric("samples_per_sec")->at(kJobTotal).size(), 299u);
  EXPECT_EQ((*read)->metric(kBusyTime)->size(), 3u);
  EXPECT_EQ((*read)->checkpoints().size(), 1u);
  EXPECT_EQ((*read)->state(), live.state());

  auto missing = JobData::fromHistory(*history, "no-such-job");
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound) << missing.status().toString();
}

// After a restart from a checkpoint the steps go back: read series by series, the job is what
// its whole snapshot made of it.
TEST_F(JobDataHistoryTest, ARestartedRunReadFromTheHistoryIsWhatItsSnapshotShows) {
  std::vector<proto::JournalRecord> records = {accepted(2, 0, 2)};
  for (int64_t step = 0; step < 300; ++step) {
    for (int rank = 0; rank < 2; ++rank) {
      records.push_back(metric(records.size() + 1, rank, step, 0.1, 0.01));
    }
  }
  proto::JournalRecord failure = base(records.size() + 1, 395, "agent:a");
  failure.mutable_job_failure()->set_cause("rank 1 exited with code 1");
  failure.mutable_job_failure()->set_kind("rank_failed");
  failure.mutable_job_failure()->set_rank(1);
  records.push_back(failure);
  proto::JournalRecord again = accepted(2, 0, 2);
  again.set_seq(records.size() + 1);
  again.set_attempt(2);
  again.set_time(400);
  records.push_back(again);
  for (int64_t step = 200; step < 400; ++step) {  // from the checkpoint at step 200
    for (int rank = 0; rank < 2; ++rank) {
      proto::JournalRecord r = metric(records.size() + 1, rank, step, 0.2, 0.01);
      r.set_attempt(2);
      r.set_time(400 + static_cast<double>(step) * 0.01);
      records.push_back(r);
    }
  }
  auto history = write(records);
  ASSERT_NE(history, nullptr);
  auto snapshot = client::loadJobSnapshot(*history, kJob);
  ASSERT_TRUE(snapshot.isOk()) << snapshot.status().toString();
  JobData whole(kJob);
  whole.ingestSnapshot(*snapshot);
  auto read = JobData::fromHistory(*history, kJob);
  ASSERT_TRUE(read.isOk()) << read.status().toString();
  expectSameCharts(whole, **read);
  EXPECT_EQ((*read)->attempt(), 2u);
  EXPECT_EQ((*read)->metric("loss")->at(0).size(), 500u);  // both attempts' points
  EXPECT_FALSE((*read)->metric("loss")->at(0).monotonic(metrics::Axis::kStep));
  EXPECT_EQ((*read)->ranks().at(1).step, 399);
  // The restart took from the failure (t = 395) to attempt 2's first step (t = 402), however
  // the job was read: live, from its snapshot, series by series.
  JobData live(kJob);
  for (const auto& record : records) live.ingest("a", record);
  EXPECT_DOUBLE_EQ(live.checkpointInputs(500).restart_seconds, 7);
  EXPECT_DOUBLE_EQ(whole.checkpointInputs(500).restart_seconds, 7);
  EXPECT_DOUBLE_EQ((*read)->checkpointInputs(500).restart_seconds, 7);
}

TEST(MeanRate, IsTheHarmonicMeanOfTheStepsInTheWindow) {
  metrics::Series rate;
  rate.append(1, 10, 100);  // a step of 1 s for 100 samples
  rate.append(2, 11, 300);  // a step of 1/3 s
  rate.append(3, 12, std::nan(""));
  rate.append(4, 13, 0);
  // 200 samples in 4/3 s: 150/s, not the 200 the mean of the rates says.
  EXPECT_DOUBLE_EQ(meanRate(rate), 150);
  EXPECT_DOUBLE_EQ(meanRate(rate, 11), 300);  // only the steps since t = 11
  EXPECT_TRUE(std::isnan(meanRate(metrics::Series{})));
}

}  // namespace
}  // namespace ringmaster::gui
