// The hardware report over a real history file written as agents' journals would write it: a
// planted flaky GPU is named, with its runs; a clean history names nothing; a GPU fault event
// is stored and counted under the GPU it was seen on.
#include "ringmaster/hardware/hardware_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "ringmaster/store/writer.h"

namespace ringmaster::hardware {
namespace {

std::string uuidOf(int host, int gpu) {
  return "GPU-" + std::to_string(host) + std::to_string(gpu) + "3f2c1a-9e0b-4d5e-8f60-0000000000" +
         std::to_string(host) + std::to_string(gpu);
}

std::string deviceOf(int host, int gpu) {
  return "GPU " + std::to_string(gpu) + " NVIDIA H100 80GB HBM3 (" + uuidOf(host, gpu) + ")";
}

// Journals of 4 agents (h0..h3, 2 GPUs each), written run by run, then applied to the history.
class Cluster {
 public:
  struct Run {
    std::vector<int> hosts;  // 2 ranks per host, on its GPUs 0 and 1
    bool fails = false;
    int culprit_rank = -1;
    std::string cause_kind = "exited";
    std::vector<std::pair<int, proto::GpuFaultSeen>> faults;  // (rank, fault)
  };

  void add(const std::string& job, double time, const Run& run) {
    const int world = static_cast<int>(run.hosts.size()) * 2;
    const std::string leader = host(run.hosts[0]);
    for (size_t h = 0; h < run.hosts.size(); ++h) {
      const std::string agent = host(run.hosts[h]);
      proto::JournalRecord& a = next(agent, job, time, "agent:" + agent);
      a.mutable_job_accepted()->set_name("train");
      a.mutable_job_accepted()->set_world_size(world);
      a.mutable_job_accepted()->set_agent(leader);
      for (int local = 0; local < 2; ++local) {
        auto* assignment = a.mutable_job_accepted()->add_ranks();
        assignment->set_rank(static_cast<int>(h) * 2 + local);
        assignment->set_local_rank(local);
      }
      for (int local = 0; local < 2; ++local) {
        const int rank = static_cast<int>(h) * 2 + local;
        proto::JournalRecord& s = next(agent, job, time + 1, "rank:" + std::to_string(rank));
        s.mutable_rank_started()->set_rank(rank);
        s.mutable_rank_started()->set_local_rank(local);
        s.mutable_rank_started()->set_device(deviceOf(run.hosts[h], local));
      }
    }
    for (size_t h = 0; h < run.hosts.size(); ++h) {
      const std::string agent = host(run.hosts[h]);
      for (int local = 0; local < 2; ++local) {
        const int rank = static_cast<int>(h) * 2 + local;
        proto::JournalRecord& x = next(agent, job, time + 5, "rank:" + std::to_string(rank));
        x.mutable_rank_exited()->set_rank(rank);
        x.mutable_rank_exited()->set_state(
            run.fails && rank == run.culprit_rank ? proto::FAILED : proto::SUCCEEDED);
      }
    }
    for (const auto& [rank, fault] : run.faults) {
      const std::string agent = host(run.hosts[static_cast<size_t>(rank / 2)]);
      *next(agent, job, time + 2, "host:" + agent).mutable_gpu_fault() = fault;
    }
    if (run.fails) {
      proto::JournalRecord& f = next(leader, job, time + 3, "agent:" + leader);
      f.mutable_job_failure()->set_kind(run.cause_kind);
      f.mutable_job_failure()->set_rank(run.culprit_rank);
      f.mutable_job_failure()->set_agent(
          host(run.hosts[static_cast<size_t>(run.culprit_rank / 2)]));
      f.mutable_job_failure()->set_cause("rank " + std::to_string(run.culprit_rank) + " failed");
    }
    proto::JournalRecord& o = next(leader, job, time + 4, "agent:" + leader);
    o.mutable_job_outcome()->set_state(run.fails ? proto::FAILED : proto::SUCCEEDED);
    o.mutable_job_outcome()->set_attempts(1);
  }

  void applyTo(store::Writer& history) {
    for (auto& [agent, records] : journals_) {
      ASSERT_TRUE(history.applyJournal(agent, "j-" + agent, records, records.size() + 1).isOk());
    }
  }

  static std::string host(int h) { return "gpu0" + std::to_string(h); }

 private:
  proto::JournalRecord& next(const std::string& agent, const std::string& job, double time,
                             const std::string& source) {
    auto& records = journals_[agent];
    proto::JournalRecord& r = records.emplace_back();
    r.set_seq(records.size());
    r.set_time(time);
    r.set_job(job);
    r.set_attempt(1);
    r.set_source(source);
    return r;
  }
  std::map<std::string, std::vector<proto::JournalRecord>> journals_;
};

class HardwareReportTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("rm-hardware-" + std::to_string(::getpid()) + "-" +
            testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    auto writer = store::Writer::open((dir_ / "history.db").string());
    ASSERT_TRUE(writer.isOk()) << writer.status().message();
    history_ = std::move(*writer);
  }
  void TearDown() override {
    history_.reset();
    std::filesystem::remove_all(dir_);
  }

