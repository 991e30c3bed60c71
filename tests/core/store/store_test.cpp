#include "ringmaster/store/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

namespace ringmaster::store {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Journal record builders

proto::JournalRecord record(uint64_t seq, const std::string& job, uint32_t attempt,
                            const std::string& source, double time) {
  proto::JournalRecord r;
  r.set_seq(seq);
  r.set_time(time);
  r.set_job(job);
  r.set_attempt(attempt);
  r.set_source(source);
  return r;
}

proto::JournalRecord accepted(uint64_t seq, const std::string& job, uint32_t attempt,
                              int world_size, const std::vector<int>& ranks,
                              const std::string& agent = "a1", double time = 100) {
  proto::JournalRecord r = record(seq, job, attempt, "agent:" + agent, time);
  auto* a = r.mutable_job_accepted();
  a->set_name("train-" + job);
  a->set_launcher(proto::TORCHRUN);
  a->set_world_size(world_size);
  a->set_agent(agent);
  a->set_spec_yaml("name: train\n");
  int local = 0;
  for (int rank : ranks) {
    auto* assignment = a->add_ranks();
    assignment->set_rank(rank);
    assignment->set_local_rank(local++);
  }
  return r;
}

proto::JournalRecord started(uint64_t seq, const std::string& job, uint32_t attempt, int rank,
                             double time = 101) {
  proto::JournalRecord r = record(seq, job, attempt, "rank:" + std::to_string(rank), time);
  auto* s = r.mutable_rank_started();
  s->set_rank(rank);
  s->set_local_rank(rank);
  s->set_pid(1000 + rank);
  return r;
}

proto::JournalRecord exited(uint64_t seq, const std::string& job, uint32_t attempt, int rank,
                            proto::RankState state, double time = 200) {
  proto::JournalRecord r = record(seq, job, attempt, "rank:" + std::to_string(rank), time);
  auto* e = r.mutable_rank_exited();
  e->set_rank(rank);
  e->set_state(state);
  e->set_exit_code(state == proto::FAILED ? 3 : 0);
  e->set_signal(state == proto::STOPPED ? 15 : 0);
  if (state == proto::FAILED) e->set_error("CUDA error: out of memory");
  return r;
}

proto::JournalRecord finished(uint64_t seq, const std::string& job, uint32_t attempt,
                              proto::RankState state, double time = 201) {
  proto::JournalRecord r = record(seq, job, attempt, "agent:a1", time);
  r.mutable_job_finished()->set_state(state);
  r.mutable_job_finished()->set_agent("a1");
  return r;
}

// The leader's final word (JobOutcome): only it makes a job succeeded, failed or stopped.
proto::JournalRecord outcome(uint64_t seq, const std::string& job, uint32_t attempt,
                             proto::RankState state, double time = 202) {
  proto::JournalRecord r = record(seq, job, attempt, "agent:a1", time);
  r.mutable_job_outcome()->set_state(state);
  r.mutable_job_outcome()->set_attempts(attempt);
  return r;
}

// The leader's decision the moment an attempt fails or is stopped (JobDecision).
proto::JournalRecord decision(uint64_t seq, const std::string& job, uint32_t attempt,
                              proto::JobDecision::Next next, uint32_t restarts_left = 0,
                              double time = 201) {
  proto::JournalRecord r = record(seq, job, attempt, "agent:a1", time);
  r.mutable_job_decision()->set_next(next);
  r.mutable_job_decision()->set_restarts_left(restarts_left);
  r.mutable_job_decision()->set_reason("rank 2 on a1 exited with code 3");
  return r;
}

proto::JournalRecord metric(uint64_t seq, const std::string& job, uint32_t attempt, int rank,
                            int64_t step, const std::vector<std::pair<std::string, double>>& values,
                            double time = 150) {
  proto::JournalRecord r = record(seq, job, attempt, "rank:" + std::to_string(rank), time);
  auto* m = r.mutable_metric();
  m->set_rank(rank);
  m->set_step(step);
  for (const auto& [name, value] : values) {
    auto* v = m->add_values();
    v->set_name(name);
    v->set_value(value);
  }
  return r;
}

proto::JournalRecord health(uint64_t seq, const std::string& agent, double cpu, double time) {
  proto::JournalRecord r = record(seq, "", 0, "host:" + agent, time);
  auto* h = r.mutable_health();
  h->set_cpu_percent(cpu);
  h->set_memory_used_bytes(1u << 30);
  h->set_memory_total_bytes(8ull << 30);
  h->set_load1(0.5);
  h->set_net_rx_bytes_per_s(10);
  h->set_net_tx_bytes_per_s(20);
  return r;
}

// ---------------------------------------------------------------------------------------------
// A raw SQLite connection, for checks and for setting up files the way older builds wrote them.

class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
    sqlite3_busy_timeout(db_, 5000);
  }
  ~RawDb() { sqlite3_close(db_); }
  void exec(const std::string& sql) {
    char* err = nullptr;
    ASSERT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK)
        << (err ? err : "") << " in: " << sql;
  }
  std::string text(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK);
    std::string out;
    if (sqlite3_step(stmt) == SQLITE_ROW) {
      const auto* t = sqlite3_column_text(stmt, 0);
      out = t ? reinterpret_cast<const char*>(t) : "";
    }
    sqlite3_finalize(stmt);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "ringmaster-store-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = (fs::path(dir_) / "history" / "history.db").string();
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::unique_ptr<Writer> open() {
    auto store = Writer::open(path_);
    EXPECT_TRUE(store.isOk()) << store.status().toString();
    return store.isOk() ? std::move(*store) : nullptr;
  }
  std::unique_ptr<Reader> openReader() {
    auto store = Reader::open(path_);
    EXPECT_TRUE(store.isOk()) << store.status().toString();
    return store.isOk() ? std::move(*store) : nullptr;
  }

  std::string dir_, path_;
};

#define ASSERT_OK(expr)                            \
  do {                                             \
    const ::ringmaster::Status rm_s_ = (expr);     \
    ASSERT_TRUE(rm_s_.isOk()) << rm_s_.toString(); \
  } while (0)

// ---------------------------------------------------------------------------------------------

TEST_F(StoreTest, OpenCreatesParentDirectoriesAndUsesWal) {
  auto store = open();
  ASSERT_TRUE(store);
  EXPECT_TRUE(fs::exists(path_));
  RawDb raw(path_);
  EXPECT_EQ(raw.text("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw.text("PRAGMA user_version"), std::to_string(Writer::schemaVersion()));
}

// The last connection to close leaves its commits in the WAL (no checkpoint and its fsyncs at
// the end of every ringmasterctl command); the next opener reads them from there.
TEST_F(StoreTest, ClosingLeavesTheWalAndTheNextOpenerReadsIt) {
  {
    auto store = open();
    ASSERT_TRUE(store);
    ASSERT_OK(store->recordSubmission({.job_id = "j1", .name = "train", .world_size = 2}));
  }
  std::error_code ec;
  EXPECT_GT(fs::file_size(path_ + "-wal", ec), 0u) << ec.message();
  auto reopened = open();
  ASSERT_TRUE(reopened);
  auto job = reopened->job("j1");
  ASSERT_TRUE(job.isOk()) << job.status().toString();
  EXPECT_EQ(job->name, "train");
  EXPECT_EQ(job->world_size, 2);
}

TEST_F(StoreTest, ApplyingTheSameBatchTwiceStoresEachMetricOnce) {
  auto store = open();
  std::vector<proto::JournalRecord> batch;
  for (uint64_t seq = 1; seq <= 100; ++seq) {
    batch.push_back(metric(seq, "j1", 1, 0, static_cast<int64_t>(seq), {{"loss", 1.0 / seq}}));
  }
  batch.push_back(metric(101, "j1", 1, 0, 101, {{"loss", 0.5}, {"lr", 0.1}}));
  ASSERT_OK(store->applyJournal("a1", "jid", batch, 102));
  ASSERT_OK(store->applyJournal("a1", "jid", batch, 102));
  EXPECT_EQ(*store->countMetrics(), 102);

  // A fresh object (empty series cache) replaying it also stores nothing new.
  store.reset();
  store = open();
  ASSERT_OK(store->applyJournal("a1", "jid", batch, 102));
  EXPECT_EQ(*store->countMetrics("j1"), 102);
  EXPECT_EQ(*store->countMetrics("other"), 0);
}

// Every launcher a job can have is named in its history row (the dashboard and ringmasterctl
// runs show that name): tensorflow and deepspeed were stored as "".
TEST_F(StoreTest, EveryLauncherIsNamedInTheHistory) {
  auto store = open();
  const std::vector<std::pair<proto::Launcher, std::string>> launchers = {
      {proto::NATIVE, "native"},
      {proto::TORCHRUN, "torchrun"},
      {proto::COMMAND, "command"},
      {proto::TENSORFLOW, "tensorflow"},
      {proto::DEEPSPEED, "deepspeed"}};
  uint64_t seq = 1;
  for (const auto& [launcher, name] : launchers) {
    proto::JournalRecord r = accepted(seq, "job-" + name, 1, 1, {0});
    r.mutable_job_accepted()->set_launcher(launcher);
    ASSERT_OK(store->applyJournal("a1", "jid", {r}, seq + 1));
    ++seq;
    auto job = store->job("job-" + name);
    ASSERT_OK(job.status());
    EXPECT_EQ(job->launcher, name);
  }
}

// The launch event says which Python ran a .py entry point on each agent.
TEST_F(StoreTest, TheLaunchEventNamesTheInterpreter) {
  auto store = open();
  proto::JournalRecord r = accepted(1, "py", 1, 1, {0});
  r.mutable_job_accepted()->set_interpreter("/usr/bin/python3 -> /usr/bin/python3.11, Python 3.11");
  ASSERT_OK(store->applyJournal("a1", "jid", {r}, 2));
  auto events = store->events("py");
  ASSERT_OK(events.status());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].detail,
            "accepted by a1: ranks 0 of 1; python: /usr/bin/python3 -> /usr/bin/python3.11, "
            "Python 3.11");
}

