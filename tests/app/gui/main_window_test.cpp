// The real main window against a real local agent (started by the app, as `ringmaster --demo`
// does) running the demo spec twice: both ranks' loss reaches the chart, the rank table shows
// them finished, the runs appear in History and can be compared. Screenshots of the cluster view,
// the editor, the dashboard and the comparison are saved to build/screenshots/.
#include "main_window.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QElapsedTimer>
#include <QLabel>
#include <QLayout>
#include <QListWidget>
#include <QPushButton>
#include <QSlider>
#include <QTabWidget>
#include <QTableView>
#include <QTreeWidget>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>

#include "charts/metric_chart.h"
#include "charts_drawn.h"
#include "cluster/agent_detail_panel.h"
#include "cluster/cluster_view.h"
#include "dashboard/compare_view.h"
#include "dashboard/dashboard_view.h"
#include "dashboard/rank_table_model.h"
#include "editor/job_editor.h"
#include "hardware/hardware_view.h"
#include "history/config_diff_view.h"
#include "history/history_model.h"
#include "history/history_view.h"
#include "local_agent.h"
#include "qt_wait.h"
#include "ringmaster/client/cluster_config.h"
#include "ringmaster/client/local_agent.h"
#include "ringmaster/security/keys.h"
#include "ringmaster/store/writer.h"

namespace ringmaster::gui {
namespace {

QString screenshotDir() {
  const QString dir = QString(RM_BIN_DIR) + "/../screenshots";
  QDir().mkpath(dir);
  return dir;
}

void save(QWidget* widget, const QString& name) {
  EXPECT_TRUE(chartsDrawn());
  QApplication::processEvents();
  EXPECT_TRUE(widget->grab().save(screenshotDir() + "/" + name + ".png")) << name.toStdString();
}

class MainWindowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/rm_gui_XXXXXX";
    root_ = mkdtemp(pattern);
    // Everything the app reads or writes stays in the temporary directory.
    setenv("HOME", root_.c_str(), 1);
    setenv("XDG_CONFIG_HOME", (root_ + "/config").c_str(), 1);
    setenv("RINGMASTER_CONFIG_DIR", (root_ + "/config/ringmaster").c_str(), 1);
    setenv("RINGMASTER_CLUSTER", (root_ + "/config/ringmaster/cluster.yaml").c_str(), 1);
    setenv("RINGMASTER_DB", (root_ + "/data/history.db").c_str(), 1);
  }
  void TearDown() override {
    // The app leaves its local agent running on purpose (jobs outlive the window): stop it.
    auto paths = client::ClientPaths::resolve("", "");
    if (auto agent = client::findLocalAgent(localAgentStateDir(paths))) {
      client::stopLocalAgent(*agent);
    }
    std::filesystem::remove_all(root_);
  }
  // The local agent (as the app starts it), pinned in the cluster file with `pinned_key`, or with
  // its own key when empty.
  std::optional<client::LocalAgent> localAgentPinnedAs(const std::string& pinned_key = "") {
    auto paths = client::ClientPaths::resolve("", "");
    auto keys = client::loadClientKeys(paths);
    if (!keys.isOk() || !ensureLocalAgent(paths, keys->public_key).isOk()) return std::nullopt;
    auto agent = client::findLocalAgent(localAgentStateDir(paths));
    if (!agent) return std::nullopt;
    const std::string key = pinned_key.empty() ? agent->public_key : pinned_key;
    if (!client::writeClusterFile(paths.cluster_file, {{"local", agent->endpoint, key}}).isOk()) {
      return std::nullopt;
    }
    return agent;
  }

  // The app's window at `width` x `height`, shown and started; nullptr when it cannot start.
  static std::unique_ptr<MainWindow> openWindow(int width, int height) {
    AppOptions options;
    options.resources_dir = QString(RM_SOURCE_DIR) + "/resources";
    auto window = std::make_unique<MainWindow>(options);
    window->resize(width, height);
    window->show();
    return window->start() ? std::move(window) : nullptr;
  }

