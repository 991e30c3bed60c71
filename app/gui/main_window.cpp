#include "main_window.h"

#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDateTime>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QScreen>
#include <QSettings>
#include <QStatusBar>
#include <QSystemTrayIcon>
#include <QTabBar>
#include <QTabWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <filesystem>
#include <set>
#include <thread>

#include "banner.h"
#include "cluster/agent_table_model.h"
#include "cluster/cluster_view.h"
#include "cluster/preflight_dialog.h"
#include "dashboard/compare_view.h"
#include "dashboard/dashboard_view.h"
#include "editor/job_draft.h"
#include "editor/job_editor.h"
#include "hardware/hardware_view.h"
#include "history/config_diff_view.h"
#include "history/history_view.h"
#include "history/run_edit.h"
#include "local_agent.h"
#include "ringmaster/client/journal_sync.h"
#include "ringmaster/client/local_agent.h"
#include "ringmaster/job/job_model.h"
#include "ringmaster/job/spec.h"
#include "ringmaster/store/reader.h"
#include "theme.h"

namespace ringmaster::gui {
namespace {

constexpr int kClusterTab = 0, kEditorTab = 1, kHistoryTab = 2, kHardwareTab = 3, kFixedTabs = 4;
const char* const kOpenJobsKey = "window/openJobs";
const char* const kComparisonsKey = "window/comparisons";  // each: its job ids, one a line
const char* const kConfigDiffsKey = "window/configDiffs";  // the same, of Compare configs tabs
const char* const kHistorySelectionKey = "history/selected";

bool terminal(const QString& state) { return job::isOverState(state.toStdString()); }

}  // namespace

QString defaultResourcesDir() {
  return QString::fromStdString(client::resourcesDir(RINGMASTER_RESOURCES_DIR));
}

MainWindow::MainWindow(const AppOptions& options, QWidget* parent)
    : QMainWindow(parent),
      options_(options),
      outcome_news_(QDateTime::currentMSecsSinceEpoch() / 1000.0) {
  paths_ = client::ClientPaths::resolve(options.cluster_file.toStdString(),
                                        options.db_file.toStdString());
  if (options_.resources_dir.isEmpty()) options_.resources_dir = defaultResourcesDir();
  setWindowTitle("Ringmaster");
  // 1400x900, or less on a smaller screen (a 1280x720 laptop showed the window cut at the right).
  resize(QSize(1400, 900).boundedTo(screen()->availableGeometry().size()));

  tabs_ = new QTabWidget;
  tabs_->setDocumentMode(true);
  tabs_->setTabsClosable(true);
  tabs_->setMovable(false);
  // The key file is tiny and local; the session loads the same key when it starts.
  auto keys = client::loadClientKeys(paths_);
  cluster_ = new ClusterView(QString::fromStdString(paths_.cluster_file),
                             keys.isOk() ? QString::fromStdString(keys->public_key) : QString());
  editor_ = new JobEditor(options_.resources_dir);
  history_ = new HistoryView;
  hardware_ = new HardwareView;
  tabs_->addTab(cluster_, "Cluster");
  tabs_->addTab(editor_, "New job");
  tabs_->addTab(history_, "History");
  tabs_->addTab(hardware_, "Hardware");
  for (int i = 0; i < kFixedTabs; ++i) {
    tabs_->tabBar()->setTabButton(i, QTabBar::RightSide, nullptr);
  }
  connect(tabs_, &QTabWidget::tabCloseRequested, this, &MainWindow::closeTab);
  connect(tabs_, &QTabWidget::currentChanged, this, [this](int index) {
    if (index == kHistoryTab) runs_token_ = bridge_.listRuns();
    if (index == kHardwareTab) hardware_token_ = bridge_.hardwareReport(hardware_->since());
    if (restored_) saveLayout();
  });

  auto* central = new QWidget;
  auto* layout = new QVBoxLayout(central);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  layout->addWidget(tabs_, 1);
  setCentralWidget(central);
  // The banner: a job finished or failed, or an agent's key changed, named and clickable, over
  // the content's corner (it moves nothing).
  banner_ = new Banner(central);

  progress_ = new QProgressBar;
  progress_->setRange(0, 0);  // busy
  progress_->setMaximumWidth(160);
  progress_->setVisible(false);
  status_agents_ = new QLabel;
  statusBar()->addPermanentWidget(status_agents_);
  statusBar()->addPermanentWidget(progress_);

  if (QSystemTrayIcon::isSystemTrayAvailable()) {
    tray_ = new QSystemTrayIcon(QApplication::windowIcon(), this);
    tray_->setToolTip("Ringmaster");
    tray_->show();
    connect(tray_, &QSystemTrayIcon::messageClicked, this, [this] {
      showNormal();
      raise();
      banner_->openNews();
    });
  }

  connect(&bridge_, &SessionBridge::agentStatus, this, &MainWindow::onAgentStatus);
  connect(&bridge_, &SessionBridge::records, this, &MainWindow::onRecords);
  connect(&bridge_, &SessionBridge::submitted, this, &MainWindow::onSubmitted);
  connect(&bridge_, &SessionBridge::submitWaiting, this,
          [this](uint64_t token, const QString& line) {
            if (token == submit_token_) busy(line);
          });
  connect(&bridge_, &SessionBridge::runsListed, this, &MainWindow::onRunsListed);
  connect(&bridge_, &SessionBridge::sessionError, this,
          [this](const QString& message) { notify("Session problem", message, true, {}); });
  connect(&bridge_, &SessionBridge::stopped, this,
          [this](uint64_t, const QString& job_id, const Result<int>& result) {
            if (result.isOk()) {
              // A job on Slurm is cancelled there: its agents stop the ranks.
              const DashboardView* view = dashboard(job_id);
              idle(view && view->job().slurm()
                       ? QString("%1: cancelled in Slurm (scancel)").arg(job_id)
                       : QString("%1: %2 rank(s) signalled").arg(job_id).arg(*result));
            } else {
              QMessageBox::warning(this, "Stop job",
                                   QString::fromStdString(result.status().message()));
            }
          });
  connect(cluster_, &ClusterView::clusterFileChanged, this, [this] {
    bridge_.reloadCluster();
    forgetRemovedAgents();
    cluster_->setLocalAgentOffer(false);
  });
  connect(cluster_, &ClusterView::startLocalAgentRequested, this,
          [this] { startLocalAgent(false); });
  connect(cluster_, &ClusterView::openJobRequested, this,
          [this](const QString& id) { openDashboard(id, /*live=*/true); });
  connect(cluster_, &ClusterView::checkClusterRequested, this, [this] { checkCluster({}); });
  connect(editor_, &JobEditor::launchRequested, this, &MainWindow::submitYaml);
  connect(editor_, &JobEditor::checkAgentsRequested, this, &MainWindow::checkCluster);
  connect(history_, &HistoryView::openRun, this,
          [this](const QString& id) { openDashboard(id, /*live=*/true); });
  connect(history_, &HistoryView::compareRuns, this, &MainWindow::openComparison);
  connect(history_, &HistoryView::cloneRun, this, [this](const QString& yaml, const QString& name) {
    // A new job in the editor, named apart from the run it came from, saved nowhere yet.
    std::optional<JobDraft> draft = readJobDraft(yaml.toStdString());
    QString text = yaml;
    if (draft) {
      draft->name = (name.isEmpty() ? std::string("job") : name.toStdString()) + "-clone";
      text = QString::fromStdString(writeJobDraft(*draft));
    }
    editor_->setYaml(text, QString());
    tabs_->setCurrentWidget(editor_);
    statusBar()->showMessage(tr("Cloned %1 into the editor: launch it as a new job").arg(name),
                             8000);
  });
  connect(history_, &HistoryView::refreshRequested, this,
          [this] { runs_token_ = bridge_.listRuns(); });
  connectHardware();
  connect(history_, &HistoryView::compareConfigs, this, &MainWindow::openConfigDiff);
  // Archive, delete, undo: written by the session's one writer, then the runs are read again.
  connect(history_, &HistoryView::editRuns, this, [this](const RunEdit& edit) {
    // An open comparison stops drawing the runs deleted, and draws them again on Undo.
    if (edit.kind == RunEdit::Kind::kDelete || edit.kind == RunEdit::Kind::kUndelete) {
      QStringList ids;
      for (const std::string& id : edit.job_ids) ids << QString::fromStdString(id);
      for (int i = kFixedTabs; i < tabs_->count(); ++i) {
        if (auto* compare = qobject_cast<CompareView*>(tabs_->widget(i))) {
          compare->setRunsDeleted(ids, edit.kind == RunEdit::Kind::kDelete);
        }
      }
    }
    const double now = QDateTime::currentMSecsSinceEpoch() / 1000.0;
    bridge_.editHistory([edit, now](store::Writer& s) { return applyRunEdit(s, edit, now); });
  });
  connect(&bridge_, &SessionBridge::historyEdited, this, [this](uint64_t, const QString& error) {
    if (!error.isEmpty()) statusBar()->showMessage("history: " + error, 8000);
    runs_token_ = bridge_.listRuns();
  });
  history_reload_ = new QTimer(this);
  history_reload_->setSingleShot(true);
  history_reload_->setInterval(2000);
  connect(history_reload_, &QTimer::timeout, this, [this] { runs_token_ = bridge_.listRuns(); });
  buildMenus();
}

MainWindow::~MainWindow() {
  // Dashboards hold connections to the bridge: they go before it stops. Taking the tabs down is
  // not a layout to keep: saved, it emptied the one the window was closed with (issue 35).
  restored_ = false;
  tabs_->clear();
  bridge_.stop();
}

bool MainWindow::start() {
  Status started = bridge_.start(paths_);
  if (!started.isOk()) {
    QMessageBox::critical(
        this, "Ringmaster",
        "Cannot open the client state:\n" + QString::fromStdString(started.message()));
    return false;
  }
  cluster_->setLocalAgentOffer(!std::filesystem::exists(paths_.cluster_file));
  // Runs deleted when the app last ran, whose Undo it could not finish offering (it closed or
  // crashed inside the window), are purged now.
  bridge_.editHistory([](store::Writer& s) {
    return applyRunEdit(s, {RunEdit::Kind::kPurgeAll, {}}, 0);
  });
  restoreLayout();
  statusBar()->showMessage("history: " + QString::fromStdString(paths_.db_file), 5000);
  // The app did not close cleanly while a spec was being edited: it is back, unsaved.
  if (editor_->restoreDraft()) {
    notify("Restored the job spec you were editing",
           "The app did not close cleanly; the unsaved spec is back in New job.", false,
           [this] { tabs_->setCurrentWidget(editor_); });
  }
  if (options_.demo) startLocalAgent(/*then_demo=*/true);
  return true;
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu("&File");
  file->addAction("&New job", QKeySequence::New, this,
                  [this] { tabs_->setCurrentIndex(kEditorTab); });
  file->addAction("&Open job spec…", QKeySequence::Open, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, "Open job spec", {},
                                                      "Job specs (*.yaml *.yml);;All files (*)");
    if (path.isEmpty()) return;
    if (editor_->openFile(path)) tabs_->setCurrentIndex(kEditorTab);
  });
  file->addSeparator();
  file->addAction("Start &local agent", this, [this] { startLocalAgent(false); });
  file->addAction("Run the &demo job", this, [this] { startLocalAgent(true); });
  file->addSeparator();
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);
  QMenu* view = menuBar()->addMenu("&View");
  view->addAction("&Cluster", QKeySequence("Ctrl+1"), this,
                  [this] { tabs_->setCurrentIndex(kClusterTab); });
  view->addAction("&New job", QKeySequence("Ctrl+2"), this,
                  [this] { tabs_->setCurrentIndex(kEditorTab); });
  view->addAction("&History", QKeySequence("Ctrl+3"), this,
                  [this] { tabs_->setCurrentIndex(kHistoryTab); });
  view->addAction("Close &tab", QKeySequence::Close, this,
                  [this] { closeTab(tabs_->currentIndex()); });
  view->addSeparator();
  QMenu* appearance = view->addMenu("&Appearance");
  auto* choices = new QActionGroup(appearance);
  const QString saved = savedThemeChoice();
  for (const auto& [choice, label] : {std::pair{"auto", "Follow the &desktop"},
                                      std::pair{"dark", "&Dark"}, std::pair{"light", "&Light"}}) {
    QAction* action = appearance->addAction(label);
    action->setCheckable(true);
    action->setChecked(saved == choice);
    action->setActionGroup(choices);
    connect(action, &QAction::triggered, this, [choice = QString(choice)] {
      saveThemeChoice(choice);
      applyTheme(*qApp, preferredTheme());
    });
  }
  QMenu* help = menuBar()->addMenu("&Help");
  help->addAction("&About Ringmaster", this, [this] {
    QMessageBox::about(this, "Ringmaster",
                       "Ringmaster: data-parallel training on your GPU hosts.\n\nClient key: " +
                           bridge_.clientPublicKey() +
                           "\nCluster file: " + QString::fromStdString(paths_.cluster_file) +
                           "\nHistory: " + QString::fromStdString(paths_.db_file));
  });
}

