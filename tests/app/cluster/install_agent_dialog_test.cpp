// "Install agent on host…" for real: the dialog runs installer/install-agent.sh through Debian's
// OpenSSH server on a loopback port (tests/installer/loopback_sshd.sh), shows its steps in the
// progress bar and its log, and the cluster view lists and selects the new agent; then the same
// dialog uninstalls it. A host that cannot be reached ends with the installer's reason. Saves
// screenshots into build/screenshots/.
#include "cluster/install_agent_dialog.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <QCheckBox>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <cstdlib>
#include <filesystem>

#include "cluster/agent_table_model.h"
#include "cluster/cluster_view.h"
#include "qt_wait.h"
#include "ringmaster/client/cluster_config.h"

namespace ringmaster::gui {
namespace {

namespace fs = std::filesystem;

// A port nothing listens on now (the kernel's pick for a socket bound and closed at once).
int freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

class InstallAgentDialogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("rm_install_dialog_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    cluster_file_ = QString::fromStdString((dir_ / "cluster.yaml").string());
    // The installer's ringmasterctl uses this client key and history.
    ::setenv("RINGMASTER_CONFIG_DIR", (dir_ / "client").c_str(), 1);
    ::setenv("RINGMASTER_DB", (dir_ / "history.db").c_str(), 1);
  }
  void TearDown() override {
    if (sshd_up_) {
      std::system((std::string(RM_SOURCE_DIR) + "/tests/installer/loopback_sshd.sh down " +
                   (dir_ / "sshd").string())
                      .c_str());
    }
    ::unsetenv("RINGMASTER_SSH_CONFIG");
    fs::remove_all(dir_);
  }

  // Starts the loopback sshd; false (with the reason in skip_reason_) where it cannot run.
  bool startSshd() {
    fs::create_directories(dir_ / "sshd");
    const std::string command = std::string(RM_SOURCE_DIR) +
                                "/tests/installer/loopback_sshd.sh up " + (dir_ / "sshd").string() +
                                " 2>&1";
    const int status = std::system(command.c_str());
    if (status != 0) {
      skip_reason_ = ::geteuid() != 0 ? "the loopback sshd needs root"
                                      : "the loopback sshd did not start (openssh-server?)";
      return false;
    }
    sshd_up_ = true;
    ::setenv("RINGMASTER_SSH_CONFIG", (dir_ / "sshd" / "ssh_config").c_str(), 1);
    return true;
  }

  static std::string screenshot(const std::string& name) {
    const std::string dir = std::string(RM_BIN_DIR) + "/../screenshots";
    fs::create_directories(dir);
    return dir + "/" + name;
  }