  // Submits `yaml` from the window; its dashboard once the agents accepted it, else nullptr.
  static DashboardView* submitAndOpen(MainWindow& window, const QString& yaml) {
    window.submitYaml(yaml, "job.yaml");
    if (!waitFor([&] { return !window.lastSubmittedJob().isEmpty(); }, 30000)) return nullptr;
    return window.dashboard(window.lastSubmittedJob());
  }

  std::string root_;
};

TEST_F(MainWindowTest, DemoTrainsLiveAndLandsInHistory) {
  AppOptions options;
  options.demo = true;
  options.resources_dir = QString(RM_SOURCE_DIR) + "/resources";
  // The demo of seconds (the real one trains Fashion-MNIST for a minute, twice here).
  options.demo_spec = options.resources_dir + "/jobs/examples/quick_demo.yaml";
  MainWindow window(options);
  window.resize(1500, 1000);
  window.show();
  ASSERT_TRUE(window.start());

  // The cluster view offers the local agent, then shows it online.
  ASSERT_TRUE(waitFor([&] { return !window.lastSubmittedJob().isEmpty(); }, 60000))
      << "the demo job was not submitted; status: " << window.bannerText().toStdString();
  const QString job_id = window.lastSubmittedJob();
  DashboardView* view = window.dashboard(job_id);
  ASSERT_NE(view, nullptr);
  EXPECT_EQ(window.tabs()->currentWidget(), view);

  ASSERT_TRUE(waitFor([&] { return view->job().finished(); }, 180000))
      << "state " << view->job().state();
  // The live redraw path (not only refreshNow) brings the whole run onto the visible charts.
  ASSERT_TRUE(waitFor(
      [&] {
        MetricChart* chart = view->chart("loss");
        return chart && chart->xRange().second >= static_cast<double>(view->job().maxStep());
      },
      20000));
  view->refreshNow();
  EXPECT_EQ(view->job().state(), "succeeded");

  // Both ranks' loss reached the chart.
  const auto* loss = view->job().metric("loss");
  ASSERT_NE(loss, nullptr);
  ASSERT_TRUE(loss->count(0) && loss->count(1));
  EXPECT_GT(loss->at(0).size(), 100u);
  EXPECT_GT(loss->at(1).size(), 100u);
  MetricChart* loss_chart = view->chart("loss");
  ASSERT_NE(loss_chart, nullptr);
  EXPECT_GT(loss_chart->drawnPointCount(), 100);
  EXPECT_NE(view->chart("accuracy"), nullptr);
  EXPECT_NE(view->chart("samples/s"), nullptr);

  // Selecting an event brings every chart to its moment, marked: here the first rank's exit,
  // at the last step of a 2256-step run.
  auto* events = view->findChild<QTreeWidget*>("events");
  ASSERT_NE(events, nullptr);
  QTreeWidgetItem* exited = nullptr;
  for (int i = 0; i < events->topLevelItemCount() && !exited; ++i) {
    const size_t index = events->topLevelItem(i)->data(0, Qt::UserRole).toULongLong();
    if (view->job().events().at(index).kind == "rank_exited") exited = events->topLevelItem(i);
  }
  ASSERT_NE(exited, nullptr);
  events->setCurrentItem(exited);
  const auto [x0, x1] = loss_chart->xRange();
  const double last_step = static_cast<double>(view->job().maxStep());
  EXPECT_NEAR(x1 - x0, last_step / 10, last_step / 50);
  EXPECT_GE(x1, last_step - 1);
  EXPECT_EQ(view->chart("accuracy")->xRange(), loss_chart->xRange());
  ASSERT_FALSE(loss_chart->markers().empty());
  EXPECT_EQ(loss_chart->markers().back().label, "rank exited");
  loss_chart->resetZoom();
  // The demo checkpoints every 200 steps: each is an event (not a chart).
  size_t checkpoints = 0;
  for (const JobEvent& e : view->job().events()) checkpoints += e.kind == "checkpoint" ? 1 : 0;
  EXPECT_GE(checkpoints, last_step >= 200 ? 1u : 0u);
  EXPECT_EQ(view->chart("checkpoint"), nullptr);
  // Consecutive checkpoints are one row of the list (the newest, and how many), each under it.
  int checkpoint_rows = 0;
  size_t listed = 0;
  for (int i = 0; i < events->topLevelItemCount(); ++i) {
    const QTreeWidgetItem* row = events->topLevelItem(i);
    if (!row->text(1).startsWith("checkpoint")) continue;
    ++checkpoint_rows;
    listed += row->childCount() > 0 ? static_cast<size_t>(row->childCount()) : 1u;
    if (row->childCount() > 0) {
      EXPECT_EQ(row->text(1), QString("checkpoint ×%1").arg(row->childCount()));
      EXPECT_EQ(row->text(0), row->child(row->childCount() - 1)->text(0));  // the newest
    }
  }
  EXPECT_EQ(listed, checkpoints);
  EXPECT_LE(checkpoint_rows, 2) << "checkpoints interleaved with other events";
  // Units on the y axes; the smoothing the bold lines have.
  EXPECT_TRUE(view->chart("samples/s")->yTitle().startsWith("samples/s"))
      << view->chart("samples/s")->yTitle().toStdString();
  EXPECT_TRUE(loss_chart->chartTitle().contains("EMA 0.60"))
      << loss_chart->chartTitle().toStdString();

  // Time since the start on the x axis, and smoothing 0.90: both kept for the next dashboard.
  auto* x_axis = view->findChild<QComboBox*>("xAxis");
  ASSERT_NE(x_axis, nullptr);
  x_axis->setCurrentIndex(static_cast<int>(DashboardView::XChoice::kRelativeTime));
  EXPECT_EQ(loss_chart->timeOrigin(), view->job().startTime());
  EXPECT_EQ(loss_chart->xAxis(), metrics::Axis::kTime);
  EXPECT_TRUE(loss_chart->readoutAt(loss_chart->xToPixel(view->job().startTime() + 1))
                  .header.startsWith("0:00:0"))
      << loss_chart->readoutAt(loss_chart->xToPixel(view->job().startTime() + 1))
             .header.toStdString();
  auto* smoothing = view->findChild<QSlider*>("smoothing");
  ASSERT_NE(smoothing, nullptr);
  smoothing->setValue(90);
  ASSERT_TRUE(waitFor([&] { return loss_chart->smoothing() == 0.9; }, 5000));
  EXPECT_TRUE(waitFor([&] { return loss_chart->chartTitle().contains("EMA 0.90"); }, 5000))
      << loss_chart->chartTitle().toStdString();  // with the redraw that follows

  // Usable on a 1024x600 screen: nothing in the dashboard asks for more.
  EXPECT_LE(view->minimumSizeHint().width(), 1000);
  EXPECT_LE(window.minimumSizeHint().width(), 1000);  // and a frame
  EXPECT_LE(window.minimumSizeHint().height(), 600);

  // Double-click a rank in the list: only its lines; again: all of them.
  auto* rank_list = view->findChild<QListWidget*>("rankList");
  ASSERT_NE(rank_list, nullptr);
  QListWidgetItem* rank1 = nullptr;
  for (int i = 0; i < rank_list->count(); ++i) {
    if (rank_list->item(i)->data(Qt::UserRole).toInt() == 1) rank1 = rank_list->item(i);
  }
  ASSERT_NE(rank1, nullptr);
  auto shown = [&] {
    std::vector<QString> labels;
    for (const ChartLine& line : loss_chart->lines()) {
      if (line.visible) labels.push_back(line.label);
    }
    return labels;
  };
  const std::vector<QString> all_lines = shown();
  ASSERT_GE(all_lines.size(), 2u);
  // The signal a double-click gives (QTest's widget double-click has no press before it here).
  emit rank_list->itemDoubleClicked(rank1);
  EXPECT_EQ(shown(), std::vector<QString>{"rank 1"});
  emit rank_list->itemDoubleClicked(rank1);
  EXPECT_EQ(shown(), all_lines);

  // The rank table shows both ranks finished.
  RankTableModel* ranks = view->rankModel();
  ASSERT_EQ(ranks->rowCount(), 2);
  for (int row = 0; row < 2; ++row) {
    EXPECT_EQ(ranks->data(ranks->index(row, RankTableModel::kState), Qt::DisplayRole).toString(),
              "succeeded");
    EXPECT_EQ(ranks->data(ranks->index(row, RankTableModel::kAgent), Qt::DisplayRole).toString(),
              "local");
  }
  EXPECT_TRUE(view->headline().contains("SUCCEEDED")) << view->headline().toStdString();
  // The spec's description, under the header.
  auto* about = view->findChild<QLabel*>("about");
  ASSERT_NE(about, nullptr);
  EXPECT_EQ(about->text(), "A synthetic 4-class problem on 2 ranks, over in seconds.");
  EXPECT_TRUE(about->isVisibleTo(view));
  // The finish was announced.
  EXPECT_TRUE(window.bannerText().contains("succeeded")) << window.bannerText().toStdString();
  save(&window, "dashboard");

  // A second run, to compare.
  window.startLocalAgent(/*then_demo=*/true);
  ASSERT_TRUE(waitFor([&] { return window.lastSubmittedJob() != job_id; }, 60000));
  const QString second = window.lastSubmittedJob();
  DashboardView* second_view = window.dashboard(second);
  ASSERT_NE(second_view, nullptr);
  EXPECT_EQ(second_view->findChild<QSlider*>("smoothing")->value(), 90);
  EXPECT_EQ(second_view->xChoice(), DashboardView::XChoice::kRelativeTime);
  ASSERT_TRUE(waitFor([&] { return second_view->job().finished(); }, 180000));

  // History lists both runs.
  window.tabs()->setCurrentWidget(window.history());
  HistoryView* history = window.history();
  ASSERT_TRUE(waitFor([&] { return history->model()->rowCount() >= 2; }, 30000));
  history->selectJobIds({job_id, second});
  ASSERT_EQ(history->selectedJobIds().size(), 2);
  save(&window, "history");

  // The Hardware tab reads the same runs per host: the local agent took part in both.
  window.tabs()->setCurrentWidget(window.hardware());
  ASSERT_TRUE(waitFor([&] { return window.hardware()->table()->topLevelItemCount() > 0; }, 30000));
  EXPECT_TRUE(window.hardware()->summaryText().contains(" runs: "))
      << window.hardware()->summaryText().toStdString();
  EXPECT_EQ(window.hardware()->table()->topLevelItemCount(), 1);  // the one local agent
  save(&window, "hardware");

  window.openComparison({job_id, second});
  auto* compare = qobject_cast<CompareView*>(window.tabs()->currentWidget());
  ASSERT_NE(compare, nullptr);
  ASSERT_TRUE(waitFor([&] { return compare->loaded(); }, 30000));
  EXPECT_FALSE(compare->charts().empty());
  save(&window, "history_compare");

  window.tabs()->setCurrentWidget(window.clusterView());
  save(&window, "cluster");
  window.tabs()->setCurrentWidget(window.editor());
  window.editor()->newFromTemplate(options.resources_dir + "/jobs/demo.yaml");
  save(&window, "editor");

  // Everything comes back in the next window, even without a clean close (as after kill -9):
  // the dashboards, the comparison, the active tab, the History's selection.
  window.tabs()->setCurrentWidget(compare);
  AppOptions plain;
  plain.resources_dir = options.resources_dir;
  MainWindow again(plain);
  again.resize(1500, 1000);
  again.show();
  ASSERT_TRUE(again.start());
  EXPECT_NE(again.dashboard(job_id), nullptr);
  EXPECT_NE(again.dashboard(second), nullptr);
  auto* restored = qobject_cast<CompareView*>(again.tabs()->currentWidget());
  ASSERT_NE(restored, nullptr) << "the comparison, as the active tab";
  EXPECT_EQ(again.tabs()->tabToolTip(again.tabs()->currentIndex()),
            QStringList({job_id, second}).join("\n"));
  again.tabs()->setCurrentWidget(again.history());
  ASSERT_TRUE(waitFor([&] { return again.history()->selectedJobIds().size() == 2; }, 30000));

  // A Compare configs tab comes back too, once the History has the runs' specs.
  again.openConfigDiff({job_id, second});
  MainWindow third(plain);
  third.show();
  ASSERT_TRUE(third.start());
  ConfigDiffView* configs = nullptr;
  ASSERT_TRUE(waitFor(
      [&] {
        for (int i = 0; i < third.tabs()->count() && !configs; ++i) {
          configs = qobject_cast<ConfigDiffView*>(third.tabs()->widget(i));
        }
        return configs != nullptr;
      },
      30000));
  EXPECT_EQ(third.tabs()->tabToolTip(third.tabs()->indexOf(configs)),
            QStringList({job_id, second}).join("\n"));
}

