#pragma once
// "Install agent on host…": runs installer/install-agent.sh, the same steps as the command, for
// one or more hosts, with a progress bar and its live log. The installer writes the cluster
// file; when it is done the dialog names the agents that came online (and why a host failed).
// Cancel ends the installer and its ssh sessions (they run in their own process group).

#include <QDialog>
#include <QMap>
#include <QProcess>
#include <QStringList>

class QCheckBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace ringmaster::gui {

// $RINGMASTER_INSTALLER, else installer/install-agent.sh of the source tree this app was built
// from; "" when neither exists (a packaged app without the source tree).
QString defaultInstallerScript();

class InstallAgentDialog : public QDialog {
  Q_OBJECT

 public:
  // build_dir: the Ringmaster build whose agent is shipped (holds bin/ringmaster-agent).
  InstallAgentDialog(const QString& installer, const QString& build_dir,
                     const QString& cluster_file, QWidget* parent = nullptr);
  ~InstallAgentDialog() override;

  // The installer's arguments for what the form says; empty (with problem() set) when the form
  // is not complete.
  QStringList arguments() const;
  QString problem() const { return problem_; }
  void start();
  bool running() const;

  QLineEdit* hostsEdit() const { return hosts_; }
  QLineEdit* nameEdit() const { return name_; }
  QSpinBox* portBox() const { return port_; }
  QSpinBox* slotsBox() const { return slots_; }
  QLineEdit* userEdit() const { return user_; }
  QLineEdit* prefixEdit() const { return prefix_; }
  QCheckBox* systemdBox() const { return systemd_; }
  QCheckBox* apartBox() const { return apart_; }  // jobs apart (--job-uids), on by default
  QCheckBox* uninstallBox() const { return uninstall_; }
  QProgressBar* progressBar() const { return progress_; }
  QPlainTextEdit* logView() const { return log_; }
  QLabel* outcomeLabel() const { return outcome_; }
  QPushButton* runButton() const { return run_; }

 Q_SIGNALS:
  // The installer ended; `online` lists the agents it left online.
  void installerFinished(bool ok, const QStringList& online);

 protected:
  void reject() override;

 private:
  void onOutput();
  void onFinished(int exit_code, QProcess::ExitStatus status);
  void handleLine(const QString& line);
  void cancel();
  void setFormEnabled(bool enabled);

  QString installer_, build_dir_, cluster_file_;
  QLineEdit* hosts_;
  QLineEdit* name_;
  QSpinBox* port_;
  QSpinBox* slots_;
  QLineEdit* user_;
  QLineEdit* prefix_;
  QCheckBox* apart_;
  QCheckBox* systemd_;
  QCheckBox* uninstall_;
  QProgressBar* progress_;
  QLabel* step_;
  QPlainTextEdit* log_;
  QLabel* outcome_;
  QPushButton* run_;
  QPushButton* close_;
  QProcess* process_;
  QString pending_;          // output after the last newline
  QMap<QString, int> done_;  // host ("" for a single one) -> steps done
  int steps_per_host_ = 8;
  int hosts_count_ = 1;
  QStringList online_;
  QStringList errors_;
  bool in_error_ = false;  // the last line was an error (its indented details follow)
  mutable QString problem_;
};

}  // namespace ringmaster::gui