TEST_F(StoreTest, CursorIsOneWhenUnknownAndAdvancesWithRecords) {
  auto store = open();
  EXPECT_EQ(*store->cursor("a1", "jid"), 1u);
  ASSERT_OK(store->applyJournal("a1", "jid", {metric(1, "j1", 1, 0, 1, {{"loss", 1}})}, 2));
  EXPECT_EQ(*store->cursor("a1", "jid"), 2u);
  EXPECT_EQ(*store->cursor("a1", "other-journal"), 1u);
  EXPECT_EQ(*store->cursor("a2", "jid"), 1u);
  // An empty batch still moves the cursor (records the agent skipped, e.g. retention).
  ASSERT_OK(store->applyJournal("a1", "jid", {}, 7));
  EXPECT_EQ(*store->cursor("a1", "jid"), 7u);
  // A replay of an old batch never moves it back.
  ASSERT_OK(store->applyJournal("a1", "jid", {metric(1, "j1", 1, 0, 1, {{"loss", 1}})}, 2));
  EXPECT_EQ(*store->cursor("a1", "jid"), 7u);
}

TEST_F(StoreTest, FailedBatchStoresNeitherRecordsNorCursor) {
  auto store = open();
  RawDb raw(path_);
  raw.exec(
      "CREATE TRIGGER poison BEFORE INSERT ON metrics WHEN NEW.value = -666 "
      "BEGIN SELECT RAISE(ABORT, 'poisoned value'); END");
  const std::vector<proto::JournalRecord> batch = {
      accepted(1, "j1", 1, 1, {0}),
      metric(2, "j1", 1, 0, 1, {{"loss", 1.0}, {"acc", 0.1}}),
      metric(3, "j1", 1, 0, 2, {{"loss", -666}}),
  };
  const Status status = store->applyJournal("a1", "jid", batch, 4);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("poisoned value"), std::string::npos) << status.toString();
  EXPECT_EQ(*store->countMetrics(), 0);
  EXPECT_EQ(*store->cursor("a1", "jid"), 1u);
  EXPECT_FALSE(store->job("j1").isOk());

  // Series created by the rolled-back transaction must not linger in the id cache.
  raw.exec("DROP TRIGGER poison");
  ASSERT_OK(store->applyJournal("a1", "jid", batch, 4));
  EXPECT_EQ(*store->cursor("a1", "jid"), 4u);
  auto rows = store->metrics({.job_id = "j1", .name = std::string("acc")});
  ASSERT_TRUE(rows.isOk());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_DOUBLE_EQ(rows->front().value, 0.1);
  EXPECT_EQ(raw.text("SELECT count(*) FROM metrics m LEFT JOIN series s ON s.id = m.series_id "
                     "WHERE s.id IS NULL"),
            "0");
}

TEST_F(StoreTest, JobGoesFromSubmittedToRunningToSucceeded) {
  auto store = open();
  ASSERT_OK(store->recordSubmission({.job_id = "j1",
                                     .name = "train",
                                     .launcher = "torchrun",
                                     .state = "ignored",
                                     .spec_yaml = "name: train\n",
                                     .world_size = 2,
                                     .submitted_at = 50}));
  EXPECT_EQ(store->job("j1")->state, "submitted");

  ASSERT_OK(store->applyJournal("a1", "jid", {accepted(1, "j1", 1, 2, {0, 1})}, 2));
  auto job = store->job("j1");
  EXPECT_EQ(job->state, "submitted") << "accepted, but no rank has started";
  EXPECT_EQ(job->attempt, 1u);
  EXPECT_DOUBLE_EQ(job->submitted_at, 50);  // the client's clock
  auto ranks = store->ranks("j1");
  ASSERT_EQ(ranks->size(), 2u);
  EXPECT_EQ((*ranks)[0].state, "pending");

  ASSERT_OK(store->applyJournal("a1", "jid", {started(2, "j1", 1, 0), started(3, "j1", 1, 1)}, 4));
  EXPECT_EQ(store->job("j1")->state, "running");
  ranks = store->ranks("j1");
  EXPECT_EQ((*ranks)[1].state, "running");
  EXPECT_EQ((*ranks)[1].pid, 1001);
  EXPECT_EQ((*ranks)[1].agent, "a1");

  ASSERT_OK(store->applyJournal("a1", "jid", {exited(4, "j1", 1, 0, proto::SUCCEEDED, 200)}, 5));
  EXPECT_EQ(store->job("j1")->state, "running");
  EXPECT_DOUBLE_EQ(store->job("j1")->finished_at, 0);
  ASSERT_OK(store->applyJournal(
      "a1", "jid",
      {exited(5, "j1", 1, 1, proto::SUCCEEDED, 210), finished(6, "j1", 1, proto::SUCCEEDED, 211)},
      7));
  EXPECT_EQ(store->job("j1")->state, "running") << "until the leader says so";
  ASSERT_OK(store->applyJournal("a1", "jid", {outcome(7, "j1", 1, proto::SUCCEEDED, 212)}, 8));
  job = store->job("j1");
  EXPECT_EQ(job->state, "succeeded");
  EXPECT_DOUBLE_EQ(job->finished_at, 212);
  EXPECT_EQ(job->restarts_left, 0);
  EXPECT_EQ(job->name, "train-j1");
  EXPECT_EQ(job->launcher, "torchrun");
  EXPECT_EQ(job->world_size, 2);

  auto events = store->events("j1");
  ASSERT_EQ(events->size(), 7u);
  EXPECT_EQ(events->front().kind, "job_accepted");
  EXPECT_EQ(events->back().kind, "job_outcome");
}

// A job on Slurm: its row, and the end Slurm gave a job whose agents could not record one.
TEST_F(StoreTest, SlurmJobsAndTheirEndWhenTheAgentsCouldNotSayIt) {
  auto store = open();
  EXPECT_EQ(store->slurmJob("j1").status().code(), ErrorCode::kNotFound);
  ASSERT_OK(store->recordSubmission({.job_id = "j1", .name = "train", .world_size = 2}));
  ASSERT_OK(store->recordSlurmJob({.job_id = "j1",
                                   .cluster = "hpc",
                                   .job_dir = "/shared/j1",
                                   .slurm_job_id = "77",
                                   .state = "PENDING",
                                   .reason = "Priority"}));
  ASSERT_OK(store->recordSlurmJob({.job_id = "j1",
                                   .cluster = "hpc",
                                   .job_dir = "/shared/j1",
                                   .slurm_job_id = "77",
                                   .state = "RUNNING"}));
  auto row = store->slurmJob("j1");
  ASSERT_TRUE(row.isOk());
  EXPECT_EQ(row->slurm_job_id, "77");
  EXPECT_EQ(row->state, "RUNNING");
  EXPECT_EQ(row->reason, "");
  EXPECT_EQ(store->slurmJobs()->size(), 1u);

  // Rank 0 finished, rank 1 was still running when its node died.
  ASSERT_OK(
      store->applyJournal("a1", "jid",
                          {accepted(1, "j1", 1, 2, {0, 1}), started(2, "j1", 1, 0),
                           started(3, "j1", 1, 1), exited(4, "j1", 1, 0, proto::SUCCEEDED, 200)},
                          5));
  ASSERT_OK(store->endUnfinishedJob("j1", "failed", 300));
  EXPECT_EQ(store->job("j1")->state, "failed");
  EXPECT_DOUBLE_EQ(store->job("j1")->finished_at, 300);
  auto ranks = store->ranks("j1");
  EXPECT_EQ((*ranks)[0].state, "succeeded");
  EXPECT_EQ((*ranks)[1].state, "failed");
  // A job that has ended stays as it ended.
  ASSERT_OK(store->endUnfinishedJob("j1", "stopped", 400));
  EXPECT_EQ(store->job("j1")->state, "failed");
  EXPECT_EQ((*store->ranks("j1"))[1].state, "failed");
}

// The agents decide: a failed rank leaves the job running until its leader's decision, which
// the history records as it is (never predicted from the ranks).
TEST_F(StoreTest, AFailedRankLeavesTheJobRunningUntilTheLeaderDecides) {
  auto store = open();
  ASSERT_OK(store->applyJournal(
      "a1", "jid",
      {accepted(1, "j1", 1, 3, {0, 1, 2}), started(2, "j1", 1, 0), started(3, "j1", 1, 1),
       started(4, "j1", 1, 2), exited(5, "j1", 1, 2, proto::FAILED, 300)},
      6));
  auto job = store->job("j1");
  EXPECT_EQ(job->state, "running");
  EXPECT_DOUBLE_EQ(job->finished_at, 0);
  auto ranks = store->ranks("j1");
  EXPECT_EQ((*ranks)[2].state, "failed");
  EXPECT_EQ((*ranks)[2].exit_code, 3);
  EXPECT_EQ((*ranks)[2].error, "CUDA error: out of memory");

  ASSERT_OK(store->applyJournal("a1", "jid",
                                {decision(6, "j1", 1, proto::JobDecision::FAIL, 0, 301)}, 7));
  job = store->job("j1");
  EXPECT_EQ(job->state, "failed");
  EXPECT_DOUBLE_EQ(job->finished_at, 0) << "its other ranks are still ending";

  // The gang teardown stops the others; the outcome ends it.
  ASSERT_OK(store->applyJournal(
      "a1", "jid",
      {exited(7, "j1", 1, 0, proto::STOPPED, 310), exited(8, "j1", 1, 1, proto::SUCCEEDED, 311),
       outcome(9, "j1", 1, proto::FAILED, 312)},
      10));
  job = store->job("j1");
  EXPECT_EQ(job->state, "failed");
  EXPECT_DOUBLE_EQ(job->finished_at, 312);
}