// Regression (issue 21): with its only agent killed, a running job's dashboard said "RUNNING ·
// 4 running" for as long as the agent stayed down. It says the agent is not answering since its
// last answer and that the ranks' state is unknown, within 10 s, and the clock stops.
TEST_F(MainWindowTest, AJobWhoseAgentIsKilledShowsUnknownNotRunning) {
  auto agent = localAgentPinnedAs();
  ASSERT_TRUE(agent);
  auto window = openWindow(1280, 720);
  ASSERT_TRUE(window);
  DashboardView* view =
      submitAndOpen(*window,
                    "name: lost\nlauncher: command\nworld_size: 2\n"
                    "command: [/bin/sh, -c, 'for i in $(seq 1 300); do echo \"{\\\"step\\\": $i, "
                    "\\\"loss\\\": 0.$((999 - i))}\"; sleep 0.2; done']\n");
  ASSERT_NE(view, nullptr) << window->bannerText().toStdString();
  ASSERT_TRUE(waitFor(
      [&] { return view->headline().contains("(2 running)") && view->job().maxStep() >= 15; },
      30000))
      << view->headline().toStdString();

  ASSERT_EQ(::kill(agent->pid, SIGKILL), 0);
  QElapsedTimer since_kill;
  since_kill.start();
  ASSERT_TRUE(waitFor([&] { return view->headline().contains("UNKNOWN"); }, 10000))
      << view->headline().toStdString();
  EXPECT_LE(since_kill.elapsed(), 10000);
  EXPECT_TRUE(view->problemText().contains("agent local not answering since"))
      << view->problemText().toStdString();
  EXPECT_TRUE(view->problemText().contains("state of 2 ranks unknown"))
      << view->problemText().toStdString();
  RankTableModel* ranks = view->rankModel();
  for (int row = 0; row < ranks->rowCount(); ++row) {
    EXPECT_EQ(ranks->data(ranks->index(row, RankTableModel::kState), Qt::DisplayRole).toString(),
              "unknown");
    EXPECT_EQ(ranks->data(ranks->index(row, RankTableModel::kExit), Qt::DisplayRole).toString(),
              "");  // last heard running: no exit to show
  }
  // The charts say their data may be old.
  MetricChart* loss = view->chart("loss");
  ASSERT_NE(loss, nullptr);
  EXPECT_TRUE(loss->staleNote().startsWith("no data since ")) << loss->staleNote().toStdString();
  // And the events list says when the agent went silent.
  bool silent_event = false;
  for (const JobEvent& e : view->job().events()) {
    silent_event = silent_event || (e.kind == "agent_silent" && e.agent == "local");
  }
  EXPECT_TRUE(silent_event);
  // The elapsed time stopped at the last evidence.
  const QString stopped = view->headline();
  waitFor([] { return false; }, 2100);  // the clock would have ticked twice
  view->refreshNow();
  EXPECT_EQ(view->headline(), stopped);
  save(window.get(), "dashboard-agent-lost");
}