void MainWindow::onAgentStatus(const client::AgentStatus& status) {
  cluster_->updateAgent(status);
  for (auto& [id, view] : dashboards_) view->setAgentStatus(status);
  history_->model()->setAgentStatus(status);
  // A changed key is named at once: it was rotated (the app needs the new one), or something
  // else answers at the agent's address.
  auto before = agents_.find(status.name);
  if (status.state == client::AgentState::kServerKeyMismatch &&
      (before == agents_.end() || before->second.state != status.state)) {
    const QString name = QString::fromStdString(status.name);
    notify(name + "'s key changed",
           "it no longer answers with the key pinned here: update it if the agent's key was "
           "rotated",
           true, opensAgent(name));
    key_banner_agent_ = status.name;
  } else if (status.name == key_banner_agent_ &&
             status.state != client::AgentState::kServerKeyMismatch) {
    banner_->hide();  // its key was updated (or the agent went away): the news is stale
    key_banner_agent_.clear();
  }
  agents_[status.name] = status;
  showAgentCount();
}

void MainWindow::showAgentCount() {
  std::vector<client::AgentStatus> all;
  int online = 0;
  for (const auto& [name, agent] : agents_) {
    all.push_back(agent);
    online += agent.state == client::AgentState::kOnline;
  }
  editor_->setAgents(all);
  status_agents_->setText(QString("agents: %1/%2 online").arg(online).arg(all.size()));
}