TEST_F(StoreTest, WithRestartsLeftAFailedAttemptIsRestartingUntilTheNextOneTrains) {
  auto store = open();
  proto::JournalRecord first = accepted(1, "j1", 1, 2, {0, 1});
  first.mutable_job_accepted()->set_max_restarts(3);
  ASSERT_OK(
      store->applyJournal("a1", "jid", {first, started(2, "j1", 1, 0), started(3, "j1", 1, 1)}, 4));
  EXPECT_EQ(store->job("j1")->restarts_left, 3);
  ASSERT_OK(store->applyJournal("a1", "jid",
                                {exited(4, "j1", 1, 1, proto::FAILED, 300),
                                 decision(5, "j1", 1, proto::JobDecision::RESTART, 2, 300.1)},
                                6));
  auto job = store->job("j1");
  EXPECT_EQ(job->state, "restarting");
  EXPECT_EQ(job->restarts_left, 2);
  EXPECT_DOUBLE_EQ(job->finished_at, 0);
  proto::JournalRecord restart = record(7, "j1", 1, "agent:a1", 301);
  restart.mutable_job_restart()->set_next_attempt(2);
  restart.mutable_job_restart()->set_restarts_left(2);
  ASSERT_OK(
      store->applyJournal("a1", "jid", {exited(6, "j1", 1, 0, proto::STOPPED, 300.5), restart}, 8));
  EXPECT_EQ(store->job("j1")->state, "restarting");
  proto::JournalRecord second = accepted(8, "j1", 2, 2, {0, 1}, "a1", 302);
  second.mutable_job_accepted()->set_max_restarts(3);
  ASSERT_OK(store->applyJournal("a1", "jid", {second}, 9));
  job = store->job("j1");
  EXPECT_EQ(job->state, "restarting") << "attempt 2 has not started a rank yet";
  EXPECT_EQ(job->attempt, 2u);
  EXPECT_EQ(job->restarts_left, 2);
  ASSERT_OK(store->applyJournal("a1", "jid", {started(9, "j1", 2, 0, 303)}, 10));
  EXPECT_EQ(store->job("j1")->state, "running");
  EXPECT_EQ(store->job("j1")->restarts_left, 2);
}

TEST_F(StoreTest, AStopDecisionStopsTheJob) {
  auto store = open();
  ASSERT_OK(store->applyJournal(
      "a1", "jid",
      {accepted(1, "j1", 1, 2, {0, 1}), started(2, "j1", 1, 0), started(3, "j1", 1, 1),
       decision(4, "j1", 1, proto::JobDecision::STOP, 0, 399),
       exited(5, "j1", 1, 0, proto::STOPPED, 400), exited(6, "j1", 1, 1, proto::SUCCEEDED, 401)},
      7));
  EXPECT_EQ(store->job("j1")->state, "stopped");
  EXPECT_DOUBLE_EQ(store->job("j1")->finished_at, 401);
  EXPECT_EQ((*store->ranks("j1"))[0].signal, 15);
}

TEST_F(StoreTest, NewAttemptMakesTheJobRunningAgain) {
  auto store = open();
  ASSERT_OK(store->applyJournal(
      "a1", "jid",
      {accepted(1, "j1", 1, 1, {0}), started(2, "j1", 1, 0),
       exited(3, "j1", 1, 0, proto::FAILED, 300), outcome(4, "j1", 1, proto::FAILED, 301)},
      5));
  EXPECT_EQ(store->job("j1")->state, "failed");
  // A client restarts the job that was over.
  ASSERT_OK(store->applyJournal("a1", "jid", {accepted(5, "j1", 2, 1, {0}, "a1", 310)}, 6));
  auto job = store->job("j1");
  EXPECT_EQ(job->state, "restarting");
  EXPECT_EQ(job->attempt, 2u);
  EXPECT_DOUBLE_EQ(job->finished_at, 0);
  EXPECT_EQ((*store->ranks("j1"))[0].state, "pending");  // the latest attempt by default
  EXPECT_EQ((*store->ranks("j1", 1u))[0].state, "failed");
  ASSERT_OK(store->applyJournal("a1", "jid", {started(6, "j1", 2, 0, 311)}, 7));
  EXPECT_EQ(store->job("j1")->state, "running");

  // A late record of the old attempt does not change the job.
  ASSERT_OK(store->applyJournal("a2", "jid2", {exited(1, "j1", 1, 5, proto::SUCCEEDED)}, 2));
  EXPECT_EQ(store->job("j1")->state, "running");
}

TEST_F(StoreTest, ReplayedRankStartDoesNotReviveAnExitedRank) {
  auto store = open();
  const auto start_batch =
      std::vector<proto::JournalRecord>{accepted(1, "j1", 1, 1, {0}), started(2, "j1", 1, 0)};
  ASSERT_OK(store->applyJournal("a1", "jid", start_batch, 3));
  ASSERT_OK(store->applyJournal(
      "a1", "jid", {exited(3, "j1", 1, 0, proto::SUCCEEDED), outcome(4, "j1", 1, proto::SUCCEEDED)},
      5));
  ASSERT_OK(store->applyJournal("a1", "jid", start_batch, 3));
  EXPECT_EQ((*store->ranks("j1"))[0].state, "succeeded");
  EXPECT_EQ(store->job("j1")->state, "succeeded");
  EXPECT_EQ(store->events("j1")->size(), 4u);
}

TEST_F(StoreTest, JobStateCombinesRecordsOfSeveralAgentsWithoutASubmission) {
  auto store = open();
  ASSERT_OK(store->applyJournal("a1", "j-a1",
                                {accepted(1, "j1", 1, 2, {0}, "a1"), started(2, "j1", 1, 0),
                                 exited(3, "j1", 1, 0, proto::SUCCEEDED, 500)},
                                4));
  EXPECT_EQ(store->job("j1")->state, "running");  // rank 1 on a2 not heard from yet
  ASSERT_OK(store->applyJournal("a2", "j-a2",
                                {accepted(1, "j1", 1, 2, {1}, "a2"), started(2, "j1", 1, 1),
                                 exited(3, "j1", 1, 1, proto::SUCCEEDED, 510)},
                                4));
  EXPECT_EQ(store->job("j1")->state, "running") << "until the leader says so";
  ASSERT_OK(store->applyJournal("a1", "j-a1", {outcome(4, "j1", 1, proto::SUCCEEDED, 511)}, 5));
  EXPECT_EQ(store->job("j1")->state, "succeeded");
  EXPECT_DOUBLE_EQ(store->job("j1")->finished_at, 511);
  auto ranks = store->ranks("j1");
  ASSERT_EQ(ranks->size(), 2u);
  EXPECT_EQ((*ranks)[0].agent, "a1");
  EXPECT_EQ((*ranks)[1].agent, "a2");
}

// Metric rows are held back to the end of the transaction and inserted grouped by series, many
// per statement: what is stored must be what one-by-one inserts in journal order stored.
TEST_F(StoreTest, InterleavedRanksInOneBatchAreStoredAsInJournalOrder) {
  auto store = open();
  constexpr int kRanks = 8;
  constexpr uint64_t kRecords = 1001;  // 2002 values: many full statements and a remainder
  std::vector<proto::JournalRecord> batch;
  batch.push_back(accepted(1, "j1", 1, kRanks, {0, 1, 2, 3, 4, 5, 6, 7}));
  uint64_t seq = 2;
  for (uint64_t i = 0; i < kRecords; ++i, ++seq) {
    const int rank = static_cast<int>(i % kRanks);
    const double loss = i == 500 ? std::numeric_limits<double>::quiet_NaN() : 1.0 * seq;
    batch.push_back(metric(seq, "j1", 1, rank, static_cast<int64_t>(i / kRanks),
                           {{"loss", loss}, {"lr", -1.0 * seq}}, 150 + i));
    if (i == 300) batch.push_back(health(++seq, "a1", 42, 300));
  }
  // The same key again later in the batch (a record read twice): the first one stays.
  batch.push_back(metric(2, "j1", 1, 0, 0, {{"loss", 12345}}));
  ASSERT_OK(store->applyJournal("a1", "jid", batch, seq));

  EXPECT_EQ(*store->countMetrics("j1"), static_cast<int64_t>(2 * kRecords));
  EXPECT_EQ(store->latestHealth()->size(), 1u);
  for (int rank = 0; rank < kRanks; ++rank) {
    auto loss = store->metrics({.job_id = "j1", .rank = rank, .name = std::string("loss")});
    auto lr = store->metrics({.job_id = "j1", .rank = rank, .name = std::string("lr")});
    ASSERT_TRUE(loss.isOk() && lr.isOk());
    ASSERT_EQ(loss->size(), (kRecords + kRanks - 1 - rank) / kRanks) << "rank " << rank;
    ASSERT_EQ(lr->size(), loss->size());
    for (size_t k = 0; k < loss->size(); ++k) {
      const MetricRow& row = (*loss)[k];
      EXPECT_EQ(row.step, static_cast<int64_t>(k));
      const uint64_t i = k * kRanks + static_cast<uint64_t>(rank);
      // Records after the health sample are one seq further on.
      const double row_seq = static_cast<double>(i + 2 + (i > 300 ? 1 : 0));
      if (i == 500) {
        EXPECT_TRUE(std::isnan(row.value));
      } else {
        EXPECT_DOUBLE_EQ(row.value, row_seq) << "rank " << rank << " step " << k;
      }
      EXPECT_DOUBLE_EQ((*lr)[k].value, -row_seq);
      EXPECT_DOUBLE_EQ(row.time, 150.0 + static_cast<double>(i));
    }
  }
  EXPECT_EQ((*store->ranks("j1"))[0].last_step, static_cast<int64_t>((kRecords - 1) / kRanks));
}

