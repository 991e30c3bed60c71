// Compare: runs overlaid by step, by the time since each run started, or by the wall clock; the
// hover names a run without a point there.
#include "dashboard/compare_view.h"

#include <gtest/gtest.h>

#include <QComboBox>
#include <QDir>
#include <QLabel>
#include <QSettings>
#include <QTest>
#include <filesystem>
#include <fstream>

#include "past_run.h"
#include "qt_wait.h"

namespace ringmaster::gui {
namespace {

constexpr double kT0 = 1795442400.0;  // 2026-11-23 14:00:00 UTC

// A finished 1-rank run that started at `start` and reported `steps` losses, one a second.
client::JobSnapshot run(const std::string& id, const std::string& name, double start, int steps) {
  client::JobSnapshot s;
  s.job.job_id = id;
  s.job.name = name;
  s.job.state = "succeeded";
  s.job.world_size = 1;
  s.job.attempt = 1;
  s.job.submitted_at = start;
  s.job.finished_at = start + steps + 1;
  store::RankRow rank;
  rank.job_id = id;
  rank.attempt = 1;
  rank.state = "succeeded";
  rank.last_step = steps;
  s.ranks.push_back(rank);
  for (int step = 1; step <= steps; ++step) {
    s.metrics.push_back({id, 1, 0, step, "loss", 1.0 / step, start + step});
  }
  return s;
}

// A name as the legend writes it: its hyphens non-breaking.
QString shown(QString name) { return name.replace('-', QChar(0x2011)); }

class CompareViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    QSettings().remove(CompareView::kXAxisKey);
    QSettings().remove("compare/hidden");
  }
};

// Run b started an hour after run a and stopped after 5 of a's 10 steps.
std::vector<std::pair<QString, client::JobSnapshot>> twoRuns() {
  return {{"run-a-0001", run("run-a-0001", "run-a", kT0, 10)},
          {"run-b-0002", run("run-b-0002", "run-b", kT0 + 3600, 5)}};
}

TEST_F(CompareViewTest, TheXAxisChoiceSetsEveryChartsAxisAndOrigin) {
  CompareView view(twoRuns());
  view.resize(900, 400);
  view.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
  ASSERT_EQ(view.charts().size(), 1u);  // loss
  MetricChart* chart = view.charts().front();
  auto* box = view.findChild<QComboBox*>("compareXAxis");
  ASSERT_NE(box, nullptr);
  EXPECT_EQ(view.xChoice(), CompareView::XChoice::kStep);
  EXPECT_EQ(chart->xAxis(), metrics::Axis::kStep);
  EXPECT_FALSE(chart->timeOrigin());
  EXPECT_LE(chart->xRange().second, 11);

  // Time since start: both runs begin at 0:00, b's line moved back the hour it started later.
  box->setCurrentIndex(1);
  EXPECT_EQ(view.xChoice(), CompareView::XChoice::kRelativeTime);
  EXPECT_EQ(chart->xAxis(), metrics::Axis::kTime);
  ASSERT_TRUE(chart->timeOrigin());
  EXPECT_DOUBLE_EQ(*chart->timeOrigin(), kT0);
  ASSERT_EQ(chart->lines().size(), 2u);
  EXPECT_DOUBLE_EQ(chart->lines()[1].series->at(0).time, kT0 + 1);
  EXPECT_LT(chart->xRange().second - chart->xRange().first, 600);  // not the hour between them
  EXPECT_EQ(QSettings().value(CompareView::kXAxisKey).toInt(), 1);
  const QString shots = QStringLiteral(RM_BIN_DIR "/../screenshots");
  ASSERT_TRUE(QDir().mkpath(shots));
  EXPECT_TRUE(view.grab().save(shots + "/compare-relative-time.png"));

  // Wall time: b an hour to the right, the clock on the axis.
  view.setXChoice(CompareView::XChoice::kWallTime);
  EXPECT_EQ(box->currentIndex(), 2);
  EXPECT_EQ(chart->xAxis(), metrics::Axis::kTime);
  EXPECT_FALSE(chart->timeOrigin());
  EXPECT_DOUBLE_EQ(chart->lines()[1].series->at(0).time, kT0 + 3601);
  EXPECT_GT(chart->xRange().second - chart->xRange().first, 3600);

  // A new compare opens on the axis chosen last.
  CompareView again(twoRuns());
  EXPECT_EQ(again.xChoice(), CompareView::XChoice::kWallTime);
  EXPECT_EQ(again.charts().front()->xAxis(), metrics::Axis::kTime);
}