// Issue 21: a rank that stops making progress is a suspected hang, named at half the timeout,
// in amber, and gone when progress resumes. Rank 1 halts 14 s after step 3; rank 0 ends.
TEST_F(MainWindowTest, AQuietRankIsASuspectedHangUntilItGoesOn) {
  ASSERT_TRUE(localAgentPinnedAs());
  auto window = openWindow(1280, 720);
  ASSERT_TRUE(window);
  DashboardView* view = submitAndOpen(
      *window,
      "name: quiet\nlauncher: command\nworld_size: 2\n"
      "command: [/bin/sh, -c, 'for i in 1 2 3 4; do echo \"{\\\"step\\\": $i, \\\"loss\\\": "
      "1, \\\"samples_per_sec\\\": 100}\"; sleep 0.2; [ $i = 3 ] && [ $RANK = 1 ] && sleep 14; "
      "done; sleep 3']\n"
      "restart: {hang_timeout_seconds: 6, on_hang: warn}\n");
  ASSERT_NE(view, nullptr) << window->bannerText().toStdString();
  ASSERT_TRUE(waitFor([&] { return view->problemText().contains("Suspected hang"); }, 20000))
      << view->headline().toStdString() << " / " << view->problemText().toStdString();
  EXPECT_TRUE(view->problemText().contains("rank 1 on local may be hung"))
      << view->problemText().toStdString();
  EXPECT_TRUE(view->headline().contains("RUNNING")) << view->headline().toStdString();
  save(window.get(), "dashboard-hang-suspected");
  // Every rank quiet for longer than the throughput's 10 s window: the header says so, instead
  // of the rate it had when they stopped (issue 35).
  ASSERT_TRUE(waitFor([&] { return view->headline().contains("no new step for 1"); }, 20000))
      << view->headline().toStdString();
  save(window.get(), "dashboard-no-new-step");
  // Progress resumes: the line goes, and the job ends well.
  ASSERT_TRUE(waitFor([&] { return !view->problemText().contains("hang"); }, 20000))
      << view->problemText().toStdString();
  ASSERT_TRUE(waitFor([&] { return view->job().finished(); }, 30000));
  EXPECT_EQ(view->job().state(), "succeeded");
  // Issue 21: the History tab follows runs that start and end, without Refresh, within 5 s.
  HistoryModel* runs = window->history()->model();
  const QString job_id = window->lastSubmittedJob();
  QElapsedTimer since_end;
  since_end.start();
  ASSERT_TRUE(waitFor(
      [&] {
        const int row = runs->rowOf(job_id);
        return row >= 0 && runs->runs()[static_cast<size_t>(row)].job.state == "succeeded";
      },
      5000))
      << "History did not show the run as succeeded";
  EXPECT_LE(since_end.elapsed(), 5000);
}