void MainWindow::forgetRemovedAgents() {
  std::set<std::string> listed;
  for (const auto& agent : cluster_->model()->endpoints()) listed.insert(agent.name);
  std::erase_if(agents_, [&](const auto& entry) { return !listed.count(entry.first); });
  showAgentCount();
}

void MainWindow::onRecords(const std::vector<AgentRecords>& batch) {
  for (auto& [id, view] : dashboards_) view->ingest(batch);
  // A job someone else started (ringmasterctl, another desktop) gets a banner to open it; old
  // records replayed from a journal do not.
  const double now = QDateTime::currentMSecsSinceEpoch() / 1000.0;
  for (const auto& [agent, records] : batch) {
    for (const auto& record : records) {
      const bool run_changed = record.has_job_accepted() || record.has_job_outcome() ||
                               record.has_job_finished() || record.has_job_restart() ||
                               record.has_job_decision() || record.has_rank_started();
      if (run_changed && !history_reload_->isActive()) history_reload_->start();
      // Lost records are named whenever this history first reads of them, however old.
      if (auto damage = client::damageReported(agent, record)) {
        const QString name = QString::fromStdString(agent);
        notify(name + " lost journal records", QString::fromStdString(damage->describe()), true,
               opensAgent(name));
        continue;
      }
      if (!record.has_job_accepted() || now - record.time() > 60) continue;
      // A preflight's link tests are the preflight dialog's to show, not new jobs to announce.
      if (client::isPreflightJob(record.job_accepted().name())) continue;
      const QString id = QString::fromStdString(record.job());
      if (dashboards_.count(id) || !announced_.insert(id).second) continue;
      notify("New job " + QString::fromStdString(record.job_accepted().name()),
             id + " started on " + QString::fromStdString(agent), false, opensJob(id));
    }
  }
}