  HardwareReport reportOf(Cluster& cluster, double since = 0) {
    cluster.applyTo(*history_);
    auto runs = hardwareRuns(*history_, since);
    EXPECT_TRUE(runs.isOk()) << runs.status().message();
    return runs.isOk() ? hardwareReport(*runs) : HardwareReport{};
  }

  // 36 runs of 2 hosts each, every pair of hosts in turn; `bad` GPU (host 2, GPU 1) fails the
  // runs it is in, but one, with its own rank first; and one run elsewhere fails by bad luck.
  static void plant(Cluster& cluster, bool bad) {
    const std::vector<std::vector<int>> pairs = {{0, 1}, {2, 3}, {0, 2}, {1, 3}, {0, 3}, {1, 2}};
    int bad_runs = 0;
    for (int i = 0; i < 36; ++i) {
      Cluster::Run run;
      run.hosts = pairs[static_cast<size_t>(i) % pairs.size()];
      const bool on_bad = run.hosts[0] == 2 || run.hosts[1] == 2;
      if (bad && on_bad && i % 3 == 1 && bad_runs < 5) {
        ++bad_runs;
        run.fails = bad_runs != 3;                     // 4 of the 5 chosen runs on it fail
        run.culprit_rank = run.hosts[0] == 2 ? 1 : 3;  // the rank on host 2's GPU 1
        if (bad_runs == 4) run.cause_kind = "hung";
      }
      if (i == 6) {  // bad luck on hosts 0 and 1
        run.fails = true;
        run.culprit_rank = 0;
      }
      cluster.add("job-" + std::to_string(100 + i), 1000 + 100.0 * i, run);
    }
  }

