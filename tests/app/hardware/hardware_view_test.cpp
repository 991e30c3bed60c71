// The Hardware view (issue 39) on a report of generated runs: the planted flaky GPU and the
// planted slow host are named on top, each with a way to its newest failed (or held back) run
// and to restarting it without its host; the table has every host with its GPUs; a clean
// history names nothing. Screenshot: hardware_view.png.
#include "hardware/hardware_view.h"

#include <gtest/gtest.h>

#include <QApplication>
#include <QDir>
#include <QPushButton>
#include <QTreeWidget>
#include <algorithm>

namespace ringmaster::gui {
namespace {

std::string uuid(int host, int gpu) {
  return "GPU-" + std::to_string(host) + std::to_string(gpu) + "7d1e3c-4a00-4000-8000-0000";
}

// 48 runs of 2 ranks on 2 of 6 hosts (4 GPUs each); with `bad`, gpu04's GPU 2 fails first in 5
// of the runs it is in, and gpu01 holds back every run it is in (its rank 1.30-1.39x the other's
// busy time).
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
    if (bad && (a == 1 || b == 1)) {
      run.straggler = a == 1 ? 0 : 1;
      run.straggler_ratio = 1.3 + 0.01 * (i % 10);
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
  const QStringList named = view.outlierTexts();
  ASSERT_EQ(named.size(), 2) << named.join("\n").toStdString();
  EXPECT_TRUE(named
                  .filter(QString::fromUtf8("GPU GPU-427d1e3c\u2026 (GPU 2, NVIDIA H100 80GB "
                                            "HBM3) on gpu04 was in "))
                  .size() == 1)
      << named.join("\n").toStdString();
  EXPECT_TRUE(
      named.filter("host gpu01 held the others back in 15 of its 15 runs (up to 1.39x").size() == 1)
      << named.join("\n").toStdString();
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
  const auto entity = std::find_if(report.entities.begin(), report.entities.end(),
                                   [](const auto& e) { return e.id == uuid(4, 2); });
  ASSERT_NE(entity, report.entities.end());
  EXPECT_EQ(opened[0].toStdString(), entity->failed_jobs.front());
  QPushButton* restart = nullptr;
  for (auto* button : view.findChildren<QPushButton*>("restart-without")) {
    if (button->text() == "Restart it without gpu04") restart = button;
  }
  ASSERT_NE(restart, nullptr);
  restart->click();
  ASSERT_EQ(restarts.size(), 1u);
  EXPECT_EQ(restarts[0].first.toStdString(), entity->failed_jobs.front());
  EXPECT_EQ(restarts[0].second, "gpu04");

  // The slow host: its held back runs in the table, its newest one a click away.
  QTreeWidgetItem* host1 = table->topLevelItem(1);
  EXPECT_EQ(host1->text(0), "gpu01");
  EXPECT_EQ(host1->text(5), "15 (1.39x)");
  QPushButton* open_held = nullptr;
  for (auto* button : view.findChildren<QPushButton*>()) {
    if (button->text() == "Open the newest run it held back") open_held = button;
  }
  ASSERT_NE(open_held, nullptr);
  open_held->click();
  ASSERT_EQ(opened.size(), 2);
  const auto slow_host = std::find_if(report.entities.begin(), report.entities.end(),
                                      [](const auto& e) { return e.id == "gpu01"; });
  ASSERT_NE(slow_host, report.entities.end());
  EXPECT_EQ(opened[1].toStdString(), slow_host->held_back_jobs.front());

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