DashboardView* MainWindow::dashboard(const QString& job_id) const {
  auto found = dashboards_.find(job_id);
  return found == dashboards_.end() ? nullptr : found->second;
}

void MainWindow::checkCluster(const QStringList& agents) {
  if (!preflight_) {
    preflight_ = new PreflightDialog(this);
    connect(preflight_, &PreflightDialog::runAgainRequested, this,
            [this] { checkCluster(preflight_agents_); });
    connect(&bridge_, &SessionBridge::preflightProgress, this,
            [this](uint64_t token, const QString& what) {
              if (token == preflight_token_) preflight_->setProgress(what);
            });
    connect(&bridge_, &SessionBridge::preflightDone, this,
            [this](uint64_t token, const Result<client::PreflightReport>& report) {
              if (token != preflight_token_) return;
              if (report.isOk()) {
                preflight_->setReport(*report);
              } else {
                preflight_->setError(QString::fromStdString(report.status().message()));
              }
              loadKeptPreflights();
            });
    loadKeptPreflights();
  }
  preflight_agents_ = agents;
  preflight_token_ = bridge_.preflight(agents);
  if (preflight_token_ == 0) preflight_->setError("no session: the cluster file could not be read");
  preflight_->show();
  preflight_->raise();
}

void MainWindow::loadKeptPreflights() {
  using Kept = Result<std::vector<client::PreflightReport>>;
  bridge_.readHistory<Kept>([](store::Reader& history) { return history.preflights(); }, preflight_,
                            [this](Kept kept) {
                              if (kept.isOk()) preflight_->setKeptReports(std::move(*kept));
                            });
}