  std::filesystem::path dir_;
  std::unique_ptr<store::Writer> history_;
};

TEST_F(HardwareReportTest, ThePlantedFlakyGpuIsNamedWithItsRuns) {
  Cluster cluster;
  plant(cluster, true);
  const HardwareReport report = reportOf(cluster);
  EXPECT_EQ(report.runs, 36);
  EXPECT_EQ(report.failed, 5);
  EXPECT_EQ(report.succeeded, 31);
  ASSERT_EQ(report.outliers.size(), 1u) << testing::PrintToString(report.outliers);
  EXPECT_EQ(report.outliers[0],
            "GPU GPU-213f2c1a\u2026 (GPU 1, NVIDIA H100 80GB HBM3) on gpu02 was in 4 of the 5 "
            "failed runs and in 14 of 31 succeeded runs; its rank failed first in all 4; 1 of "
            "those runs hung");
  const auto bad = std::find_if(report.entities.begin(), report.entities.end(),
                                [](const HardwareEntity& e) { return e.id == uuidOf(2, 1); });
  ASSERT_NE(bad, report.entities.end());
  EXPECT_TRUE(bad->outlier);
  EXPECT_EQ(bad->failed_jobs.size(), 4u);
  EXPECT_LT(bad->p_value, 0.01);
  // Its host is explained by it, and its neighbour GPU 0 (in the same runs) was not first to fail.
  for (const HardwareEntity& e : report.entities) {
    if (e.id != uuidOf(2, 1)) {
      EXPECT_FALSE(e.outlier) << e.id;
    }
  }
  // Hosts first, by name, then GPUs by host and index.
  ASSERT_EQ(report.entities.size(), 12u);
  EXPECT_EQ(report.entities[0].id, "gpu00");
  EXPECT_EQ(report.entities[4].id, uuidOf(0, 0));
  EXPECT_EQ(report.entities[11].id, uuidOf(3, 1));
}

TEST_F(HardwareReportTest, ACleanHistoryNamesNothing) {
  Cluster cluster;
  plant(cluster, false);
  const HardwareReport report = reportOf(cluster);
  EXPECT_EQ(report.failed, 1);
  EXPECT_TRUE(report.outliers.empty()) << testing::PrintToString(report.outliers);
  for (const HardwareEntity& e : report.entities) EXPECT_FALSE(e.outlier) << e.id;
}

TEST_F(HardwareReportTest, GpuFaultEventsAreStoredAndCountedUnderTheirGpu) {
  Cluster cluster;
  Cluster::Run run;
  run.hosts = {0, 1};
  proto::GpuFaultSeen xid;
  xid.set_gpu_index(0);
  xid.set_gpu_uuid(uuidOf(1, 0));
  xid.set_kind("xid");
  xid.set_severity("critical");
  xid.set_text("XID 79: the GPU has fallen off the bus");
  xid.add_ranks(2);
  proto::GpuFaultSeen clocks = xid;
  clocks.set_kind("clocks");
  clocks.set_severity("warning");
  clocks.set_text("clocks held at 705 of 1980 MHz: thermal slowdown (driver)");
  run.faults = {{2, clocks}, {2, xid}};
  cluster.add("job-1", 5000, run);
  const HardwareReport report = reportOf(cluster);

  auto events = history_->events("job-1");
  ASSERT_TRUE(events.isOk());
  std::vector<store::EventRow> faults;
  for (const auto& e : *events) {
    if (e.kind == "gpu_fault") faults.push_back(e);
  }
  ASSERT_EQ(faults.size(), 2u);
  EXPECT_EQ(faults[1].detail, "GPU 0 on gpu01 (" + uuidOf(1, 0) +
                                  ") under rank 2: XID 79: the GPU has fallen off the bus");
  EXPECT_TRUE(faults[1].problem);
  EXPECT_FALSE(faults[0].problem);  // a warning is not the job's failure
  EXPECT_EQ(faults[1].rank, 2);
  EXPECT_EQ(faults[1].rank_agent, "gpu01");
  EXPECT_EQ(faults[1].cause_kind, "xid");

  ASSERT_EQ(report.outliers.size(), 1u) << testing::PrintToString(report.outliers);
  EXPECT_EQ(report.outliers[0],
            "GPU GPU-103f2c1a\u2026 (GPU 0, NVIDIA H100 80GB HBM3) on gpu01 was in 1 run, none "
            "failed; 1 critical GPU fault under its ranks, the last: " +
                faults[1].detail);
  const auto gpu = std::find_if(report.entities.begin(), report.entities.end(),
                                [](const HardwareEntity& e) { return e.id == uuidOf(1, 0); });
  ASSERT_NE(gpu, report.entities.end());
  EXPECT_EQ(gpu->xids, 1);
  EXPECT_EQ(gpu->critical_faults, 1);
}

// Each host's record for checkpoint economics: 4 s of each of its 2 ranks per run, and the
// failures that began on it.
TEST_F(HardwareReportTest, HostRecordsCountRankTimeAndFirstFailures) {
  Cluster cluster;
  plant(cluster, true);
  cluster.applyTo(*history_);
  auto records = history_->hostRecords();
  ASSERT_TRUE(records.isOk()) << records.status().message();
  ASSERT_EQ(records->size(), 4u);
  EXPECT_EQ((*records)[0].agent, "gpu00");
  EXPECT_EQ((*records)[0].failures, 1);  // the bad-luck run
  EXPECT_EQ((*records)[2].failures, 4);  // the flaky GPU's host
  EXPECT_EQ((*records)[1].failures + (*records)[3].failures, 0);
  for (const auto& record : *records) EXPECT_DOUBLE_EQ(record.rank_seconds, 18 * 2 * 4.0);
  auto recent = history_->hostRecords(1000 + 100.0 * 30);
  ASSERT_TRUE(recent.isOk());
  double seconds = 0;
  for (const auto& record : *recent) seconds += record.rank_seconds;
  EXPECT_DOUBLE_EQ(seconds, 6 * 4 * 4.0);  // 6 runs of 4 ranks
}

TEST_F(HardwareReportTest, SinceLeavesOutOlderRuns) {
  Cluster cluster;
  plant(cluster, true);
  const HardwareReport report = reportOf(cluster, 1000 + 100.0 * 30);
  EXPECT_EQ(report.runs, 6);
}

// The case, without a first-failing rank to go by: a GPU in 4 of the 5 failed runs and
// in none of the 31 that succeeded stands out by its presence alone; one in half of the runs of
// every kind does not.
TEST(HardwareReportOfRuns, PresenceInFailedRunsAloneNamesAGpu) {
  std::vector<HardwareRun> runs;
  for (int i = 0; i < 36; ++i) {
    HardwareRun run;
    run.job_id = "job-" + std::to_string(i);
    run.outcome = i < 5 ? "failed" : "succeeded";
    run.places.push_back(placeOf("gpu01", "GPU 0 (GPU-aaaa)"));
    run.places.push_back(
        placeOf(i % 2 ? "gpu02" : "gpu03", "GPU 0 (GPU-" + std::to_string(i % 2) + ")"));
    if (i < 4) run.places.push_back(placeOf("gpu07", "GPU 3 (GPU-3f2c1a9e-77)"));
    runs.push_back(std::move(run));
  }
  const HardwareReport report = hardwareReport(runs);
  ASSERT_EQ(report.outliers.size(), 1u) << testing::PrintToString(report.outliers);
  EXPECT_EQ(report.outliers[0],
            "GPU GPU-3f2c1a9e\u2026 (GPU 3) on gpu07 was in 4 of the 5 failed runs and in 0 of 31 "
            "succeeded runs");
}

TEST(PlaceOf, ReadsTheDeviceText) {
  const auto place = placeOf("gpu07", "GPU 12 NVIDIA A100-SXM4-40GB (GPU-abc)");
  EXPECT_EQ(place.gpu_index, 12);
  EXPECT_EQ(place.gpu_name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(place.gpu_uuid, "GPU-abc");
  EXPECT_EQ(placeOf("h", "GPU 3").gpu_index, 3);
  EXPECT_EQ(placeOf("h", "GPU 3").gpu_uuid, "");
  EXPECT_EQ(placeOf("h", "CPU: no GPU on this agent").gpu_index, -1);
  EXPECT_EQ(placeOf("h", "").gpu_index, -1);
  EXPECT_EQ(shortGpuUuid("GPU-3f2c1a9e-0000-1111"), "GPU-3f2c1a9e\u2026");
}

}  // namespace
}  // namespace ringmaster::hardware