  fs::path dir_;
  QString cluster_file_;
  bool sshd_up_ = false;
  std::string skip_reason_;
};

TEST_F(InstallAgentDialogTest, TheFormBecomesTheInstallersArguments) {
  InstallAgentDialog dialog("/bin/false", "/opt/build", cluster_file_);
  EXPECT_TRUE(dialog.arguments().isEmpty());
  EXPECT_NE(dialog.problem().indexOf("at least one host"), -1);

  dialog.hostsEdit()->setText("  alice@gpu01, root@gpu02:2222 ");
  dialog.nameEdit()->setText("gpu");
  EXPECT_TRUE(dialog.arguments().isEmpty());
  EXPECT_NE(dialog.problem().indexOf("goes with one host"), -1);

  dialog.nameEdit()->clear();
  dialog.portBox()->setValue(7171);
  dialog.slotsBox()->setValue(4);
  dialog.prefixEdit()->setText("/srv/rm");
  dialog.systemdBox()->setChecked(false);
  EXPECT_EQ(dialog.arguments(),
            QStringList({"--cluster", cluster_file_, "--build-dir", "/opt/build", "--port", "7171",
                         "--slots", "4", "--user", "ringmaster", "--prefix", "/srv/rm",
                         "--no-systemd", "alice@gpu01", "root@gpu02:2222"}));
  // Jobs are apart unless the user says the hosts are one person's.
  EXPECT_TRUE(dialog.apartBox()->isChecked());
  dialog.apartBox()->setChecked(false);
  EXPECT_EQ(dialog.arguments().mid(12, 3), QStringList({"--job-uids", "off", "--no-systemd"}));
  dialog.uninstallBox()->setChecked(true);
  EXPECT_EQ(dialog.runButton()->text(), "Uninstall");
  EXPECT_TRUE(dialog.arguments().contains("--uninstall"));
}

TEST_F(InstallAgentDialogTest, AHostItCannotReachEndsWithTheInstallersReason) {
  ClusterView view(cluster_file_, "unused");
  InstallAgentDialog* dialog = view.openInstallDialog();
  const int closed_port = freePort();
  dialog->hostsEdit()->setText(QString("root@127.0.0.1:%1").arg(closed_port));
  dialog->systemdBox()->setChecked(false);
  dialog->start();
  EXPECT_TRUE(dialog->running());
  EXPECT_FALSE(dialog->hostsEdit()->isEnabled());  // the form waits while it runs
  ASSERT_TRUE(waitFor([&] { return !dialog->running(); }, 60000));
  waitFor([] { return false; }, 100);  // the finished signal's handlers
  const QString outcome = dialog->outcomeLabel()->text();
  EXPECT_TRUE(outcome.startsWith("Failed: root@127.0.0.1: cannot ssh to it"))
      << outcome.toStdString();
  EXPECT_LT(dialog->progressBar()->value(), 100);
  EXPECT_NE(dialog->logView()->toPlainText().indexOf("==> [1/8] connecting"), -1);
  EXPECT_TRUE(dialog->hostsEdit()->isEnabled());
  EXPECT_EQ(view.model()->rowCount(), 0);
  dialog->resize(820, 600);
  EXPECT_TRUE(dialog->grab().save(QString::fromStdString(screenshot("install_agent_failed.png"))));
}

TEST_F(InstallAgentDialogTest, InstallsThroughSshShowsTheAgentOnlineAndUninstallsIt) {
  if (!startSshd()) GTEST_SKIP() << skip_reason_;
  ClusterView view(cluster_file_, "unused");
  view.resize(1400, 700);
  InstallAgentDialog* dialog = view.openInstallDialog();
  const fs::path prefix = dir_ / "agent";
  const QString user = QString("rmgui%1").arg(::getpid());
  dialog->hostsEdit()->setText("root@testhost");
  dialog->nameEdit()->setText("loopgui");
  dialog->portBox()->setValue(freePort());
  dialog->userEdit()->setText(user);
  dialog->prefixEdit()->setText(QString::fromStdString(prefix.string()));
  dialog->systemdBox()->setChecked(false);

  int max_progress_seen = 0;
  bool saw_partial = false;
  QObject::connect(dialog->progressBar(), &QProgressBar::valueChanged, [&](int value) {
    max_progress_seen = std::max(max_progress_seen, value);
    saw_partial |= value > 0 && value < 100;
  });
  dialog->start();
  ASSERT_TRUE(waitFor([&] { return !dialog->running(); }, 180000));
  waitFor([] { return false; }, 100);
  const QString log = dialog->logView()->toPlainText();
  EXPECT_EQ(dialog->outcomeLabel()->text(), "loopgui is online.") << log.toStdString();
  EXPECT_TRUE(saw_partial) << "the bar moved with the installer's steps";
  EXPECT_EQ(dialog->progressBar()->value(), 100);
  EXPECT_NE(log.indexOf("==> [8/8] checking that it answers"), -1);
  EXPECT_EQ(view.selectedAgent(), "loopgui");
  auto agents = client::loadClusterFile(cluster_file_.toStdString());
  ASSERT_TRUE(agents.isOk());
  ASSERT_EQ(agents->size(), 1u);
  EXPECT_EQ(agents->front().name, "loopgui");
  dialog->resize(820, 640);
  EXPECT_TRUE(dialog->grab().save(QString::fromStdString(screenshot("install_agent_done.png"))));

  dialog->uninstallBox()->setChecked(true);
  dialog->start();
  ASSERT_TRUE(waitFor([&] { return !dialog->running(); }, 120000));
  waitFor([] { return false; }, 100);
  EXPECT_EQ(dialog->outcomeLabel()->text(), "Uninstalled.")
      << dialog->logView()->toPlainText().toStdString();
  EXPECT_EQ(view.model()->rowCount(), 0);
  EXPECT_FALSE(fs::exists(prefix));
  dialog->close();
}

}  // namespace
}  // namespace ringmaster::gui