void MainWindow::connectHardware() {
  connect(hardware_, &HardwareView::refreshRequested, this,
          [this](double since) { hardware_token_ = bridge_.hardwareReport(since); });
  connect(&bridge_, &SessionBridge::hardwareReported, this,
          [this](uint64_t token, const Result<hardware::HardwareReport>& report) {
            if (token != hardware_token_) return;
            if (report.isOk()) {
              hardware_->setReport(*report);
            } else {
              hardware_->setError(QString::fromStdString(report.status().message()));
            }
          });
  connect(hardware_, &HardwareView::openRun, this,
          [this](const QString& id) { openDashboard(id, /*live=*/true); });
  // The run's dashboard shows the restart as it goes (or why it could not).
  connect(hardware_, &HardwareView::restartWithout, this,
          [this](const QString& job_id, const QString& agent) {
            openDashboard(job_id, /*live=*/true);
            bridge_.restartJob(job_id, agent,
                               tr("restarted without %1 from the Hardware view").arg(agent));
            statusBar()->showMessage(tr("Restarting %1 without %2").arg(job_id, agent), 8000);
          });
}

DashboardView* MainWindow::openDashboard(const QString& job_id, bool live) {
  if (auto* existing = dashboard(job_id)) {
    tabs_->setCurrentWidget(existing);
    return existing;
  }
  auto* view = new DashboardView(&bridge_, job_id, live);
  for (const auto& [name, status] : agents_) view->setAgentStatus(status);
  dashboards_[job_id] = view;
  const int index = tabs_->addTab(view, job_id);
  tabs_->setTabToolTip(index, job_id);
  tabs_->setCurrentIndex(index);
  connect(view, &DashboardView::titleChanged, this, [this, view](const QString&, const QString& t) {
    const int at = tabs_->indexOf(view);
    if (at >= 0) tabs_->setTabText(at, t);
  });
  connect(view, &DashboardView::stateChanged, this, &MainWindow::onJobStateChanged);
  saveLayout();
  return view;
}

void MainWindow::openComparison(const QStringList& job_ids) {
  auto* view = new CompareView(&bridge_, job_ids);
  const int index = tabs_->addTab(view, QString("Compare %1 runs").arg(job_ids.size()));
  tabs_->setTabToolTip(index, job_ids.join("\n"));
  tabs_->setCurrentIndex(index);
  saveLayout();  // as tabs come and go, so that a crash loses none
}

void MainWindow::closeTab(int index) {
  if (index < kFixedTabs) return;
  QWidget* widget = tabs_->widget(index);
  for (auto it = dashboards_.begin(); it != dashboards_.end(); ++it) {
    if (it->second == widget) {
      job_states_.erase(it->first);
      DashboardView::forgetState(it->first);  // its hidden lines, sort and y axes
      dashboards_.erase(it);
      break;
    }
  }
  tabs_->removeTab(index);
  widget->deleteLater();  // closing a dashboard never stops its job
  saveLayout();
}

void MainWindow::onJobStateChanged(const QString& job_id, const QString& state) {
  const QString before = job_states_[job_id];
  job_states_[job_id] = state;
  if (!terminal(state) || before.isEmpty() || terminal(before)) return;
  const DashboardView* view = dashboard(job_id);
  if (!outcome_news_.take(job_id, view ? view->job().endTime() : 0)) return;
  const QString name = view ? QString::fromStdString(view->job().name()) : job_id;
  if (state == "failed") {
    notify(name + " failed", view ? view->problemText() : QString(), true, opensJob(job_id));
  } else {
    notify(name + " " + state, job_id, false, opensJob(job_id));
  }
}

std::function<void()> MainWindow::opensJob(const QString& job_id) {
  return [this, job_id] { openDashboard(job_id); };
}

