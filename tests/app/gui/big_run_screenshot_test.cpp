// An 8-rank and a 64-rank run (8 hosts of 8 GPUs) as an agent would have journaled them, stored in
// a real SQLite history and opened from it in the app: the dashboard at 1280x720 and 1024x600 in
// both palettes (build/screenshots/big-run-*.png), with what a person must see at a glance checked.
// Rank 5 of 8, or rank 37 of 64, computes twice as slowly from half the run on.
#include <gtest/gtest.h>

#include <QApplication>
#include <QChartView>
#include <QHeaderView>
#include <QListWidget>
#include <QMouseEvent>
#include <QSettings>
#include <QTabWidget>
#include <QTableView>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "charts/metric_chart.h"
#include "charts_drawn.h"
#include "dashboard/dashboard_view.h"
#include "dashboard/rank_table_model.h"
#include "main_window.h"
#include "past_run.h"
#include "qt_wait.h"
#include "straggler/straggler_heatmap.h"
#include "theme.h"

namespace ringmaster::gui {
namespace {

constexpr double kStart = 1.76e9;
constexpr int kSteps = 300;

// The run's records, one journal per host, written to `db`.
void writeRun(const std::string& db, const std::string& job, int world, int slow_rank) {
  const Status written = testing::writePastRun(db, {.job_id = job,
                                                    .world = world,
                                                    .steps = kSteps,
                                                    .slow_rank = slow_rank,
                                                    .checkpoint_every = 100,
                                                    .start = kStart});
  ASSERT_TRUE(written.isOk()) << written.message();
}

std::string host(int index) { return testing::pastRunHost(index); }

class BigRunScreenshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/rm_big_run_XXXXXX";
    root_ = mkdtemp(pattern);
    setenv("HOME", root_.c_str(), 1);
    setenv("XDG_CONFIG_HOME", (root_ + "/config").c_str(), 1);
    setenv("RINGMASTER_CONFIG_DIR", (root_ + "/config/ringmaster").c_str(), 1);
    setenv("RINGMASTER_CLUSTER", (root_ + "/cluster.yaml").c_str(), 1);
    setenv("RINGMASTER_DB", (root_ + "/history.db").c_str(), 1);
    std::FILE* empty = std::fopen((root_ + "/cluster.yaml").c_str(), "w");  // no agents
    std::fclose(empty);
  }
  void TearDown() override {
    applyTheme(*qApp, Theme::kDark);
    std::filesystem::remove_all(root_);
  }