// Two strategies side by side: what each sends per step gets a chart of its own, one line a run.
TEST_F(CompareViewTest, BytesSentAndCompressionErrorAreComparedToo) {
  auto runs = twoRuns();
  for (auto& [id, snapshot] : runs) {
    const double bytes = id == "run-a-0001" ? 103356.0 : 4128.0;
    for (int step = 1; step <= 5; ++step) {
      snapshot.metrics.push_back({id.toStdString(), 1, 0, step, "bytes_sent", bytes, kT0 + step});
    }
  }
  runs[1].second.metrics.push_back({"run-b-0002", 1, 0, 5, "compression_error", 0.96, kT0 + 5});
  // A pipeline run's bubble (the stage-by-stage idle share of a step) is compared as well.
  runs[0].second.metrics.push_back({"run-a-0001", 1, 0, 5, "bubble_fraction", 0.2, kT0 + 5});
  CompareView view(runs);
  std::vector<QString> titles;
  for (MetricChart* chart : view.charts()) titles.push_back(chart->title());
  ASSERT_EQ(titles,
            (std::vector<QString>{"loss", "bubble_fraction", "bytes_sent", "compression_error"}));
  EXPECT_EQ(view.charts()[1]->lines().size(), 1u);  // only the pipeline run has it
  EXPECT_EQ(view.charts()[2]->lines().size(), 2u);
  EXPECT_EQ(view.charts()[3]->lines().size(), 1u);  // only the compressed run has it
}

TEST_F(CompareViewTest, TheHoverNamesARunWithoutAPointThere) {
  CompareView view(twoRuns());
  view.resize(900, 400);
  view.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
  for (CompareView::XChoice choice :
       {CompareView::XChoice::kStep, CompareView::XChoice::kRelativeTime}) {
    view.setXChoice(choice);
    MetricChart* chart = view.charts().front();
    // Step 8, or 8 s after the start: only run a got there.
    const double x = choice == CompareView::XChoice::kStep ? 8 : kT0 + 8;
    const ChartView::Readout readout = chart->readoutAt(chart->xToPixel(x));
    QStringList rows;
    for (const auto& row : readout.rows) rows << row.text;
    EXPECT_TRUE(rows.join("\n").contains("no data here: run-b")) << rows.join(" | ").toStdString();
  }
}

// Runs are named by their job names; ids only where names repeat (all of them in the tooltip).
TEST_F(CompareViewTest, TheLegendAddsJobIdsOnlyWhereNamesRepeat) {
  CompareView distinct(twoRuns());
  auto* legend = distinct.findChild<QLabel*>("compare.legend");
  ASSERT_NE(legend, nullptr);
  EXPECT_TRUE(legend->text().contains(shown("run-a"))) << legend->text().toStdString();
  EXPECT_FALSE(legend->text().contains(shown("run-a-0001"))) << legend->text().toStdString();
  EXPECT_EQ(legend->toolTip(), "run-a-0001\nrun-b-0002");
  CompareView same({{"run-a-0001", run("run-a-0001", "tiny", kT0, 3)},
                    {"run-a-0002", run("run-a-0002", "tiny", kT0, 3)}});
  legend = same.findChild<QLabel*>("compare.legend");
  EXPECT_TRUE(legend->text().contains(shown("tiny · run-a-0001"))) << legend->text().toStdString();
  EXPECT_TRUE(legend->text().contains(shown("tiny · run-a-0002"))) << legend->text().toStdString();
}