std::function<void()> MainWindow::opensAgent(const QString& agent) {
  return [this, agent] {
    tabs_->setCurrentWidget(cluster_);
    cluster_->selectAgent(agent);
  };
}

void MainWindow::notify(const QString& title, const QString& text, bool failure,
                        std::function<void()> open) {
  key_banner_agent_.clear();
  banner_->announce(title, text, failure, std::move(open));
  if (tray_) {
    tray_->showMessage(title, text,
                       failure ? QSystemTrayIcon::Critical : QSystemTrayIcon::Information, 10000);
  }
}

QString MainWindow::bannerText() const { return banner_->text(); }

void MainWindow::busy(const QString& what) {
  progress_->setVisible(true);
  statusBar()->showMessage(what);
}

void MainWindow::idle(const QString& message) {
  progress_->setVisible(false);
  if (message.isEmpty()) {
    statusBar()->clearMessage();
  } else {
    statusBar()->showMessage(message, 8000);
  }
}

void MainWindow::submitYaml(const QString& yaml, const QString& file_name) {
  job::SpecParseResult parsed = job::parseJobSpec(
      yaml.toStdString(), file_name.isEmpty() ? "job.yaml" : file_name.toStdString());
  if (!parsed.ok()) {
    QMessageBox::warning(this, "Launch",
                         QString::fromStdString(job::formatDiagnostics(parsed.errors)));
    return;
  }
  job::JobSpec spec = *parsed.spec;
  if (spec.workdir.empty() && spec.launcher != job::Launcher::kNative) {
    // A relative script in a spec opened from a file runs next to that file.
    if (!file_name.isEmpty()) spec.workdir = QFileInfo(file_name).absolutePath().toStdString();
  }
  busy(QString("Submitting %1 (%2 ranks)…")
           .arg(QString::fromStdString(spec.name))
           .arg(spec.world_size));
  submit_token_ = bridge_.submit(std::move(spec));
}

void MainWindow::onSubmitted(uint64_t token, const Result<client::SubmittedJob>& result) {
  if (token != submit_token_) return;
  if (!result.isOk()) {
    idle();
    QString message = QString::fromStdString(result.status().message());
    if (message.startsWith("no cluster file")) {
      // A first launch without agents: the Cluster tab offers the local agent.
      message += "\n\nStart the local agent (or add one) in the Cluster tab, then launch again.";
      tabs_->setCurrentWidget(cluster_);
    }
    // Selectable, so that the reason can be copied into a ticket or a search.
    QMessageBox box(QMessageBox::Warning, "Launch failed", message, QMessageBox::Ok, this);
    box.setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
    box.exec();
    return;
  }
  const QString id = QString::fromStdString(result->job_id);
  last_submitted_ = id;
  announced_.insert(id);
  idle("submitted " + id);
  job_states_[id] = "submitted";  // before the dashboard, whose records may already be further
  openDashboard(id);
}

void MainWindow::onRunsListed(uint64_t token, const Result<std::vector<client::RunSummary>>& runs) {
  if (token != runs_token_) return;
  if (!runs.isOk()) {
    statusBar()->showMessage("history: " + QString::fromStdString(runs.status().message()), 8000);
    return;
  }
  history_->setRuns(*runs);
  // Said once: the runs listed from a damaged history may be incomplete.
  if (!history_damage_said_) {
    const std::vector<std::string> damaged = store::damagedHistories();
    if (!damaged.empty()) {
      history_damage_said_ = true;
      notify("History damaged", QString::fromStdString(damaged.front()), true,
             [this] { tabs_->setCurrentIndex(kHistoryTab); });
    }
  }
  // The runs selected when the app last closed, once they are listed.
  if (!restoring_history_selection_.isEmpty()) {
    history_->selectJobIds(std::exchange(restoring_history_selection_, {}));
  }
  for (const QString& ids : std::exchange(restoring_config_diffs_, {})) {
    const int current = tabs_->currentIndex();
    openConfigDiff(ids.split('\n', Qt::SkipEmptyParts));
    tabs_->setCurrentIndex(current);  // restored tabs do not take the user's place
  }
}

void MainWindow::startLocalAgent(bool then_demo) {
  busy("Starting the local agent…");
  const client::ClientPaths paths = paths_;
  const std::string key = bridge_.clientPublicKey().toStdString();
  QPointer<MainWindow> self(this);
  // Starting an agent takes a moment (it generates keys the first time): off the GUI thread.
  std::thread([self, paths, key, then_demo] {
    Status status = ensureLocalAgent(paths, key);
    QMetaObject::invokeMethod(
        qApp,
        [self, status, then_demo] {
          if (self) {
            self->onLocalAgentReady(status.isOk(), QString::fromStdString(status.message()),
                                    then_demo);
          }
        },
        Qt::QueuedConnection);
  }).detach();
}

