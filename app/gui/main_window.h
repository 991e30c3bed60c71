#pragma once
// The ringmaster window: Cluster, New job and History tabs, then one tab per open job dashboard
// (and comparisons). It owns the SessionBridge (the I/O thread) and routes what it delivers:
// agent states to the cluster view and the editor, records to the open dashboards, finished jobs
// to a banner and the system tray. Window layout and open dashboards survive a restart.

#include <QMainWindow>
#include <QString>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "bridge/session_bridge.h"
#include "outcome_news.h"

class QLabel;
class QProgressBar;
class QPushButton;
class QSystemTrayIcon;
class QTabWidget;

class QTimer;

namespace ringmaster::gui {

class Banner;
class ClusterView;
class DashboardView;
class HistoryView;
class HardwareView;
class PreflightDialog;
class JobEditor;

struct AppOptions {
  QString cluster_file{};  // --cluster
  QString db_file{};       // --db
  bool demo = false;       // --demo: local agent, demo job, its dashboard
  QString demo_spec{};     // --demo-spec: the demo job; empty: resources_dir/jobs/demo.yaml
  QString resources_dir{};
};

// resources/ of this build: $RINGMASTER_RESOURCES, else the source tree it was built from.
QString defaultResourcesDir();

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(const AppOptions& options, QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens the session; false (with the reason shown) when the history or keys cannot be opened.
  bool start();
  // Starts (or finds) the embedded local agent and adds it to the cluster file as `local`;
  // then, when `then_demo`, submits the demo job and opens its dashboard.
  void startLocalAgent(bool then_demo);
  // Submits a spec and opens its dashboard when the agents accept it.
  void submitYaml(const QString& yaml, const QString& file_name);

  DashboardView* openDashboard(const QString& job_id, bool live = true);
  // The Hardware tab: its report read off the GUI thread, its runs opened, restarts without a host.
  // The checks kept in the history, into the preflight dialog's "Earlier checks".
  void loadKeptPreflights();
  void connectHardware();
  // Check cluster: a preflight of these agents (all when empty), shown in its dialog as it goes.
  void checkCluster(const QStringList& agents);
  DashboardView* dashboard(const QString& job_id) const;
  void openComparison(const QStringList& job_ids);
  // The selected runs' specs side by side (ConfigDiffView), kept across restarts.
  void openConfigDiff(const QStringList& job_ids);

  SessionBridge* bridge() { return &bridge_; }
  QTabWidget* tabs() const { return tabs_; }
  ClusterView* clusterView() const { return cluster_; }
  JobEditor* editor() const { return editor_; }
  HistoryView* history() const { return history_; }
  HardwareView* hardware() const { return hardware_; }
  QString bannerText() const;
  // The job the demo (or the last Launch) submitted; empty until the agents accepted it.
  QString lastSubmittedJob() const { return last_submitted_; }

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void buildMenus();
  void onRecords(const std::vector<AgentRecords>& batch);
  void onAgentStatus(const client::AgentStatus& status);
  void showAgentCount();
  // Drops the statuses of agents no longer in the cluster file (removed or uninstalled).
  void forgetRemovedAgents();
  void onSubmitted(uint64_t token, const Result<client::SubmittedJob>& result);
  void onRunsListed(uint64_t token, const Result<std::vector<client::RunSummary>>& runs);
  void onJobStateChanged(const QString& job_id, const QString& state);
  void onLocalAgentReady(bool ok, const QString& message, bool then_demo);
  void submitDemo();
  // Shows the banner and a tray message; Open (or clicking the message) runs `open`.
  void notify(const QString& title, const QString& text, bool failure, std::function<void()> open);
  std::function<void()> opensJob(const QString& job_id);
  std::function<void()> opensAgent(const QString& agent);
  void busy(const QString& what);
  void idle(const QString& message = {});
  void closeTab(int index);
  void restoreLayout();
  void saveLayout();

  AppOptions options_;
  client::ClientPaths paths_;
  SessionBridge bridge_;
  QTabWidget* tabs_;
  ClusterView* cluster_;
  JobEditor* editor_;
  HistoryView* history_;
  HardwareView* hardware_;
  uint64_t hardware_token_ = 0;
  PreflightDialog* preflight_ = nullptr;  // made at the first Check cluster
  uint64_t preflight_token_ = 0;
  QStringList preflight_agents_;  // of the newest preflight, for Run again
  Banner* banner_;
  OutcomeNews outcome_news_;      // which jobs' outcomes are still news for the banner
  std::string key_banner_agent_;  // the agent whose changed key the banner names, if any
  QProgressBar* progress_;
  QLabel* status_agents_;
  QSystemTrayIcon* tray_ = nullptr;
  std::map<QString, DashboardView*> dashboards_;
  std::map<QString, QString> job_states_;  // last state seen per open dashboard
  std::map<std::string, client::AgentStatus> agents_;
  std::set<QString> announced_;  // jobs whose start the banner told about
  bool history_damage_said_ = false;
  uint64_t submit_token_ = 0;
  uint64_t runs_token_ = 0;
  // A run started or ended (by any client): the history list is read again once the session's
  // writer has committed it (it flushes every second), coalescing bursts.
  QTimer* history_reload_ = nullptr;
  QString last_submitted_;
  QStringList restoring_history_selection_;  // until the History lists its runs
  QStringList restoring_config_diffs_;       // likewise: their specs come with the runs
  bool restored_ = false;                    // the layout is back: changes to it are saved
};

}  // namespace ringmaster::gui
