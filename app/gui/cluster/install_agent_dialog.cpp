#include "cluster/install_agent_dialog.h"

#include <signal.h>
#include <unistd.h>

#include <QCheckBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QVBoxLayout>

#include "cluster/agent_state_style.h"

namespace ringmaster::gui {
namespace {

// What install-agent.sh prints; with several hosts each line starts with "[HOST] ".
const QRegularExpression kStepLine(R"(^(?:\[([^\]]+)\] )?==> \[(\d+)/(\d+)\] (.*)$)");
const QRegularExpression kOnlineLine(R"(^(?:\[[^\]]+\] )?==> (\S+) is online at (\S+)$)");
const QRegularExpression kErrorLine(R"(^(?:\[[^\]]+\] )?install-agent\.sh: (.*)$)");
const QRegularExpression kErrorDetailLine(R"(^(?:\[[^\]]+\] )?    (\S.*)$)");
const QRegularExpression kHostSeparators("[\\s,]+");

void setTextColor(QLabel* label, const QColor& color) {
  QPalette palette = label->palette();
  palette.setColor(QPalette::WindowText, color);
  label->setPalette(palette);
}

}  // namespace

QString defaultInstallerScript() {
  const QString env = qEnvironmentVariable("RINGMASTER_INSTALLER");
  if (!env.isEmpty()) return env;
  const QString source = QStringLiteral(RINGMASTER_INSTALLER_SCRIPT);
  return QFileInfo(source).isExecutable() ? source : QString();
}

InstallAgentDialog::InstallAgentDialog(const QString& installer, const QString& build_dir,
                                       const QString& cluster_file, QWidget* parent)
    : QDialog(parent),
      installer_(installer),
      build_dir_(build_dir),
      cluster_file_(cluster_file),
      process_(new QProcess(this)) {
  setWindowTitle("Install agent on host");
  auto* layout = new QVBoxLayout(this);
  auto* intro = new QLabel(
      "Installs the Ringmaster agent on hosts you can ssh into (your keys, your ~/.ssh/config), "
      "as root or with passwordless sudo: a systemd service with the ranks run as their own user, "
      "this app's key authorized, and the agent's key read back over ssh into the cluster file. "
      "Run it again to upgrade an agent in place.");
  intro->setWordWrap(true);
  layout->addWidget(intro);

  auto* form = new QFormLayout;
  hosts_ = new QLineEdit;
  hosts_->setObjectName("installHosts");
  hosts_->setPlaceholderText("alice@gpu01   root@gpu02:2222   (one or more, as you would ssh)");
  name_ = new QLineEdit;
  name_->setPlaceholderText("the host's name");
  port_ = new QSpinBox;
  port_->setRange(1, 65535);
  port_->setValue(7070);
  slots_ = new QSpinBox;
  slots_->setRange(0, 4096);
  slots_->setSpecialValueText("one per GPU, else per CPU");
  user_ = new QLineEdit("ringmaster");
  prefix_ = new QLineEdit;
  prefix_->setPlaceholderText("/usr (Debian package) or /opt/ringmaster");
  apart_ = new QCheckBox("Keep jobs apart: each job's ranks run as a user of their own");
  apart_->setObjectName("jobs-apart");
  apart_->setChecked(true);
  apart_->setToolTip(
      "A uid and group per job from 1879048192-1879113727: one job cannot signal another's "
      "ranks, read its files or find the last job's in /tmp. Clear it only on hosts one person "
      "uses: every job's ranks then run as the user above.");
  systemd_ = new QCheckBox("Run it as a systemd service (restarted on failure and at boot)");
  systemd_->setChecked(true);
  uninstall_ =
      new QCheckBox("Uninstall instead: stop the agent and remove what the installer made");
  form->addRow("Hosts", hosts_);
  form->addRow("Agent name", name_);
  form->addRow("Agent port", port_);
  form->addRow("Slots", slots_);
  form->addRow("Ranks run as", user_);
  form->addRow("Install under", prefix_);
  form->addRow("", apart_);
  form->addRow("", systemd_);
  form->addRow("", uninstall_);
  layout->addLayout(form);

  progress_ = new QProgressBar;
  progress_->setRange(0, 100);
  progress_->setValue(0);
  step_ = new QLabel;
  step_->setWordWrap(true);
  log_ = new QPlainTextEdit;
  log_->setObjectName("installLog");
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(5000);
  QFont mono("monospace");
  mono.setStyleHint(QFont::Monospace);
  log_->setFont(mono);
  log_->setMinimumHeight(220);
  outcome_ = new QLabel;
  outcome_->setWordWrap(true);
  outcome_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(progress_);
  layout->addWidget(step_);
  layout->addWidget(log_, 1);
  layout->addWidget(outcome_);

  auto* buttons = new QHBoxLayout;
  run_ = new QPushButton("Install");
  run_->setObjectName("installRun");
  run_->setDefault(true);
  close_ = new QPushButton("Close");
  buttons->addStretch(1);
  buttons->addWidget(run_);
  buttons->addWidget(close_);
  layout->addLayout(buttons);
  resize(760, 640);

  connect(uninstall_, &QCheckBox::toggled, this,
          [this](bool on) { run_->setText(on ? "Uninstall" : "Install"); });
  connect(run_, &QPushButton::clicked, this, [this] { running() ? cancel() : start(); });
  connect(close_, &QPushButton::clicked, this, &InstallAgentDialog::reject);
  process_->setProcessChannelMode(QProcess::MergedChannels);
  // Its own process group, so Cancel reaches ssh and everything else the script started.
  process_->setChildProcessModifier([] { ::setsid(); });
  connect(process_, &QProcess::readyReadStandardOutput, this, &InstallAgentDialog::onOutput);
  connect(process_, &QProcess::finished, this, &InstallAgentDialog::onFinished);
  connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
    if (error != QProcess::FailedToStart) return;
    outcome_->setText("Cannot run " + installer_ + ": " + process_->errorString());
    setTextColor(outcome_, stateColor(client::AgentState::kError));
    setFormEnabled(true);
  });
}