TEST_F(StoreTest, LastStepIsTheHighestStepStoredForTheRank) {
  auto store = open();
  ASSERT_OK(store->applyJournal("a1", "jid", {accepted(1, "j1", 1, 2, {0, 1})}, 2));
  EXPECT_EQ((*store->ranks("j1"))[0].last_step, -1);
  std::vector<proto::JournalRecord> batch;
  uint64_t seq = 2;
  for (int64_t step = 0; step < 50; ++step) {
    batch.push_back(metric(seq++, "j1", 1, 0, step, {{"loss", 1}}));
    batch.push_back(metric(seq++, "j1", 1, 1, step * 2, {{"loss", 1}}));
  }
  batch.push_back(metric(seq++, "j1", 1, 0, 7, {{"loss", 1}}));  // out of order: not the last
  ASSERT_OK(store->applyJournal("a1", "jid", batch, seq));
  auto ranks = store->ranks("j1");
  EXPECT_EQ((*ranks)[0].last_step, 49);
  EXPECT_EQ((*ranks)[1].last_step, 98);
}

TEST_F(StoreTest, MetricsQueryFiltersByRankNameAndAttempt) {
  auto store = open();
  std::vector<proto::JournalRecord> batch;
  uint64_t seq = 1;
  for (uint32_t attempt : {1u, 2u}) {
    for (int rank = 0; rank < 3; ++rank) {
      for (int64_t step = 0; step < 4; ++step) {
        batch.push_back(
            metric(seq++, "j1", attempt, rank, step, {{"loss", rank * 10.0 + step}, {"lr", 0.01}}));
      }
    }
  }
  batch.push_back(metric(seq++, "j2", 1, 0, 0, {{"loss", 99}}));
  ASSERT_OK(store->applyJournal("a1", "jid", batch, seq));

  EXPECT_EQ(store->metrics({.job_id = "j1"})->size(), 48u);
  EXPECT_EQ(store->metrics({})->size(), 49u);

  auto rows = store->metrics({.job_id = "j1", .rank = 2, .name = std::string("loss")});
  ASSERT_TRUE(rows.isOk());
  ASSERT_EQ(rows->size(), 8u);
  for (size_t i = 0; i < rows->size(); ++i) {
    const MetricRow& r = (*rows)[i];
    EXPECT_EQ(r.rank, 2);
    EXPECT_EQ(r.name, "loss");
    EXPECT_EQ(r.attempt, i < 4 ? 1u : 2u);  // ordered by attempt, then step
    EXPECT_EQ(r.step, static_cast<int64_t>(i % 4));
    EXPECT_DOUBLE_EQ(r.value, 20.0 + r.step);
  }
  rows = store->metrics({.job_id = "j1", .name = std::string("lr"), .attempt = 2u});
  ASSERT_EQ(rows->size(), 12u);
  EXPECT_EQ(rows->front().rank, 0);
  EXPECT_EQ(rows->back().rank, 2);
  EXPECT_TRUE(store->metrics({.job_id = "j1", .name = std::string("nope")})->empty());
}

// A job's rows series by series (what a dashboard reads a long run by) are its metrics() rows,
// in the same order: attempt, rank, name, then journal order.
TEST_F(StoreTest, AJobsSeriesAndTheirPointsAreItsMetricRowsInOrder) {
  auto store = open();
  std::vector<proto::JournalRecord> batch;
  uint64_t seq = 1;
  for (uint32_t attempt : {1u, 2u}) {
    for (int64_t step = 0; step < 5; ++step) {
      for (int rank : {1, 0}) {
        batch.push_back(metric(seq++, "j1", attempt, rank, step,
                               {{"loss", rank * 10.0 + step}, {"lr", 0.01 * step}},
                               100.0 * attempt + step));
      }
    }
  }
  batch.push_back(metric(seq++, "j1", 2, 0, 2, {{"loss", std::nan("")}}, 300));  // a replay, NaN
  batch.push_back(metric(seq++, "j2", 1, 0, 0, {{"loss", 99}}));
  ASSERT_OK(store->applyJournal("a1", "jid", batch, seq));

  auto rows = store->metrics({.job_id = "j1"});
  ASSERT_TRUE(rows.isOk());
  auto series = store->jobSeries("j1");
  ASSERT_TRUE(series.isOk()) << series.status().toString();
  ASSERT_EQ(series->size(), 8u);  // 2 attempts x 2 ranks x 2 names
  size_t next = 0;
  for (const SeriesRow& s : *series) {
    ASSERT_OK(store->forEachPoint(s.id, [&](int64_t step, double value, double time) {
      ASSERT_LT(next, rows->size());
      const MetricRow& want = (*rows)[next++];
      EXPECT_EQ(s.attempt, want.attempt);
      EXPECT_EQ(s.rank, want.rank);
      EXPECT_EQ(s.name, want.name);
      EXPECT_EQ(step, want.step);
      EXPECT_TRUE(value == want.value || (std::isnan(value) && std::isnan(want.value)));
      EXPECT_EQ(time, want.time);
    }));
  }
  EXPECT_EQ(next, rows->size());
  EXPECT_EQ(rows->size(), 41u);
  EXPECT_TRUE(store->jobSeries("nope")->empty());
}

TEST_F(StoreTest, SeriesDecimationKeepsMinMaxAndLastPerBucket) {
  auto store = open();
  std::vector<proto::JournalRecord> batch;
  std::vector<double> values;
  for (int64_t step = 0; step < 1000; ++step) {
    const double v = static_cast<double>((step * 7919) % 1000) - 500;  // scrambled
    values.push_back(v);
    batch.push_back(
        metric(static_cast<uint64_t>(step + 1), "j1", 1, 0, step, {{"loss", v}}, 1000.0 + step));
  }
  ASSERT_OK(store->applyJournal("a1", "jid", batch, 1001));

  auto points = store->series("j1", 1, 0, "loss", 64);
  ASSERT_TRUE(points.isOk()) << points.status().toString();
  ASSERT_LE(points->size(), 64u);
  ASSERT_GE(points->size(), 60u);
  double overall_min = 1e9, overall_max = -1e9;
  int64_t previous_last = -1;
  for (const SeriesPoint& p : *points) {
    overall_min = std::min(overall_min, p.min);
    overall_max = std::max(overall_max, p.max);
    EXPECT_LE(p.min, p.last);
    EXPECT_GE(p.max, p.last);
    EXPECT_DOUBLE_EQ(p.last, values[static_cast<size_t>(p.step)]);
    EXPECT_DOUBLE_EQ(p.time, 1000.0 + p.step);
    // The bucket holds steps (previous_last, p.step]: check min/max against them.
    double lo = 1e9, hi = -1e9;
    for (int64_t s = previous_last + 1; s <= p.step; ++s) {
      lo = std::min(lo, values[static_cast<size_t>(s)]);
      hi = std::max(hi, values[static_cast<size_t>(s)]);
    }
    EXPECT_DOUBLE_EQ(p.min, lo) << "bucket ending at step " << p.step;
    EXPECT_DOUBLE_EQ(p.max, hi) << "bucket ending at step " << p.step;
    previous_last = p.step;
  }
  EXPECT_EQ(previous_last, 999);
  EXPECT_DOUBLE_EQ(overall_min, *std::min_element(values.begin(), values.end()));
  EXPECT_DOUBLE_EQ(overall_max, *std::max_element(values.begin(), values.end()));

  // Enough buckets: one point per step, lossless.
  points = store->series("j1", 1, 0, "loss", 5000);
  ASSERT_EQ(points->size(), 1000u);
  EXPECT_DOUBLE_EQ((*points)[10].min, values[10]);
  EXPECT_DOUBLE_EQ((*points)[10].max, values[10]);

  EXPECT_EQ(store->series("j1", 1, 0, "loss", 1)->size(), 1u);
  EXPECT_EQ(store->series("j1", 1, 0, "loss", 0).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(store->series("j1", 1, 0, "nope", 10).status().code(), ErrorCode::kNotFound);
}

// Regression (issue 21): SQLite stores a bound NaN as NULL, which `value REAL NOT NULL` refused,
// so one NaN loss failed its whole batch. NaN and the infinities are data and come back as such.
TEST_F(StoreTest, NaNAndInfinitiesAreStoredAndReadBack) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  auto store = open();
  ASSERT_OK(store->applyJournal(
      "a1", "jid",
      {metric(1, "j1", 1, 0, 1, {{"loss", 2.0}}), metric(2, "j1", 1, 0, 2, {{"loss", kNaN}}),
       metric(3, "j1", 1, 0, 3, {{"loss", kInf}}), metric(4, "j1", 1, 0, 4, {{"loss", -kInf}})},
      5));
  MetricQuery query;
  query.job_id = "j1";
  auto rows = store->metrics(query);
  ASSERT_TRUE(rows.isOk()) << rows.status().toString();
  ASSERT_EQ(rows->size(), 4u);
  EXPECT_EQ((*rows)[0].value, 2.0);
  EXPECT_TRUE(std::isnan((*rows)[1].value));
  EXPECT_EQ((*rows)[2].value, kInf);
  EXPECT_EQ((*rows)[3].value, -kInf);
  // The last point of a series is what it is, NaN included; min and max skip a NaN.
  auto one = store->series("j1", 1, 0, "loss", 1);
  ASSERT_TRUE(one.isOk()) << one.status().toString();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].last, -kInf);
  auto all = store->series("j1", 1, 0, "loss", 10);
  ASSERT_EQ(all->size(), 4u);
  EXPECT_TRUE(std::isnan((*all)[1].last));
}

TEST_F(StoreTest, SeriesHandlesStepsSpanningTheWholeInt64Range) {
  auto store = open();
  const int64_t lo = std::numeric_limits<int64_t>::min();
  const int64_t hi = std::numeric_limits<int64_t>::max();
  ASSERT_OK(store->applyJournal(
      "a1", "jid",
      {metric(1, "j1", 1, 0, lo, {{"x", 1}}), metric(2, "j1", 1, 0, 0, {{"x", 2}}),
       metric(3, "j1", 1, 0, hi, {{"x", 3}})},
      4));
  auto points = store->series("j1", 1, 0, "x", 4);
  ASSERT_TRUE(points.isOk());
  ASSERT_EQ(points->size(), 3u);
  EXPECT_EQ(points->front().step, lo);
  EXPECT_EQ(points->back().step, hi);
}