  // The run's dashboard, opened from the history, at each size in each palette.
  void shoot(int world, int slow_rank) {
    const std::string job = "run-" + std::to_string(world);
    writeRun(root_ + "/history.db", job, world, slow_rank);
    MainWindow window(AppOptions{.resources_dir = QString(RM_SOURCE_DIR) + "/resources"});
    window.resize(1280, 720);
    window.show();
    ASSERT_TRUE(window.start());
    DashboardView* view = window.openDashboard(QString::fromStdString(job), /*live=*/false);
    ASSERT_NE(view, nullptr);
    ASSERT_TRUE(waitFor([&] { return view->loaded(); }, 30000));
    view->refreshNow();
    EXPECT_EQ(view->job().state(), "succeeded");
    EXPECT_EQ(view->rankModel()->rowCount(), world);
    // The straggler is named, over the recent window, at about its 2x.
    EXPECT_EQ(view->heatmap()->slowestRank(), slow_rank);
    EXPECT_GT(view->heatmap()->slowestRatio(), 1.6);
    EXPECT_TRUE(view->headline().contains(QString("slowest: rank %1 (%2)")
                                              .arg(slow_rank)
                                              .arg(QString::fromStdString(host(slow_rank / 8)))))
        << view->headline().toStdString();
    // Three checkpoints, as events.
    int checkpoints = 0;
    for (const JobEvent& e : view->job().events()) checkpoints += e.kind == "checkpoint";
    EXPECT_EQ(checkpoints, kSteps / 100);
    // The hover readout stays readable: at most kMaxReadoutRows rows, the rest counted.
    MetricChart* loss = view->chart("loss");
    ASSERT_NE(loss, nullptr);
    const auto readout = loss->readoutAt(loss->xToPixel(kSteps / 2.0));
    EXPECT_LE(static_cast<int>(readout.rows.size()), MetricChart::kMaxReadoutRows + 2);
    // Hovering a step chart shows the same moment on the hosts' GPU chart (a time axis).
    MetricChart* gpus = view->chart("GPU utilization %");
    ASSERT_NE(gpus, nullptr);
    const double moment = *loss->timeAtX(kSteps / 2.0);
    Q_EMIT loss->hoverMoved(kSteps / 2.0, moment);
    ASSERT_TRUE(gpus->echoPixel());
    EXPECT_NEAR(*gpus->echoPixel(), gpus->xToPixel(moment), 0.5);
    EXPECT_FALSE(loss->echoPixel());  // its own crosshair is the hover's
    MetricChart* step_time = view->chart("step time (s)");
    ASSERT_NE(step_time, nullptr);
    ASSERT_TRUE(step_time->echoPixel());
    EXPECT_NEAR(*step_time->echoPixel(), step_time->xToPixel(kSteps / 2.0), 0.5);
    Q_EMIT loss->hoverMoved(std::numeric_limits<double>::quiet_NaN(),
                            std::numeric_limits<double>::quiet_NaN());
    EXPECT_FALSE(gpus->echoPixel());
    // A chart's hover with every rank and the job total (issue 35: it listed 4 of 8).
    if (MetricChart* samples = view->chart("samples/s"); samples && world == 8) {
      auto* chart_view = samples->findChild<QChartView*>();
      ASSERT_NE(chart_view, nullptr);
      samples->grab();  // laid out, though scrolled out of sight: its plot area is known
      const QPoint at = chart_view->mapFromScene(chart_view->chart()->plotArea().center());
      QMouseEvent move(QEvent::MouseMove, QPointF(at), chart_view->viewport()->mapToGlobal(at),
                       Qt::NoButton, Qt::NoButton, Qt::NoModifier);
      QApplication::sendEvent(chart_view->viewport(), &move);
      const auto readout = samples->readoutAt(at.x());
      EXPECT_EQ(readout.rows.size(), static_cast<size_t>(world + 1));  // the ranks and the total
      ASSERT_TRUE(chartsDrawn());
      EXPECT_TRUE(samples->grab().save(
          QString("%1/../screenshots/big-run-8-ranks-hover.png").arg(RM_BIN_DIR)));
    }
    // The ranks' mean with their min-max band instead of 64 lines.
    view->setShowSpread(true);
    view->refreshNow();
    ASSERT_EQ(loss->lines().size(), 1u);
    EXPECT_EQ(loss->lines()[0].label, QString("mean of %1 ranks").arg(world));
    EXPECT_GT(loss->drawnBandPointCount(), 100);
    const RankSpread* spread = view->job().spread("loss");
    ASSERT_NE(spread, nullptr);
    EXPECT_EQ(spread->mean.size(), static_cast<size_t>(kSteps));
    const QString band_name =
        QString("%1/../screenshots/big-run-%2-ranks-band.png").arg(RM_BIN_DIR).arg(world);
    for (int i = 0; i < 5; ++i) QApplication::processEvents();
    ASSERT_TRUE(chartsDrawn());
    EXPECT_TRUE(window.grab().save(band_name));
    view->setShowSpread(false);
    view->refreshNow();
    EXPECT_EQ(loss->lines().size(), static_cast<size_t>(world));
    for (Theme theme : {Theme::kDark, Theme::kLight}) {
      applyTheme(*qApp, theme);
      for (auto [w, h] : {std::pair{1280, 720}, std::pair{1024, 600}}) {
        window.resize(w, h);
        for (int i = 0; i < 5; ++i) QApplication::processEvents();
        view->refreshNow();
        ASSERT_TRUE(chartsDrawn());
        const QString name = QString("%1/../screenshots/big-run-%2-ranks-%3-%4x%5.png")
                                 .arg(RM_BIN_DIR)
                                 .arg(world)
                                 .arg(theme == Theme::kDark ? "dark" : "light")
                                 .arg(w)
                                 .arg(h);
        EXPECT_TRUE(window.grab().save(name)) << name.toStdString();
        if (w == 1280) {  // the heatmap, scrolled below the charts in the window
          QString heatmap = name;
          heatmap.replace("-1280x720", "-heatmap");
          EXPECT_TRUE(view->heatmap()->grab().save(heatmap)) << heatmap.toStdString();
        }
        EXPECT_LE(window.width(), w + 1);  // nothing widened it
      }
    }
  }