InstallAgentDialog::~InstallAgentDialog() {
  if (running()) {
    cancel();
    process_->waitForFinished(3000);
  }
}

QStringList InstallAgentDialog::arguments() const {
  problem_.clear();
  const QStringList hosts = hosts_->text().split(kHostSeparators, Qt::SkipEmptyParts);
  if (hosts.isEmpty()) {
    problem_ = "Name at least one host, as you would ssh to it (alice@gpu01).";
    return {};
  }
  if (hosts.size() > 1 && !name_->text().trimmed().isEmpty()) {
    problem_ =
        "An agent name goes with one host: leave it empty for several (each is named "
        "after its host).";
    return {};
  }
  QStringList args{"--cluster", cluster_file_, "--build-dir", build_dir_};
  if (uninstall_->isChecked()) args << "--uninstall";
  args << "--port" << QString::number(port_->value());
  if (!name_->text().trimmed().isEmpty()) args << "--name" << name_->text().trimmed();
  if (slots_->value() > 0) args << "--slots" << QString::number(slots_->value());
  if (!user_->text().trimmed().isEmpty()) args << "--user" << user_->text().trimmed();
  if (!prefix_->text().trimmed().isEmpty()) args << "--prefix" << prefix_->text().trimmed();
  if (!apart_->isChecked())
    args << "--job-uids"
         << "off";
  if (!systemd_->isChecked()) args << "--no-systemd";
  return args + hosts;
}

bool InstallAgentDialog::running() const { return process_->state() != QProcess::NotRunning; }