TEST_F(StoreTest, JobLookupByUniquePrefix) {
  auto store = open();
  for (const char* id : {"ab12", "ab34", "cd56", "x", "xy"}) {
    ASSERT_OK(store->recordSubmission({.job_id = id, .name = id}));
  }
  EXPECT_EQ(store->job("cd")->job_id, "cd56");
  EXPECT_EQ(store->job("ab1")->job_id, "ab12");
  EXPECT_EQ(store->job("x")->job_id, "x");  // an exact id wins over the ids it prefixes

  auto ambiguous = store->job("ab");
  ASSERT_FALSE(ambiguous.isOk());
  EXPECT_EQ(ambiguous.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(ambiguous.status().message().find("ambiguous"), std::string::npos);
  EXPECT_NE(ambiguous.status().message().find("ab12"), std::string::npos);
  EXPECT_NE(ambiguous.status().message().find("ab34"), std::string::npos);

  auto missing = store->job("zz");
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.status().message().find("zz"), std::string::npos);
  EXPECT_EQ(store->job("").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(store->ranks("zz").status().code(), ErrorCode::kNotFound);
}

TEST_F(StoreTest, JobsAreListedNewestFirst) {
  auto store = open();
  ASSERT_OK(store->recordSubmission({.job_id = "old", .submitted_at = 10}));
  ASSERT_OK(store->recordSubmission({.job_id = "new", .submitted_at = 30}));
  ASSERT_OK(store->applyJournal("a1", "jid", {accepted(1, "mid", 1, 1, {0}, "a1", 20)}, 2));
  auto jobs = store->jobs();
  ASSERT_EQ(jobs->size(), 3u);
  EXPECT_EQ((*jobs)[0].job_id, "new");
  EXPECT_EQ((*jobs)[1].job_id, "mid");
  EXPECT_EQ((*jobs)[2].job_id, "old");
}

// Two finished jobs with ranks, events, metrics and a Slurm row, for archive and delete.
void storeTwoFinishedJobs(Writer& store) {
  ASSERT_OK(store.applyJournal(
      "a1", "jid",
      {accepted(1, "keep", 1, 1, {0}, "a1", 10), started(2, "keep", 1, 0, 11),
       metric(3, "keep", 1, 0, 1, {{"loss", 2.0}}), exited(4, "keep", 1, 0, proto::SUCCEEDED),
       finished(5, "keep", 1, proto::SUCCEEDED), accepted(6, "gone", 1, 1, {0}, "a1", 20),
       started(7, "gone", 1, 0, 21), metric(8, "gone", 1, 0, 1, {{"loss", 3.0}}),
       metric(9, "gone", 1, 0, 2, {{"loss", 1.5}, {"lr", 0.1}}),
       exited(10, "gone", 1, 0, proto::SUCCEEDED), finished(11, "gone", 1, proto::SUCCEEDED),
       outcome(12, "keep", 1, proto::SUCCEEDED), outcome(13, "gone", 1, proto::SUCCEEDED)},
      14));
  ASSERT_OK(store.recordSlurmJob({.job_id = "gone", .cluster = "c", .job_dir = "/d"}));
}

std::vector<std::string> jobIds(Writer& store) {
  std::vector<std::string> ids;
  const Result<std::vector<JobRow>> jobs = store.jobs();  // outlives the loop
  for (const JobRow& job : *jobs) ids.push_back(job.job_id);
  return ids;
}

TEST_F(StoreTest, ArchivedJobsAreListedMarkedAndStaySoAfterReopening) {
  auto store = open();
  storeTwoFinishedJobs(*store);
  ASSERT_OK(store->setArchived({"gone", "no-such-job"}, true));
  store.reset();
  store = open();
  auto jobs = store->jobs();
  ASSERT_EQ(jobs->size(), 2u);  // archived runs are kept, only marked
  EXPECT_EQ((*jobs)[0].job_id, "gone");
  EXPECT_TRUE((*jobs)[0].archived);
  EXPECT_FALSE((*jobs)[1].archived);
  EXPECT_TRUE(store->job("gone")->archived);
  EXPECT_EQ(*store->countMetrics("gone"), 3);
  // Later records of an archived job leave it archived.
  ASSERT_OK(store->applyJournal("a1", "jid", {metric(12, "gone", 1, 0, 3, {{"loss", 1.0}})}, 13));
  EXPECT_TRUE(store->job("gone")->archived);
  ASSERT_OK(store->setArchived({"gone"}, false));
  EXPECT_FALSE(store->job("gone")->archived);
}

TEST_F(StoreTest, AJobMarkedDeletedIsHiddenAndUndeleteBringsItBackWhole) {
  auto store = open();
  storeTwoFinishedJobs(*store);
  ASSERT_OK(store->markDeleted({"gone"}, 1000));
  EXPECT_EQ(jobIds(*store), std::vector<std::string>{"keep"});
  EXPECT_EQ(store->job("gone").status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(store->job("go").status().code(), ErrorCode::kNotFound);  // nor by prefix
  // Reopened (as after a crash inside the undo window), still marked and still whole.
  store.reset();
  store = open();
  EXPECT_EQ(jobIds(*store), std::vector<std::string>{"keep"});
  ASSERT_OK(store->undelete({"gone"}));
  EXPECT_EQ(jobIds(*store), (std::vector<std::string>{"gone", "keep"}));
  EXPECT_EQ(*store->countMetrics("gone"), 3);
  EXPECT_EQ(store->ranks("gone")->size(), 1u);
  EXPECT_EQ(store->job("gone")->state, "succeeded");
}

TEST_F(StoreTest, PurgeRemovesOnlyMarkedJobsWithEverythingRecordedOfThem) {
  auto store = open();
  storeTwoFinishedJobs(*store);
  EXPECT_EQ(*store->purgeDeleted({"gone"}), 0);  // not marked: nothing to purge
  ASSERT_OK(store->markDeleted({"gone", "keep"}, 1000));
  ASSERT_OK(store->undelete({"keep"}));  // undone before its purge
  EXPECT_EQ(*store->purgeDeleted({"gone", "keep"}), 1);
  EXPECT_EQ(jobIds(*store), std::vector<std::string>{"keep"});
  EXPECT_EQ(*store->countMetrics("gone"), 0);
  EXPECT_FALSE(store->ranks("gone").isOk());  // no such job
  EXPECT_TRUE(store->events("gone")->empty());
  EXPECT_EQ(store->slurmJob("gone").status().code(), ErrorCode::kNotFound);
  RawDb raw(path_);
  EXPECT_EQ(raw.text("SELECT count(*) FROM series WHERE job_id = 'gone'"), "0");
  EXPECT_EQ(raw.text("SELECT count(*) FROM attempts WHERE job_id = 'gone'"), "0");
  EXPECT_EQ(raw.text("SELECT count(*) FROM ranks WHERE job_id = 'gone'"), "0");
  EXPECT_EQ(*store->countMetrics("keep"), 1);  // the other job untouched
  EXPECT_EQ(store->events("keep")->size(), 5u);
  // A record of the purged job arriving late, on the connection that had its series id cached,
  // is stored under a series that exists.
  ASSERT_OK(store->applyJournal("a1", "jid", {metric(12, "gone", 1, 0, 3, {{"loss", 1.0}})}, 13));
  auto late = store->metrics({.job_id = "gone"});
  ASSERT_EQ(late->size(), 1u);
  EXPECT_DOUBLE_EQ((*late)[0].value, 1.0);
}

TEST_F(StoreTest, PurgeAllDeletedRemovesWhatACrashLeftMarked) {
  auto store = open();
  storeTwoFinishedJobs(*store);
  ASSERT_OK(store->markDeleted({"gone"}, 1000));
  store.reset();
  store = open();  // the next start
  EXPECT_EQ(*store->purgeAllDeleted(), 1);
  EXPECT_EQ(*store->purgeAllDeleted(), 0);
  EXPECT_EQ(jobIds(*store), std::vector<std::string>{"keep"});
  EXPECT_EQ(*store->countMetrics(), 1);
}

TEST_F(StoreTest, LatestHealthIsTheNewestSamplePerAgent) {
  auto store = open();
  std::vector<proto::JournalRecord> batch = {health(1, "a1", 10, 1000), health(2, "a1", 20, 1001)};
  auto with_gpu = health(3, "a1", 30, 1002);
  auto* gpu = with_gpu.mutable_health()->add_gpus();
  gpu->set_index(1);
  gpu->set_utilization_percent(87.5);
  gpu->set_temperature_c(71);
  batch.push_back(with_gpu);
  ASSERT_OK(store->applyJournal("a1", "jid", batch, 4));
  ASSERT_OK(store->applyJournal("a2", "jid2", {health(1, "a2", 5, 999)}, 2));
  ASSERT_OK(store->applyJournal("a1", "jid", batch, 4));  // replay: no duplicates

  auto rows = store->latestHealth();
  ASSERT_TRUE(rows.isOk()) << rows.status().toString();
  ASSERT_EQ(rows->size(), 2u);
  const HealthRow& a1 = (*rows)[0];
  EXPECT_EQ(a1.agent, "a1");
  EXPECT_DOUBLE_EQ(a1.time, 1002);
  EXPECT_DOUBLE_EQ(a1.sample.cpu_percent(), 30);
  EXPECT_EQ(a1.sample.memory_total_bytes(), 8ull << 30);
  ASSERT_EQ(a1.sample.gpus_size(), 1);
  EXPECT_EQ(a1.sample.gpus(0).index(), 1u);
  EXPECT_DOUBLE_EQ(a1.sample.gpus(0).utilization_percent(), 87.5);
  EXPECT_EQ((*rows)[1].agent, "a2");
  EXPECT_EQ((*rows)[1].sample.gpus_size(), 0);
}

// An agent whose state dir was wiped numbers its journal from 1 again: its new samples are
// kept beside the old ones (and are the newest), while a sample read again is stored once.
TEST_F(StoreTest, HealthOfAWipedAgentIsKeptBesideTheOldAndReadingAgainDoublesNothing) {
  auto store = open();
  ASSERT_OK(store->applyJournal("a1", "jid-old",
                                {health(1, "a1", 10, 1000), health(2, "a1", 20, 1001)}, 3));
  ASSERT_OK(store->applyJournal("a1", "jid-new", {health(1, "a1", 70, 5000)}, 2));
  ASSERT_OK(store->applyJournal("a1", "jid-epoch2", {health(1, "a1", 10, 1000)}, 2));  // again
  auto range = store->health("a1", 0, 1e9, 100);
  ASSERT_TRUE(range.isOk()) << range.status().toString();
  ASSERT_EQ(range->size(), 3u);
  EXPECT_DOUBLE_EQ((*range)[2].time, 5000);
  auto latest = store->latestHealth();
  ASSERT_EQ(latest->size(), 1u);
  EXPECT_DOUBLE_EQ((*latest)[0].sample.cpu_percent(), 70);
}

TEST_F(StoreTest, RecordAgentKeepsTheLatestInventory) {
  auto store = open();
  proto::Inventory inv;
  inv.set_agent_name("a1");
  inv.set_slots(4);
  ASSERT_OK(store->recordAgent("a1", "tcp://h1:7070", inv));
  inv.set_slots(8);
  ASSERT_OK(store->recordAgent("a1", "tcp://h1:7071", inv));
  auto agents = store->agents();
  ASSERT_EQ(agents->size(), 1u);
  EXPECT_EQ(agents->front().endpoint, "tcp://h1:7071");
  EXPECT_EQ(agents->front().inventory.slots(), 8u);
  EXPECT_GT(agents->front().last_seen, 0);
}

// The schema of version 1, frozen as that build wrote it.
constexpr const char* kVersion1Schema = R"sql(
CREATE TABLE agents(name TEXT PRIMARY KEY, endpoint TEXT NOT NULL DEFAULT '', inventory BLOB,
  last_seen REAL NOT NULL DEFAULT 0);
CREATE TABLE jobs(job_id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '',
  launcher TEXT NOT NULL DEFAULT '', world_size INTEGER NOT NULL DEFAULT 0,
  state TEXT NOT NULL DEFAULT 'submitted', spec_yaml TEXT NOT NULL DEFAULT '',
  submitted_at REAL NOT NULL DEFAULT 0, finished_at REAL NOT NULL DEFAULT 0,
  attempt INTEGER NOT NULL DEFAULT 0);
CREATE TABLE attempts(job_id TEXT NOT NULL, attempt INTEGER NOT NULL,
  state TEXT NOT NULL DEFAULT 'running', started_at REAL NOT NULL DEFAULT 0,
  finished_at REAL NOT NULL DEFAULT 0, PRIMARY KEY(job_id, attempt)) WITHOUT ROWID;
CREATE TABLE ranks(job_id TEXT NOT NULL, attempt INTEGER NOT NULL, rank INTEGER NOT NULL,
  agent TEXT NOT NULL DEFAULT '', local_rank INTEGER NOT NULL DEFAULT 0,
  pid INTEGER NOT NULL DEFAULT 0, state TEXT NOT NULL DEFAULT 'pending',
  exit_code INTEGER NOT NULL DEFAULT 0, signal INTEGER NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT '', last_step INTEGER NOT NULL DEFAULT -1,
  started_at REAL NOT NULL DEFAULT 0, finished_at REAL NOT NULL DEFAULT 0,
  PRIMARY KEY(job_id, attempt, rank)) WITHOUT ROWID;
CREATE TABLE series(id INTEGER PRIMARY KEY, job_id TEXT NOT NULL, attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL, name TEXT NOT NULL, UNIQUE(job_id, attempt, rank, name));
CREATE TABLE metrics(series_id INTEGER NOT NULL, seq INTEGER NOT NULL, step INTEGER NOT NULL,
  value REAL NOT NULL, time REAL NOT NULL, PRIMARY KEY(series_id, seq)) WITHOUT ROWID;
CREATE TABLE health(agent TEXT NOT NULL, seq INTEGER NOT NULL, time REAL NOT NULL,
  cpu_percent REAL NOT NULL DEFAULT 0, mem_used INTEGER NOT NULL DEFAULT 0,
  mem_total INTEGER NOT NULL DEFAULT 0, load1 REAL NOT NULL DEFAULT 0,
  net_rx REAL NOT NULL DEFAULT 0, net_tx REAL NOT NULL DEFAULT 0, gpus BLOB,
  PRIMARY KEY(agent, seq)) WITHOUT ROWID;
CREATE TABLE cursors(agent TEXT NOT NULL, journal_id TEXT NOT NULL, next_seq INTEGER NOT NULL,
  PRIMARY KEY(agent, journal_id)) WITHOUT ROWID;
PRAGMA user_version = 1;
)sql";

TEST_F(StoreTest, MigratesAVersion1FileKeepingItsData) {
  fs::create_directories(fs::path(path_).parent_path());
  {
    RawDb raw(path_);
    raw.exec(kVersion1Schema);
    raw.exec(
        "INSERT INTO jobs(job_id, name, state, world_size, submitted_at, attempt) "
        "VALUES('old1', 'legacy', 'succeeded', 1, 5, 1);"
        "INSERT INTO ranks(job_id, attempt, rank, state, last_step) "
        "VALUES('old1', 1, 0, 'succeeded', 2);"
        "INSERT INTO series(id, job_id, attempt, rank, name) VALUES(1, 'old1', 1, 0, 'loss');"
        "INSERT INTO metrics VALUES(1, 10, 1, 0.9, 6), (1, 11, 2, 0.7, 7);"
        "INSERT INTO cursors VALUES('a1', 'jid', 12);"
        "INSERT INTO health(agent, seq, time, cpu_percent) VALUES('a1', 5, 100, 42);");
  }
  auto store = open();
  ASSERT_TRUE(store);
  EXPECT_EQ(RawDb(path_).text("PRAGMA user_version"), std::to_string(Writer::schemaVersion()));

  auto job = store->job("old");
  ASSERT_TRUE(job.isOk()) << job.status().toString();
  EXPECT_EQ(job->name, "legacy");
  EXPECT_EQ(job->state, "succeeded");
  EXPECT_EQ((*store->ranks("old1"))[0].last_step, 2);
  auto rows = store->metrics({.job_id = "old1", .name = std::string("loss")});
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_DOUBLE_EQ((*rows)[1].value, 0.7);
  EXPECT_EQ(*store->cursor("a1", "jid"), 12u);
  auto health_rows = store->health("a1", 0, 1e9, 10);
  ASSERT_EQ(health_rows->size(), 1u);
  EXPECT_DOUBLE_EQ((*health_rows)[0].sample.cpu_percent(), 42);

  // What version 2 added works on the migrated file.
  ASSERT_OK(store->applyJournal(
      "a1", "jid", {accepted(12, "new1", 1, 1, {0}), metric(13, "old1", 1, 0, 3, {{"loss", 0.5}})},
      14));
  EXPECT_EQ(store->events("new1")->size(), 1u);
  EXPECT_EQ(*store->countMetrics("old1"), 3);

  // Opening again migrates nothing and keeps everything.
  store.reset();
  store = open();
  EXPECT_EQ(*store->countMetrics(), 3);
}

TEST_F(StoreTest, RefusesAFileFromANewerSchemaVersion) {
  fs::create_directories(fs::path(path_).parent_path());
  {
    RawDb raw(path_);
    raw.exec("CREATE TABLE future(x); PRAGMA user_version = 99;");
  }
  auto store = Writer::open(path_);
  ASSERT_FALSE(store.isOk());
  EXPECT_EQ(store.status().code(), ErrorCode::kUnsupportedVersion);
  EXPECT_NE(store.status().message().find("99"), std::string::npos) << store.status().toString();
  EXPECT_EQ(RawDb(path_).text("PRAGMA user_version"), "99");  // untouched
}

TEST_F(StoreTest, OneWriterPerFileInAProcessAndReadersCannotWrite) {
  auto writer = open();
  auto second = Writer::open(path_);
  ASSERT_FALSE(second.isOk()) << "two writers of one file in one process";
  EXPECT_EQ(second.status().code(), ErrorCode::kAlreadyExists);
  EXPECT_NE(second.status().message().find("already has a writer"), std::string::npos)
      << second.status().message();
  // The same file by another name is the same file.
  EXPECT_FALSE(Writer::open(dir_ + "/history/./history.db").isOk());
  EXPECT_FALSE(BatchWriter::open(path_).isOk()) << "it would be a second writer";
  // Another file has a writer of its own.
  EXPECT_TRUE(Writer::open(dir_ + "/other.db").isOk());

  // Readers beside the writer read what it commits.
  auto reader = openReader();
  ASSERT_OK(writer->recordSubmission({.job_id = "j1", .submitted_at = 1}));
  EXPECT_EQ(reader->jobs()->size(), 1u);
  writer.reset();
  EXPECT_TRUE(Writer::open(path_).isOk()) << "the claim ends with its writer";

  // Two sessions in one process share the file's one BatchWriter: both write, neither waits on
  // the other's lock, and it lives until the last handle goes.
  auto first = BatchWriter::open(path_);
  auto second_handle = BatchWriter::open(dir_ + "/history/./history.db");
  ASSERT_TRUE(first.isOk() && second_handle.isOk());
  (*first)->enqueueWrite([](Writer& w) { return w.recordSubmission({.job_id = "j2"}); });
  first->reset();
  (*second_handle)->enqueueWrite([](Writer& w) { return w.recordSubmission({.job_id = "j3"}); });
  ASSERT_OK((*second_handle)->flush());
  EXPECT_EQ(reader->jobs()->size(), 3u);
  EXPECT_FALSE(Writer::open(path_).isOk()) << "the shared writer is still the file's writer";
  second_handle->reset();
  EXPECT_TRUE(Writer::open(path_).isOk());
}

TEST_F(StoreTest, WalReaderSeesCommittedDataWhileTheWriterIsActive) {
  auto writer = open();
  auto reader = openReader();
  ASSERT_OK(writer->applyJournal("a1", "jid", {metric(1, "j1", 1, 0, 1, {{"loss", 1}})}, 2));
  EXPECT_EQ(*reader->countMetrics(), 1);
  writer.reset();  // the BatchWriter below is the process's writer

  // Another writer holds the write lock with uncommitted rows: the reader neither blocks nor sees
  // them.
  RawDb raw(path_);
  raw.exec("BEGIN IMMEDIATE; INSERT INTO metrics VALUES(1, 99, 99, 9, 9);");
  EXPECT_EQ(*reader->countMetrics(), 1);
  EXPECT_EQ(reader->metrics({.job_id = "j1"})->size(), 1u);
  raw.exec("COMMIT");
  EXPECT_EQ(*reader->countMetrics(), 2);  // no stale snapshot held by a cached statement

  // And while a BatchWriter streams batches, every read sees whole batches only.
  auto batch_writer = BatchWriter::open(path_, 2);
  ASSERT_TRUE(batch_writer.isOk());
  std::thread producer([&] {
    uint64_t seq = 100;
    for (int b = 0; b < 50; ++b) {
      std::vector<proto::JournalRecord> records;
      for (int i = 0; i < 100; ++i, ++seq) {
        records.push_back(metric(seq, "j2", 1, 0, static_cast<int64_t>(seq), {{"loss", 1}}));
      }
      (*batch_writer)->enqueue("a1", "jid", std::move(records), seq);
    }
  });
  int64_t previous = 0;
  for (int i = 0; i < 200; ++i) {
    auto count = reader->countMetrics("j2");
    ASSERT_TRUE(count.isOk()) << count.status().toString();
    EXPECT_EQ(*count % 100, 0) << "a partial batch is visible";
    EXPECT_GE(*count, previous);
    previous = *count;
  }
  producer.join();
  ASSERT_OK((*batch_writer)->flush());
  EXPECT_EQ(*reader->countMetrics("j2"), 5000);
}

TEST_F(StoreTest, BatchWriterFlushWaitsUntilEverythingEnqueuedIsCommitted) {
  auto writer = BatchWriter::open(path_, 2);
  ASSERT_TRUE(writer.isOk()) << writer.status().toString();
  // Two producers (agents) share the bounded queue and wait for room.
  auto produce = [&](const std::string& agent) {
    uint64_t seq = 1;
    for (int b = 0; b < 40; ++b) {
      std::vector<proto::JournalRecord> records;
      for (int i = 0; i < 25; ++i, ++seq) {
        records.push_back(
            metric(seq, "job-" + agent, 1, 0, static_cast<int64_t>(seq), {{"loss", 1}}));
      }
      (*writer)->enqueue(agent, "jid-" + agent, std::move(records), seq);
    }
  };
  std::thread t1(produce, "a1");
  std::thread t2(produce, "a2");
  t1.join();
  t2.join();
  ASSERT_OK((*writer)->flush());

  auto store = openReader();
  EXPECT_EQ(*store->countMetrics(), 2000);
  EXPECT_EQ(*store->cursor("a1", "jid-a1"), 1001u);
  EXPECT_EQ(*store->cursor("a2", "jid-a2"), 1001u);

  // The destructor flushes too.
  (*writer)->enqueue("a1", "jid-a1", {metric(1001, "job-a1", 1, 0, 1001, {{"loss", 1}})}, 1002);
  writer->reset();
  EXPECT_EQ(*store->countMetrics(), 2001);
}

// Health samples of 64 GPUs: about 3 KB a row, so that a few thousand rows fill megabytes of WAL.
std::vector<proto::JournalRecord> bigHealthBatch(uint64_t first_seq, int rows) {
  std::vector<proto::JournalRecord> batch;
  for (int i = 0; i < rows; ++i) {
    const uint64_t seq = first_seq + static_cast<uint64_t>(i);
    proto::JournalRecord r = health(seq, "a1", 50, 1000.0 + static_cast<double>(seq));
    for (uint32_t g = 0; g < 64; ++g) {
      auto* gpu = r.mutable_health()->add_gpus();
      gpu->set_index(g);
      gpu->set_utilization_percent(static_cast<double>(seq % 100));
      gpu->set_memory_used_bytes(seq * 1000 + g);
      gpu->set_memory_total_bytes(80ull << 30);
      gpu->set_temperature_c(60.5 + g);
      gpu->set_power_w(300.25 + static_cast<double>(seq));
    }
    batch.push_back(std::move(r));
  }
  return batch;
}

int64_t walPages(const std::string& db_path) {
  std::error_code ec;
  const auto bytes = fs::file_size(db_path + "-wal", ec);
  return ec ? 0 : static_cast<int64_t>(bytes / 4096);
}

// The writer's WAL is checkpointed on a thread of its own (WalCheckpointer), not inside its
// commits; the writer waits for a checkpoint only when the WAL reaches 4000 pages, so that the
// WAL is started over and stays bounded as with SQLite's automatic checkpoints.
TEST_F(StoreTest, BatchWriterCheckpointsBesideItAndKeepsTheWalBounded) {
  auto writer = BatchWriter::open(path_, 8);
  ASSERT_TRUE(writer.isOk()) << writer.status().toString();
  ASSERT_EQ(RawDb(path_).text("PRAGMA page_size"), "4096");
  constexpr int kBatches = 100, kRows = 100;  // about 30 MB of rows: the WAL would pass 7000 pages
  uint64_t seq = 1;
  for (int b = 0; b < kBatches; ++b, seq += kRows) {
    (*writer)->enqueue("a1", "jid", bigHealthBatch(seq, kRows), seq + kRows);
  }
  ASSERT_OK((*writer)->flush());
  // 4000 pages and at most one transaction of 8 batches (about 600 pages) written before the
  // writer waits.
  EXPECT_LT(walPages(path_), 5000);
  // Everything is in the history, and stays there once the writer is gone.
  writer->reset();
  auto store = openReader();
  EXPECT_EQ(*store->cursor("a1", "jid"), seq);
  auto rows = store->health("a1", 0, 1e9, 100000);
  ASSERT_TRUE(rows.isOk());
  ASSERT_EQ(rows->size(), static_cast<size_t>(kBatches * kRows));
  EXPECT_EQ(rows->back().sample.gpus_size(), 64);
  EXPECT_EQ(rows->back().sample.gpus(63).memory_used_bytes(), (seq - 1) * 1000 + 63);
}

// A reader that holds an old snapshot keeps every checkpoint from finishing: the writer must not
// wait for one that never comes, and the WAL grows (as it does with SQLite's own checkpoints)
// until the reader lets go.
TEST_F(StoreTest, BatchWriterGoesOnWhileAReaderHoldsAnOldSnapshot) {
  auto writer = BatchWriter::open(path_, 8);
  ASSERT_TRUE(writer.isOk()) << writer.status().toString();
  (*writer)->enqueue("a1", "jid", bigHealthBatch(1, 1), 2);
  ASSERT_OK((*writer)->flush());
  RawDb reader(path_);
  reader.exec("BEGIN");
  EXPECT_EQ(reader.text("SELECT count(*) FROM health"), "1");  // the snapshot is taken
  uint64_t seq = 2;
  for (int b = 0; b < 80; ++b, seq += 100) {
    (*writer)->enqueue("a1", "jid", bigHealthBatch(seq, 100), seq + 100);
  }
  ASSERT_OK((*writer)->flush());
  EXPECT_EQ(reader.text("SELECT count(*) FROM health"), "1");
  EXPECT_GT(walPages(path_), 5000);
  reader.exec("COMMIT");
  EXPECT_EQ(reader.text("SELECT count(*) FROM health"), "8001");
  // Let go of, the WAL is checkpointed and started over again.
  for (int b = 0; b < 80; ++b, seq += 100) {
    (*writer)->enqueue("a1", "jid", bigHealthBatch(seq, 100), seq + 100);
  }
  ASSERT_OK((*writer)->flush());
  EXPECT_EQ(reader.text("SELECT count(*) FROM health"), "16001");
}

TEST_F(StoreTest, BatchWriterReportsAnErrorAndSkipsLaterBatchesUntilFlush) {
  auto writer = BatchWriter::open(path_, 4);
  ASSERT_TRUE(writer.isOk());
  ASSERT_OK((*writer)->flush());  // the schema exists now
  RawDb raw(path_);
  raw.exec(
      "CREATE TRIGGER poison BEFORE INSERT ON metrics WHEN NEW.value = -666 "
      "BEGIN SELECT RAISE(ABORT, 'poisoned value'); END");
  (*writer)->enqueue("a1", "jid", {metric(1, "j1", 1, 0, 1, {{"loss", -666}})}, 2);
  (*writer)->enqueue("a1", "jid", {metric(2, "j1", 1, 0, 2, {{"loss", 1}})}, 3);
  const Status status = (*writer)->flush();
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("poisoned value"), std::string::npos) << status.toString();

  // The later batch must not have advanced the cursor past the failed one.
  auto store = openReader();
  EXPECT_EQ(*store->cursor("a1", "jid"), 1u);
  EXPECT_EQ(*store->countMetrics(), 0);

  // Reported once; afterwards the writer works again.
  raw.exec("DROP TRIGGER poison");
  (*writer)->enqueue("a1", "jid", {metric(1, "j1", 1, 0, 1, {{"loss", 2}})}, 2);
  ASSERT_OK((*writer)->flush());
  EXPECT_EQ(*store->cursor("a1", "jid"), 2u);
}