// An agent that answers with another key than the pinned one (rotated, or an impostor) is named
// in the banner at once; Open shows it in the cluster view, with the update offered.
TEST_F(MainWindowTest, AnAgentWhoseKeyChangedIsNamedInTheBanner) {
  auto rotated = security::generateKeyPair();  // pinned here: not the key the agent has
  ASSERT_TRUE(localAgentPinnedAs(rotated->public_key));
  auto opened = openWindow(1500, 1000);
  ASSERT_TRUE(opened);
  MainWindow& window = *opened;
  ASSERT_TRUE(waitFor([&] { return window.bannerText().contains("key changed"); }, 30000))
      << window.bannerText().toStdString();
  EXPECT_TRUE(window.bannerText().contains("local")) << window.bannerText().toStdString();
  window.tabs()->setCurrentIndex(1);
  auto* open = window.findChild<QPushButton*>("bannerOpen");
  ASSERT_NE(open, nullptr);
  open->click();
  EXPECT_EQ(window.tabs()->currentWidget(), window.clusterView());
  EXPECT_EQ(window.clusterView()->selectedAgent(), "local");
  EXPECT_TRUE(window.clusterView()->detailPanel()->updateKeyButton()->isVisible());
  save(&window, "cluster-key-changed");
}

// Issue 35: a window closed cleanly (Alt+F4, the app quitting) came back with none of its tabs:
// taking them down in the destructor saved an empty layout over the one it was closed with.
TEST_F(MainWindowTest, AWindowClosedCleanlyComesBackAsItWasLeft) {
  {
    auto first = openWindow(1500, 1000);
    ASSERT_TRUE(first);
    first->openComparison({"job-a", "job-b"});
    first->tabs()->setCurrentIndex(first->tabs()->count() - 1);
    ASSERT_TRUE(first->close());
  }  // destroyed, as when the app quits
  auto again = openWindow(1500, 1000);
  ASSERT_TRUE(again);
  auto* compare = qobject_cast<CompareView*>(again->tabs()->currentWidget());
  ASSERT_NE(compare, nullptr) << "the comparison, as the active tab";
  EXPECT_EQ(again->tabs()->tabToolTip(again->tabs()->currentIndex()), "job-a\njob-b");
}