// Issue 35: a run deleted in the History stayed drawn in an open comparison.
TEST_F(CompareViewTest, ADeletedRunIsNotDrawnUntilItsDeleteIsUndone) {
  CompareView view(twoRuns());
  ASSERT_FALSE(view.charts().empty());
  MetricChart* loss = view.charts().front();
  ASSERT_EQ(loss->lines().size(), 2u);
  view.setRunsDeleted({"run-b-0002", "not-compared"}, true);
  ASSERT_EQ(loss->lines().size(), 1u);
  EXPECT_EQ(loss->lines()[0].label, "run-a");
  auto* legend = view.findChild<QLabel*>("compare.legend");
  EXPECT_TRUE(legend->text().contains("deleted, not drawn: run-b")) << legend->text().toStdString();
  view.setRunsDeleted({"run-b-0002"}, false);
  EXPECT_EQ(loss->lines().size(), 2u);
  EXPECT_FALSE(legend->text().contains("deleted")) << legend->text().toStdString();
}

// Issue 35: a run hidden in a comparison's legend came back when the comparison was reopened.
TEST_F(CompareViewTest, ARunHiddenInTheLegendStaysHiddenOnEveryChartAndWhenReopened) {
  const auto visibleLabels = [](const CompareView& view) {
    QStringList shown;
    for (MetricChart* chart : view.charts()) {
      for (const ChartLine& line : chart->lines()) {
        if (line.visible) shown << line.label;
      }
    }
    return shown;
  };
  {
    CompareView view(twoRuns());
    ASSERT_FALSE(view.charts().empty());
    // A click on run-b's legend entry in one chart.
    MetricChart* loss = view.charts().front();
    loss->setLineVisible(1, false);
    emit loss->lineVisibilityToggled(1, false);
    EXPECT_FALSE(visibleLabels(view).contains("run-b"));
    EXPECT_TRUE(visibleLabels(view).contains("run-a"));
  }
  CompareView again(twoRuns());
  EXPECT_FALSE(visibleLabels(again).contains("run-b"));
  again.setRunHidden("run-b-0002", false);
  EXPECT_TRUE(visibleLabels(again).contains("run-b"));
  CompareView third(twoRuns());
  EXPECT_TRUE(visibleLabels(third).contains("run-b"));
}

// Opened from a real history through a running session: each run is read and built on the
// session's history worker and handed to the view on the GUI thread; a Compare closed before its
// runs arrive is not called back.
TEST_F(CompareViewTest, RunsReadFromTheHistoryOffTheGuiThreadReachOnlyAnOpenView) {
  char pattern[] = "/tmp/rm_compare_XXXXXX";
  const std::string dir = mkdtemp(pattern);
  for (const char* id : {"run-a", "run-b"}) {
    const Status written =
        testing::writePastRun(dir + "/history.db", {.job_id = id, .world = 8, .steps = 300});
    ASSERT_TRUE(written.isOk()) << written.toString();
  }
  std::ofstream(dir + "/cluster.yaml").flush();  // no agents
  SessionBridge bridge;
  const Status started =
      bridge.start({dir + "/cluster.yaml", dir + "/history.db", dir + "/config"});
  ASSERT_TRUE(started.isOk()) << started.toString();
  auto closed = std::make_unique<CompareView>(&bridge, QStringList{"run-a", "run-b"});
  EXPECT_FALSE(closed->loaded());
  closed.reset();
  CompareView view(&bridge, {"run-a", "run-b", "no-such-run"});
  EXPECT_FALSE(view.loaded());
  ASSERT_TRUE(waitFor([&] { return view.loaded(); }, 30000));
  ASSERT_FALSE(view.charts().empty());
  MetricChart* loss = nullptr;
  for (MetricChart* chart : view.charts()) {
    if (chart->title() == "loss") loss = chart;
  }
  ASSERT_NE(loss, nullptr);
  ASSERT_EQ(loss->lines().size(), 2u);
  EXPECT_EQ(loss->lines()[0].series->size(), 300u);
  bridge.stop();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ringmaster::gui