void InstallAgentDialog::start() {
  const QStringList args = arguments();
  if (args.isEmpty()) {
    outcome_->setText(problem_);
    setTextColor(outcome_, stateColor(client::AgentState::kError));
    return;
  }
  if (installer_.isEmpty()) {
    outcome_->setText(
        "The installer is not here: it comes with Ringmaster's source tree "
        "(installer/install-agent.sh, which ships a build's agent). Set RINGMASTER_INSTALLER to "
        "its path, or run it from a terminal.");
    setTextColor(outcome_, stateColor(client::AgentState::kError));
    return;
  }
  log_->clear();
  outcome_->clear();
  step_->clear();
  pending_.clear();
  done_.clear();
  online_.clear();
  errors_.clear();
  in_error_ = false;
  hosts_count_ = int(hosts_->text().split(kHostSeparators, Qt::SkipEmptyParts).size());
  steps_per_host_ = uninstall_->isChecked() ? 5 : 8;
  progress_->setValue(0);
  setFormEnabled(false);
  run_->setText("Cancel");
  log_->appendPlainText("$ " + installer_ + " " + args.join(' '));
  process_->start(installer_, args);
}

void InstallAgentDialog::cancel() {
  if (!running()) return;
  errors_ << "cancelled";
  ::kill(-static_cast<pid_t>(process_->processId()), SIGTERM);
}

void InstallAgentDialog::reject() {
  if (running()) {
    cancel();
    return;  // the dialog stays until the installer has ended
  }
  QDialog::reject();
}

void InstallAgentDialog::onOutput() {
  pending_ += QString::fromUtf8(process_->readAllStandardOutput());
  qsizetype newline;
  while ((newline = pending_.indexOf('\n')) >= 0) {
    handleLine(pending_.left(newline));
    pending_.remove(0, newline + 1);
  }
}

void InstallAgentDialog::handleLine(const QString& line) {
  log_->appendPlainText(line);
  if (auto step = kStepLine.match(line); step.hasMatch()) {
    steps_per_host_ = step.captured(3).toInt();
    done_[step.captured(1)] = step.captured(2).toInt() - 1;  // this step has begun
    int done = 0;
    for (int value : done_) done += value;
    progress_->setValue(100 * done / std::max(1, steps_per_host_ * hosts_count_));
    step_->setText(step.captured(1).isEmpty() ? step.captured(4)
                                              : step.captured(1) + ": " + step.captured(4));
  } else if (auto online = kOnlineLine.match(line); online.hasMatch()) {
    online_ << online.captured(1);
  } else if (auto error = kErrorLine.match(line); error.hasMatch()) {
    errors_ << error.captured(1);
    in_error_ = true;
    return;
  } else if (in_error_ && kErrorDetailLine.match(line).hasMatch()) {
    // The indented lines after an error say what to do: keep them with it.
    errors_.last() += "\n" + kErrorDetailLine.match(line).captured(1);
    return;
  }
  in_error_ = false;
}

void InstallAgentDialog::onFinished(int exit_code, QProcess::ExitStatus status) {
  if (!pending_.isEmpty()) handleLine(pending_);
  pending_.clear();
  const bool ok = status == QProcess::NormalExit && exit_code == 0;
  progress_->setValue(ok ? 100 : progress_->value());
  step_->clear();
  QString text;
  if (ok && uninstall_->isChecked()) {
    text = "Uninstalled.";
  } else if (ok) {
    text = online_.size() == 1 ? QString("%1 is online.").arg(online_.first())
                               : QString("Online: %1.").arg(online_.join(", "));
  } else if (!errors_.isEmpty()) {
    text = (online_.isEmpty() ? QString() : QString("Online: %1. ").arg(online_.join(", "))) +
           "Failed: " + errors_.join("\n");
  } else {
    text = QString("The installer failed (exit %1): see its log above.").arg(exit_code);
  }
  outcome_->setText(text);
  setTextColor(outcome_, stateColor(ok ? client::AgentState::kOnline : client::AgentState::kError));
  setFormEnabled(true);
  run_->setText(uninstall_->isChecked() ? "Uninstall" : "Install");
  Q_EMIT installerFinished(ok, online_);
}

void InstallAgentDialog::setFormEnabled(bool enabled) {
  for (QWidget* widget : std::initializer_list<QWidget*>{hosts_, name_, port_, slots_, user_,
                                                         prefix_, systemd_, uninstall_}) {
    widget->setEnabled(enabled);
  }
}

}  // namespace ringmaster::gui