// A history file with damaged pages is named in the banner (what it shows may be incomplete),
// the runs it can still read are listed, and Open shows the History.
TEST_F(MainWindowTest, ADamagedHistoryIsNamedInTheBanner) {
  const std::string db = root_ + "/data/history.db", made = root_ + "/made.db";
  {
    auto store = store::Writer::open(made);  // another path: this process checks `db` itself
    ASSERT_TRUE(store.isOk()) << store.status().toString();
    ASSERT_TRUE((*store)->recordSubmission({.job_id = "readable-run", .name = "readable"}).isOk());
  }
  sqlite3* handle = nullptr;
  ASSERT_EQ(sqlite3_open(made.c_str(), &handle), SQLITE_OK);
  sqlite3_exec(handle, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(handle, "SELECT pageno FROM dbstat WHERE name = 'health'", -1, &stmt, nullptr);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  const int64_t page = sqlite3_column_int64(stmt, 0);  // a table `runs` never reads
  sqlite3_finalize(stmt);
  sqlite3_close(handle);
  std::filesystem::create_directories(root_ + "/data");
  std::filesystem::copy_file(made, db);
  {
    std::fstream file(db, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp((page - 1) * 4096);
    const std::string garbage(64, '\xff');
    file.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  auto opened = openWindow(1500, 1000);
  ASSERT_TRUE(opened);
  MainWindow& window = *opened;
  window.tabs()->setCurrentIndex(2);
  ASSERT_TRUE(waitFor([&] { return window.bannerText().contains("History damaged"); }, 30000))
      << window.bannerText().toStdString();
  EXPECT_TRUE(window.bannerText().contains(QString::fromStdString(db)))
      << window.bannerText().toStdString();
  EXPECT_EQ(window.history()->model()->rowCount(), 1);
  save(&window, "history-damaged");
  // Issue 61: a banner pushed the whole window down under the pointer. It floats over the
  // corner: the tabs are where they are without it.
  const QRect tabs_with_banner = window.tabs()->geometry();
  window.tabs()->setCurrentIndex(0);
  window.findChild<QPushButton*>("bannerOpen")->click();
  EXPECT_EQ(window.tabs()->currentIndex(), 2);
  QApplication::processEvents();
  EXPECT_EQ(window.bannerText(), "");
  EXPECT_EQ(window.tabs()->geometry(), tabs_with_banner);
}

}  // namespace
}  // namespace ringmaster::gui