// Issue 21: a client process has one writer; every other write (a submission, an agent's
// inventory) goes through it in queue order, and its failure is reported by flush().
TEST_F(StoreTest, BatchWriterRunsOtherWritesInOrderAndReportsTheirFailure) {
  auto writer = BatchWriter::open(path_, 4);
  ASSERT_TRUE(writer.isOk());
  JobRow submitted;
  submitted.job_id = "j1";
  submitted.name = "train";
  submitted.launcher = "command";
  submitted.world_size = 1;
  submitted.submitted_at = 42;
  (*writer)->enqueueWrite([submitted](Writer& s) { return s.recordSubmission(submitted); });
  (*writer)->enqueue("a1", "jid", {metric(1, "j1", 1, 0, 1, {{"loss", 1}})}, 2);
  ASSERT_OK((*writer)->flush());
  auto store = openReader();
  auto job = store->job("j1");
  ASSERT_TRUE(job.isOk()) << job.status().toString();
  EXPECT_DOUBLE_EQ(job->submitted_at, 42);
  EXPECT_EQ(*store->countMetrics("j1"), 1);

  (*writer)->enqueueWrite([](Writer&) { return ioError("disk full (simulated)"); });
  const Status failed = (*writer)->flush();
  EXPECT_FALSE(failed.isOk());
  EXPECT_NE(failed.message().find("disk full"), std::string::npos) << failed.toString();
  ASSERT_OK((*writer)->flush());  // reported once
}

