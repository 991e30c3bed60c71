// The Hardware view (issue 39) on a report of generated runs: the planted flaky GPU is named on
// top with a way to its newest failed run and to restarting it without its host; the table has
// every host with its GPUs; a clean history names nothing. Screenshot: hardware_view.png.
#include "hardware/hardware_view.h"

#include <gtest/gtest.h>

#include <QApplication>
#include <QDir>
#include <QPushButton>
#include <QTreeWidget>

namespace ringmaster::gui {
namespace {

std::string uuid(int host, int gpu) {
  return "GPU-" + std::to_string(host) + std::to_string(gpu) + "7d1e3c-4a00-4000-8000-0000";
}

// 48 runs of 2 ranks on 2 of 6 hosts (4 GPUs each); with `bad`, gpu04's GPU 2 fails first in 5
// of the runs it is in.
std::vector<hardware::HardwareRun> runs(bool bad) {
  std::vector<hardware::HardwareRun> out;
  for (int i = 0; i < 48; ++i) {
    hardware::HardwareRun run;
    run.job_id = "run-" + std::to_string(1000 + i);
    run.attempt = 1;
    const int a = i % 6, b = (i / 6 + a + 1) % 6, gpu = i % 4;
    for (int host : {a, b}) {
      run.places.push_back(hardware::placeOf(
          "gpu0" + std::to_string(host),
          "GPU " + std::to_string(gpu) + " NVIDIA H100 80GB HBM3 (" + uuid(host, gpu) + ")"));
    }
    const bool on_bad = gpu == 2 && (a == 4 || b == 4);
    run.outcome = "succeeded";
    if ((bad && on_bad && i % 3 != 0) || i == 13) {
      run.outcome = "failed";
      run.failure = i == 13 ? "exited" : "signalled";
      run.culprit = i == 13 ? 0 : (a == 4 ? 0 : 1);
    }
    out.push_back(std::move(run));
  }
  return out;
}

std::string screenshotDir() {
  const std::string dir = std::string(RM_BIN_DIR) + "/../screenshots";
  QDir().mkpath(QString::fromStdString(dir));
  return dir;
}

TEST(HardwareView, NamesThePlantedGpuWithItsRunAndARestartWithoutItsHost) {
  HardwareView view;
  view.resize(1200, 700);
  const hardware::HardwareReport report = hardware::hardwareReport(runs(true));
  view.setReport(report);
  ASSERT_EQ(view.outlierTexts().size(), 1) << view.outlierTexts().join("\n").toStdString();
  EXPECT_TRUE(view.outlierTexts()[0].startsWith(
      QString::fromUtf8("GPU GPU-427d1e3c\u2026 (GPU 2, NVIDIA H100 80GB HBM3) on gpu04 was in ")))
      << view.outlierTexts()[0].toStdString();
  EXPECT_TRUE(view.summaryText().startsWith(QString("48 runs: %1 failed").arg(report.failed)));

  // Every host, each with the GPUs its runs used, the outlier's row in red.
  QTreeWidget* table = view.table();
  ASSERT_EQ(table->topLevelItemCount(), 6);
  QTreeWidgetItem* host4 = table->topLevelItem(4);
  EXPECT_EQ(host4->text(0), "gpu04");
  ASSERT_EQ(host4->childCount(), 4);
  QTreeWidgetItem* gpu2 = host4->child(2);
  EXPECT_TRUE(gpu2->text(0).startsWith("GPU 2 NVIDIA H100 80GB HBM3"))
      << gpu2->text(0).toStdString();
  EXPECT_EQ(gpu2->foreground(0).color(), QColor(0xef, 0x53, 0x50));
  EXPECT_EQ(host4->foreground(0).color(), table->topLevelItem(0)->foreground(0).color());

  QStringList opened;
  std::vector<std::pair<QString, QString>> restarts;
  QObject::connect(&view, &HardwareView::openRun, [&](const QString& id) { opened << id; });
  QObject::connect(
      &view, &HardwareView::restartWithout,
      [&](const QString& id, const QString& agent) { restarts.emplace_back(id, agent); });
  Q_EMIT table->itemActivated(gpu2, 0);
  ASSERT_EQ(opened.size(), 1);
  const auto* entity = &report.entities[report.outliers[0].entity];
  EXPECT_EQ(opened[0].toStdString(), entity->failed_jobs.front());
  auto* restart = view.findChild<QPushButton*>("restart-without");
  ASSERT_NE(restart, nullptr);
  EXPECT_EQ(restart->text(), "Restart it without gpu04");
  restart->click();
  ASSERT_EQ(restarts.size(), 1u);
  EXPECT_EQ(restarts[0].first.toStdString(), entity->failed_jobs.front());
  EXPECT_EQ(restarts[0].second, "gpu04");

  EXPECT_TRUE(view.grab().save(QString::fromStdString(screenshotDir() + "/hardware_view.png")));

  // A clean history: nothing named, no red row.
  view.setReport(hardware::hardwareReport(runs(false)));
  EXPECT_TRUE(view.outlierTexts().isEmpty());
  EXPECT_TRUE(view.summaryText().endsWith("No host or GPU stands out."));
  EXPECT_EQ(view.findChild<QPushButton*>("restart-without"), nullptr);
}

TEST(HardwareView, AnEmptyHistorySaysWhatWillBeHere) {
  HardwareView view;
  view.setReport({});
  EXPECT_TRUE(view.summaryText().startsWith("No runs in the history yet"));
  EXPECT_EQ(view.table()->topLevelItemCount(), 0);
  double asked = -1;
  QObject::connect(&view, &HardwareView::refreshRequested, [&](double since) { asked = since; });
  auto* refresh = view.findChild<QPushButton*>();
  ASSERT_NE(refresh, nullptr);
  refresh->click();
  EXPECT_EQ(asked, 0);  // every run
}

}  // namespace
}  // namespace ringmaster::gui
