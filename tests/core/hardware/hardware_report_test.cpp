// The hardware report over a real history file written as agents' journals would write it: a
// planted flaky GPU is named, with its runs; a clean history names nothing; a GPU fault event
// is stored and counted under the GPU it was seen on.
#include "ringmaster/hardware/hardware_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "planted_history.h"
#include "ringmaster/store/writer.h"

namespace ringmaster::hardware {
namespace {

std::vector<std::string> outlierTexts(const HardwareReport& report) {
  std::vector<std::string> out;
  for (const auto& outlier : report.outliers) out.push_back(outlier.text);
  return out;
}

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

  HardwareReport reportOf(PlantedCluster& cluster, double since = 0) {
    cluster.applyTo(*history_);
    auto runs = hardwareRuns(*history_, since);
    EXPECT_TRUE(runs.isOk()) << runs.status().message();
    return runs.isOk() ? hardwareReport(*runs) : HardwareReport{};
  }

  std::filesystem::path dir_;
  std::unique_ptr<store::Writer> history_;
};

TEST_F(HardwareReportTest, ThePlantedFlakyGpuIsNamedWithItsRuns) {
  PlantedCluster cluster;
  plantRuns(cluster, true);
  const HardwareReport report = reportOf(cluster);
  EXPECT_EQ(report.runs, 36);
  EXPECT_EQ(report.failed, 5);
  EXPECT_EQ(report.succeeded, 31);
  ASSERT_EQ(report.outliers.size(), 1u) << testing::PrintToString(outlierTexts(report));
  EXPECT_EQ(report.outliers[0].text,
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
  PlantedCluster cluster;
  plantRuns(cluster, false);
  const HardwareReport report = reportOf(cluster);
  EXPECT_EQ(report.failed, 1);
  EXPECT_TRUE(report.outliers.empty()) << testing::PrintToString(outlierTexts(report));
  for (const HardwareEntity& e : report.entities) EXPECT_FALSE(e.outlier) << e.id;
}

// A GPU that fails nothing but computes 1.6x as long holds every run it is in back: named as
// slow, with how often and by how much; its host is not named again. The same runs without it,
// hiccups of a busy host included, name nothing.
TEST_F(HardwareReportTest, AGpuThatHoldsItsRunsBackIsNamedAsSlowNotFailing) {
  PlantedCluster cluster;
  plantStepRuns(cluster, true);
  HardwareReport report = reportOf(cluster);
  EXPECT_EQ(report.runs, 12);
  EXPECT_EQ(report.failed, 0);
  ASSERT_EQ(report.outliers.size(), 1u) << testing::PrintToString(outlierTexts(report));
  const HardwareEntity& gpu = report.entities[report.outliers[0].entity];
  EXPECT_EQ(gpu.id, uuidOf(3, 0));
  EXPECT_EQ(gpu.held_back, 6);
  EXPECT_NEAR(gpu.held_back_ratio, 1.6, 0.05);
  EXPECT_EQ(
      report.outliers[0].text.rfind("GPU GPU-303f2c1a\u2026 (GPU 0, NVIDIA H100 80GB HBM3) on "
                                    "gpu03 held the others back in 6 of its 6 runs (up to "
                                    "1.6",
                                    0),
      0u)
      << report.outliers[0].text;
  for (const HardwareEntity& e : report.entities) {
    const bool slow = e.id == "gpu03" || e.id == uuidOf(3, 0);
    EXPECT_EQ(e.held_back, slow ? 6 : 0) << e.id;
  }
}

TEST_F(HardwareReportTest, ABusyHostsHiccupsHoldNobodyBack) {
  PlantedCluster cluster;
  plantStepRuns(cluster, false);
  HardwareReport report = reportOf(cluster);
  EXPECT_EQ(report.runs, 12);
  EXPECT_TRUE(report.outliers.empty()) << testing::PrintToString(outlierTexts(report));
  for (const HardwareEntity& e : report.entities) EXPECT_EQ(e.held_back, 0) << e.id;
}

TEST_F(HardwareReportTest, GpuFaultEventsAreStoredAndCountedUnderTheirGpu) {
  PlantedCluster cluster;
  PlantedCluster::Run run;
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

  ASSERT_EQ(report.outliers.size(), 1u) << testing::PrintToString(outlierTexts(report));
  EXPECT_EQ(report.outliers[0].text,
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
  PlantedCluster cluster;
  plantRuns(cluster, true);
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

// Crash drills (ringmasterctl kill) end attempts as someone asked: five of them on gpu01 make
// it neither a failing host in the report nor a host that fails in the checkpoint economics.
TEST_F(HardwareReportTest, CrashDrillsAreNotTheHardwaresFailures) {
  PlantedCluster cluster;
  plantRuns(cluster, false);
  for (int i = 0; i < 5; ++i) {
    PlantedCluster::Run drill;
    drill.hosts = {1, 2};
    drill.fails = true;
    drill.culprit_rank = 0;  // on gpu01
    drill.cause_kind = "drill";
    cluster.add("drill-" + std::to_string(i), 9000 + 10.0 * i, drill);
  }
  HardwareReport report = reportOf(cluster);
  EXPECT_EQ(report.runs, 41);
  EXPECT_EQ(report.failed, 1);  // plantRuns' bad luck on gpu00, and no drill
  EXPECT_TRUE(report.outliers.empty()) << testing::PrintToString(outlierTexts(report));
  for (const HardwareEntity& e : report.entities) {
    if (e.id == "gpu01") {
      EXPECT_EQ(e.failed_first, 0);
      EXPECT_EQ(e.runs, 18 + 5);
    }
  }
  auto records = history_->hostRecords();
  ASSERT_TRUE(records.isOk()) << records.status().message();
  for (const auto& record : *records) {
    EXPECT_EQ(record.failures, record.agent == "gpu00" ? 1 : 0) << record.agent;
  }
}

TEST_F(HardwareReportTest, SinceLeavesOutOlderRuns) {
  PlantedCluster cluster;
  plantRuns(cluster, true);
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
  ASSERT_EQ(report.outliers.size(), 1u) << testing::PrintToString(outlierTexts(report));
  EXPECT_EQ(report.outliers[0].text,
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