void MainWindow::onLocalAgentReady(bool ok, const QString& message, bool then_demo) {
  if (!ok) {
    idle();
    QMessageBox::warning(this, "Local agent", message);
    return;
  }
  idle("local agent running");
  cluster_->setClusterFile(QString::fromStdString(paths_.cluster_file));
  cluster_->setLocalAgentOffer(false);
  bridge_.reloadCluster();
  if (then_demo) submitDemo();
}

void MainWindow::submitDemo() {
  const QString path = options_.demo_spec.isEmpty() ? options_.resources_dir + "/jobs/demo.yaml"
                                                    : options_.demo_spec;
  job::SpecParseResult parsed = job::loadJobSpec(path.toStdString());
  if (!parsed.ok()) {
    QMessageBox::warning(this, "Demo",
                         QString::fromStdString(job::formatDiagnostics(parsed.errors)));
    return;
  }
  job::JobSpec spec = *parsed.spec;
  if (spec.workdir.empty()) spec.workdir = options_.resources_dir.toStdString();
  busy("Submitting the demo job…");
  submit_token_ = bridge_.submit(std::move(spec));
}

void MainWindow::openConfigDiff(const QStringList& job_ids) {
  auto* view = new ConfigDiffView(history_->specsOf(job_ids));
  const int index = tabs_->addTab(view, tr("Configs of %1 runs").arg(job_ids.size()));
  tabs_->setTabToolTip(index, job_ids.join("\n"));
  tabs_->setCurrentIndex(index);
  saveLayout();
}

void MainWindow::restoreLayout() {
  QSettings settings;
  restoreGeometry(settings.value("window/geometry").toByteArray());
  restoreState(settings.value("window/state").toByteArray());
  // Everything is read before any tab opens: opening one saves the layout.
  const QStringList dashboards = settings.value(kOpenJobsKey).toStringList();
  const QStringList comparisons = settings.value(kComparisonsKey).toStringList();
  const int current = settings.value("window/currentTab", kClusterTab).toInt();
  // The specs are the History's: these open when its runs are first listed (onRunsListed).
  restoring_config_diffs_ = settings.value(kConfigDiffsKey).toStringList();
  restoring_history_selection_ = settings.value(kHistorySelectionKey).toStringList();
  for (const QString& id : dashboards) openDashboard(id);
  for (const QString& ids : comparisons) openComparison(ids.split('\n', Qt::SkipEmptyParts));
  if (current >= 0 && current < tabs_->count()) tabs_->setCurrentIndex(current);
  restored_ = true;
}

void MainWindow::saveLayout() {
  QSettings settings;
  QStringList open;
  for (int i = kFixedTabs; i < tabs_->count(); ++i) {
    if (auto* view = qobject_cast<DashboardView*>(tabs_->widget(i))) open << view->jobId();
  }
  settings.setValue(kOpenJobsKey, open);
  QStringList comparisons;
  for (int i = kFixedTabs; i < tabs_->count(); ++i) {
    if (qobject_cast<CompareView*>(tabs_->widget(i))) {
      comparisons << tabs_->tabToolTip(i);  // its job ids, one a line
    }
  }
  settings.setValue(kComparisonsKey, comparisons);
  QStringList config_diffs = restoring_config_diffs_;  // not open yet: still to be restored
  for (int i = kFixedTabs; i < tabs_->count(); ++i) {
    if (qobject_cast<ConfigDiffView*>(tabs_->widget(i))) config_diffs << tabs_->tabToolTip(i);
  }
  settings.setValue(kConfigDiffsKey, config_diffs);
  if (restoring_history_selection_.isEmpty()) {
    settings.setValue(kHistorySelectionKey, history_->selectedJobIds());
  }
  settings.setValue("window/geometry", saveGeometry());
  settings.setValue("window/state", saveState());
  settings.setValue("window/currentTab", tabs_->currentIndex());
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!editor_->maybeSave()) {
    event->ignore();
    return;
  }
  saveLayout();  // jobs keep running: the agents do not need this window
  event->accept();
}

}  // namespace ringmaster::gui