// Pages SQLite cannot read fail only the queries that touch them (issue 34: `runs`, `metrics`
// and `sync` used a damaged file with exit 0). The file is named by damagedHistories() once
// opened, what is readable is still read, and the verdict is kept beside the file
// (history.db-checked) for the next opener; a sound file's verdict says sound.
TEST_F(StoreTest, ADamagedFileIsNamedWhileWhatIsReadableIsStillRead) {
  {
    auto store = open();
    ASSERT_OK(store->applyJournal("a1", "jid", {accepted(1, "j1", 1, 1, {0})}, 2));
    std::vector<proto::JournalRecord> batch;
    uint64_t seq = 2;
    for (int64_t step = 0; step < 5000; ++step) {
      batch.push_back(metric(seq++, "j1", 1, 0, step, {{"loss", 1.0 / (step + 1)}}));
    }
    ASSERT_OK(store->applyJournal("a1", "jid", batch, seq));
  }
  const std::string sound = dir_ + "/sound.db", damaged = dir_ + "/damaged.db";
  int64_t page = 0;
  {
    RawDb raw(path_);
    raw.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    page = std::stoll(raw.text(
        "SELECT max(pageno) FROM dbstat WHERE name LIKE 'metrics%' AND pagetype = 'leaf'"));
  }
  ASSERT_GT(page, 1);
  // Files this process never opened, so that each is checked here.
  fs::copy_file(path_, sound);
  fs::copy_file(path_, damaged);
  {
    std::fstream file(damaged, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp((page - 1) * 4096);
    const std::string garbage(64, '\xff');
    file.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  for (const std::string& path : {sound, damaged}) {
    auto reader = Reader::open(path);
    ASSERT_TRUE(reader.isOk()) << reader.status().toString();
    auto jobs = (*reader)->jobs();  // the jobs' pages are sound in both
    ASSERT_TRUE(jobs.isOk()) << jobs.status().toString();
    EXPECT_EQ(jobs->size(), 1u);
  }
  const std::vector<std::string> found = damagedHistories();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].find(damaged + " is damaged"), std::string::npos) << found[0];
  EXPECT_NE(found[0].find(".recover"), std::string::npos) << found[0];
  std::ifstream kept_damaged(damaged + "-checked"), kept_sound(sound + "-checked");
  const std::string damaged_verdict((std::istreambuf_iterator<char>(kept_damaged)), {});
  const std::string sound_verdict((std::istreambuf_iterator<char>(kept_sound)), {});
  EXPECT_NE(damaged_verdict.find(" damaged "), std::string::npos) << damaged_verdict;
  EXPECT_NE(sound_verdict.find(" sound"), std::string::npos) << sound_verdict;
}