  std::string root_;
};

TEST_F(BigRunScreenshotTest, EightRanks) { shoot(8, 5); }

// Issue 35: what a person set on a dashboard comes back with it in the next window: the lines
// hidden in the rank list, the rank table's sort, a chart's y range set by hand.
TEST_F(BigRunScreenshotTest, ADashboardComesBackWithItsLinesSortAndYRange) {
  writeRun(root_ + "/history.db", "run-8", 8, 5);
  const AppOptions options{.resources_dir = QString(RM_SOURCE_DIR) + "/resources"};
  {
    MainWindow window(options);
    window.show();
    ASSERT_TRUE(window.start());
    DashboardView* view = window.openDashboard("run-8", /*live=*/false);
    ASSERT_NE(view, nullptr);
    ASSERT_TRUE(waitFor([&] { return view->loaded(); }, 30000));
    view->refreshNow();
    auto* ranks = view->findChild<QListWidget*>("rankList");
    ASSERT_NE(ranks, nullptr);
    for (int i = 0; i < ranks->count(); ++i) {
      if (ranks->item(i)->data(Qt::UserRole).toInt() == 3)
        ranks->item(i)->setCheckState(Qt::Unchecked);
    }
    view->findChild<QTableView*>()->sortByColumn(RankTableModel::kStep, Qt::DescendingOrder);
    MetricChart* loss = view->chart("loss");
    ASSERT_NE(loss, nullptr);
    loss->setYRange(std::make_pair(0.0, 3.0));  // as "Set y range…" does
    emit loss->yAxisChosen();
    ASSERT_TRUE(window.close());
  }
  MainWindow again(options);
  again.show();
  ASSERT_TRUE(again.start());
  DashboardView* view = again.dashboard("run-8");
  ASSERT_NE(view, nullptr);
  ASSERT_TRUE(waitFor([&] { return view->loaded() && view->chart("loss"); }, 30000));
  view->refreshNow();
  auto* ranks = view->findChild<QListWidget*>("rankList");
  int hidden = 0;
  for (int i = 0; i < ranks->count(); ++i) {
    const bool off = ranks->item(i)->checkState() == Qt::Unchecked;
    hidden += off;
    if (off) {
      EXPECT_EQ(ranks->item(i)->data(Qt::UserRole).toInt(), 3);
    }
  }
  EXPECT_EQ(hidden, 1);
  const QHeaderView* header = view->findChild<QTableView*>()->horizontalHeader();
  EXPECT_EQ(header->sortIndicatorSection(), RankTableModel::kStep);
  EXPECT_EQ(header->sortIndicatorOrder(), Qt::DescendingOrder);
  ASSERT_TRUE(view->chart("loss")->manualYRange());
  EXPECT_EQ(*view->chart("loss")->manualYRange(), std::make_pair(0.0, 3.0));
  // Closing the tab forgets them.
  emit again.tabs()->tabCloseRequested(again.tabs()->indexOf(view));
  EXPECT_FALSE(QSettings().contains("dashboards/run-8/hiddenLines"));
}

TEST_F(BigRunScreenshotTest, SixtyFourRanksOnEightHosts) { shoot(64, 37); }

}  // namespace
}  // namespace ringmaster::gui
