// The app with a real Slurm cluster of three fake nodes (tests/slurm/cluster.sh, which needs root:
// skipped otherwise). A job submitted to Slurm while the app runs comes up live in its dashboard,
// which names Slurm's job id and state; the dashboard's Stop cancels it in Slurm. A screenshot of
// that dashboard is saved to build/screenshots/slurm_dashboard.png.
#include <gtest/gtest.h>
#include <unistd.h>

#include <QApplication>
#include <QDir>
#include <QMessageBox>
#include <QPushButton>
#include <QTimer>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "dashboard/dashboard_view.h"
#include "main_window.h"
#include "qt_wait.h"
#include "ringmaster/client/slurm_submit.h"

namespace ringmaster::gui {
namespace {

const std::string kClusterScript = std::string(RM_SOURCE_DIR) + "/tests/slurm/cluster.sh";

class SlurmDashboardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/rm_slurm_gui_XXXXXX";
    root_ = mkdtemp(pattern);
    const int rc = std::system((kClusterScript + " up " + root_ + "/cluster").c_str());
    if (WIFEXITED(rc) && WEXITSTATUS(rc) == 77) GTEST_SKIP() << "no Slurm cluster here (see above)";
    ASSERT_EQ(rc, 0) << "cluster.sh up failed";
    cluster_up_ = true;
    setenv("SLURM_CONF", (root_ + "/cluster/slurm.conf").c_str(), 1);
    setenv("HOME", root_.c_str(), 1);
    setenv("RINGMASTER_CONFIG_DIR", (root_ + "/config").c_str(), 1);
    setenv("RINGMASTER_CLUSTER", (root_ + "/cluster.yaml").c_str(), 1);
    setenv("RINGMASTER_DB", (root_ + "/history.db").c_str(), 1);
    std::ofstream(root_ + "/cluster.yaml")
        << "slurm:\n  - {name: fake, job_dir: " << root_ << "/jobs, bind: 127.0.0.1}\n";
  }
  void TearDown() override {
    if (cluster_up_) std::system((kClusterScript + " down " + root_ + "/cluster").c_str());
    std::filesystem::remove_all(root_);
  }
  std::string root_;
  bool cluster_up_ = false;
};

TEST_F(SlurmDashboardTest, AJobOnSlurmShowsLiveWithSlurmsStateAndStopsWithScancel) {
  MainWindow window(AppOptions{.resources_dir = QString(RM_SOURCE_DIR) + "/resources"});
  window.resize(1500, 1000);
  window.show();
  ASSERT_TRUE(window.start());

  // Submitted as ringmasterctl does, from another client of the same history: long enough to
  // be stopped while it trains.
  auto spec =
      job::loadJobSpec(std::string(RM_SOURCE_DIR) + "/resources/jobs/examples/slurm_demo.yaml");
  ASSERT_TRUE(spec.ok());
  spec.spec->native_yaml.replace(spec.spec->native_yaml.find("epochs: 4"), 9, "epochs: 400");
  auto paths = client::ClientPaths::resolve("", "");
  auto client = client::ClusterClient::open(paths);
  ASSERT_TRUE(client.isOk()) << client.status().message();
  auto clusters = client::loadSlurmClusters(paths.cluster_file);
  ASSERT_TRUE(clusters.isOk() && clusters->size() == 1);
  auto submitted = client::submitToSlurm(**client, *spec.spec, clusters->front(),
                                         std::string(RM_BIN_DIR) + "/ringmaster-agent");
  ASSERT_TRUE(submitted.isOk()) << submitted.status().message();
  const QString job_id = QString::fromStdString(submitted->job_id);
  const QString slurm_id = QString::fromStdString(submitted->slurm_job_id);

  DashboardView* view = window.openDashboard(job_id);
  ASSERT_NE(view, nullptr);
  ASSERT_TRUE(waitFor(
      [&] {
        int running = 0;
        for (const auto& [rank, info] : view->job().ranks()) running += info.state == "running";
        return running == 6 && view->job().maxStep() > 20;
      },
      60000))
      << view->headline().toStdString();
  ASSERT_TRUE(waitFor(
      [&] { return view->headline().contains("Slurm " + slurm_id + " on fake: running"); }, 15000))
      << view->headline().toStdString();
  EXPECT_EQ(view->job().agents(), (std::vector<std::string>{"n1", "n2", "n3"}));
  view->refreshNow();
  QApplication::processEvents();
  const QString shots = QString(RM_BIN_DIR) + "/../screenshots";
  QDir().mkpath(shots);
  EXPECT_TRUE(window.grab().save(shots + "/slurm_dashboard.png"));

  // Stop, as a person would: the button, then Yes.
  QPushButton* stop = nullptr;
  for (auto* button : view->findChildren<QPushButton*>()) {
    if (button->text() == "Stop job") stop = button;
  }
  ASSERT_NE(stop, nullptr);
  QString asked;
  QTimer::singleShot(300, [&] {
    if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
      asked = box->text();
      box->button(QMessageBox::Yes)->click();
    }
  });
  stop->click();
  EXPECT_TRUE(asked.contains("scancel")) << asked.toStdString();
  ASSERT_TRUE(waitFor([&] { return view->headline().contains("cancelled"); }, 30000))
      << view->headline().toStdString();
  ASSERT_TRUE(waitFor([&] { return view->job().finished(); }, 30000)) << view->job().state();
  EXPECT_EQ(view->job().state(), "stopped");
}

}  // namespace
}  // namespace ringmaster::gui