TEST_F(StoreTest, RecordsOfUnknownKindAreSkippedAndTheCursorStillAdvances) {
  auto store = open();
  proto::JournalRecord unknown = record(1, "j1", 1, "rank:0", 1);  // no kind set
  ASSERT_OK(store->applyJournal("a1", "jid", {unknown}, 2));
  EXPECT_EQ(*store->cursor("a1", "jid"), 2u);
  EXPECT_TRUE(store->jobs()->empty());
}

// A preflight is kept whole: agents with their GPU faults, links, verdict; listed newest first,
// numbered in order, and a bad report (no start time) refused without a trace.
TEST_F(StoreTest, APreflightIsKeptWholeAndListedNewestFirst) {
  auto store = open();
  ASSERT_TRUE(store);
  PreflightReport report;
  report.started_at = 1700000000.5;
  report.seconds = 4.25;
  report.median_gbps = 1.1;
  report.agents.reserve(2);  // a1 stays valid
  AgentCheck& a1 = report.agents.emplace_back();
  a1.agent = "a1";
  a1.cpus = 64;
  a1.load1 = 3.5;
  a1.memory_total = uint64_t{512} << 30;
  a1.memory_used = uint64_t{12} << 30;
  a1.state_dir = "/var/lib/ringmaster-agent";
  a1.disk_free = uint64_t{300} << 20;
  a1.disk_total = uint64_t{40} << 30;
  a1.clock_offset_s = -0.002;
  a1.round_trip_ms = 1.5;
  a1.gpus = 8;
  a1.gpu_faults.push_back(
      {2, {hardware::FaultSeverity::kWarning, "clocks", "clocks held at 705 of 1980 MHz"}});
  a1.gpu_faults.push_back({5, {hardware::FaultSeverity::kCritical, "xid", "XID 79"}});
  report.agents.emplace_back().agent = "a2";
  report.agents.back().error = "did not answer within 5000 ms";
  report.links.push_back({"a1", "a3", "job-1", "", 0.11, 80});
  report.links.push_back({"a1", "a4", "job-2", "no result within 25 s", 0, 0});
  report.problems = {"link a1 <-> a3: 0.11 GB/s, the median pair 1.1 GB/s", "a2: could not"};

  auto first = store->recordPreflight(report);
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  PreflightReport second_report;
  second_report.started_at = report.started_at + 3600;
  second_report.agents.emplace_back().agent = "a9";
  auto second = store->recordPreflight(second_report);
  ASSERT_TRUE(second.isOk()) << second.status().toString();
  EXPECT_EQ(*second, *first + 1);
  auto refused = store->recordPreflight(PreflightReport{});
  EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidArgument);

  auto reader = openReader();
  ASSERT_TRUE(reader);
  auto kept = reader->preflights();
  ASSERT_TRUE(kept.isOk()) << kept.status().toString();
  ASSERT_EQ(kept->size(), 2u);
  EXPECT_EQ((*kept)[0].id, *second);
  EXPECT_EQ((*kept)[0].agents.size(), 1u);
  EXPECT_TRUE((*kept)[0].links.empty());
  const PreflightReport& back = (*kept)[1];
  EXPECT_EQ(back.id, *first);
  EXPECT_DOUBLE_EQ(back.started_at, report.started_at);
  EXPECT_DOUBLE_EQ(back.seconds, 4.25);
  EXPECT_DOUBLE_EQ(back.median_gbps, 1.1);
  ASSERT_EQ(back.agents.size(), 2u);
  const AgentCheck& b1 = back.agents[0];
  EXPECT_EQ(b1.agent, "a1");
  EXPECT_EQ(b1.cpus, 64u);
  EXPECT_EQ(b1.memory_total, a1.memory_total);
  EXPECT_EQ(b1.disk_free, a1.disk_free);
  EXPECT_EQ(b1.state_dir, a1.state_dir);
  EXPECT_DOUBLE_EQ(b1.clock_offset_s, -0.002);
  EXPECT_EQ(b1.gpus, 8);
  ASSERT_EQ(b1.gpu_faults.size(), 2u);
  EXPECT_EQ(b1.gpu_faults[1].gpu, 5u);
  EXPECT_EQ(b1.gpu_faults[1].fault.severity, hardware::FaultSeverity::kCritical);
  EXPECT_EQ(b1.gpu_faults[0].fault.kind, "clocks");
  EXPECT_EQ(b1.gpu_faults[0].fault.text, "clocks held at 705 of 1980 MHz");
  EXPECT_EQ(back.agents[1].error, "did not answer within 5000 ms");
  EXPECT_TRUE(back.agents[1].gpu_faults.empty());
  ASSERT_EQ(back.links.size(), 2u);
  EXPECT_EQ(back.links[0].job_id, "job-1");
  EXPECT_DOUBLE_EQ(back.links[0].gbps, 0.11);
  EXPECT_DOUBLE_EQ(back.links[0].latency_us, 80);
  EXPECT_EQ(back.links[1].error, "no result within 25 s");
  EXPECT_EQ(back.problems, report.problems);

  auto newest = reader->preflights(1);
  ASSERT_TRUE(newest.isOk());
  ASSERT_EQ(newest->size(), 1u);
  EXPECT_EQ(newest->front().id, *second);
  auto by_id = reader->preflights(1, *first);
  ASSERT_TRUE(by_id.isOk());
  ASSERT_EQ(by_id->size(), 1u);
  EXPECT_EQ(by_id->front().links.size(), 2u);
  auto absent = reader->preflights(1, *second + 10);
  ASSERT_TRUE(absent.isOk());
  EXPECT_TRUE(absent->empty());
}

}  // namespace
}  // namespace ringmaster::store
