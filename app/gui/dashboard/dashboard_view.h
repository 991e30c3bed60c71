#pragma once
// The dashboard of one job: a header that says how it is doing and names the one thing that went
// wrong, charts of every metric (ranks as toggleable lines, linked zoom, step or wall-time axis,
// EMA smoothing), the health of its hosts on the same time axis, the straggler heatmap, and tabs
// with the rank table, the event timeline and the rank logs.
//
// Records are applied as they come; the view redraws on a timer only when something changed, so
// a flood of metrics costs one redraw per frame whatever its rate.

#include <QWidget>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "bridge/session_bridge.h"
#include "charts/metric_chart.h"
#include "dashboard/job_data.h"
#include "ringmaster/client/job_liveness.h"

class QCheckBox;
class QComboBox;
class QGridLayout;
class QLabel;
class QListWidget;
class QListWidgetItem;
class QMenu;
class QPushButton;
class QLayout;
class QScrollArea;
class QSplitter;
class QSlider;
class QTabWidget;
class QTimer;
class QTreeWidget;
class QTreeWidgetItem;

namespace ringmaster::gui {

class ElidingButton;
class LogPane;
class RankTableModel;
class RankTableView;
class StragglerHeatmap;

class DashboardView : public QWidget {
  Q_OBJECT
 public:
  // live: the job may still run (records follow); false for a past run (read-only).
  DashboardView(SessionBridge* bridge, const QString& job_id, bool live, QWidget* parent = nullptr);
  ~DashboardView() override;

  QString jobId() const { return job_id_; }
  const JobData& job() const { return *job_; }
  // Drops what a dashboard of `job_id` kept of its view (closing its tab for good).
  static void forgetState(const QString& job_id);
  // The x axis of every chart, as the axis box lists them; kept across restarts (QSettings).
  enum class XChoice { kStep, kRelativeTime, kWallTime };
  void setXChoice(XChoice choice);
  XChoice xChoice() const { return x_choice_; }
  // Each rank's own line, or the ranks' mean with their min–max band (W&B's grouped runs): what
  // 64 lines cannot show at a glance. Kept across restarts.
  void setShowSpread(bool spread);
  bool showsSpread() const { return show_spread_; }
  static constexpr const char* kSpreadKey = "dashboard/spread";
  static constexpr const char* kXAxisKey = "dashboard/xAxis";
  static constexpr const char* kSplitKey = "dashboard/split";          // charts | tables
  static constexpr const char* kChartsRowKey = "dashboard/chartsRow";  // rank list | charts
  static constexpr const char* kSmoothingKey = "dashboard/smoothing";
  bool loaded() const { return loaded_; }
  // What the history says of the job, read elsewhere (a view without a session: tests).
  void ingestSnapshot(const client::JobSnapshot& snapshot);

  // Records of any job or host; the view keeps what concerns its job. Before the history
  // snapshot has arrived they are held back, then applied after it.
  void ingest(const std::vector<AgentRecords>& batch);
  // Redraws now everything that changed (the timer does it otherwise, a few charts a turn).
  void refreshNow();
  // Whether an agent answers: the ranks of a silent one are "unknown since" its last answer,
  // never shown as what was last heard of them.
  void setAgentStatus(const client::AgentStatus& status);
  // The job as its header shows it (client::showJob): its state, or unknown when the agents of
  // its going ranks are silent, and which ranks are unknown.
  client::ShownJob shown() const;

  std::vector<MetricChart*> charts() const;
  MetricChart* chart(const QString& title) const;
  RankTableModel* rankModel() const { return rank_model_; }
  StragglerHeatmap* heatmap() const { return heatmap_; }
  QString headline() const;
  QString problemText() const;
  // The checkpoint economics line of a running job ("" when hidden).
  QString checkpointText() const;

 protected:
  // A new palette (View > Appearance): the job total's line takes the new text colour.
  void changeEvent(QEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;  // the title, elided to the new width

 public:
 signals:
  void stateChanged(const QString& job_id, const QString& state);
  void titleChanged(const QString& job_id, const QString& title);

 private:
  // The constructor's parts: the widgets, then what they do.
  QLayout* buildHeader();
  QLayout* buildControls();
  QSplitter* buildChartsRow();
  QTabWidget* buildTables();
  void connectControls();
  void connectRankList();
  void connectActions();
  void startTimers();
  // The job read from the history on the session's worker, adopted here (or why not).
  void onJobLoaded(Result<std::unique_ptr<JobData>> loaded);
  void apply(const std::vector<AgentRecords>& batch);
  void onRedrawTick();
  bool onScreen(const QWidget* chart) const;  // some of it in the scroll area's view
  // Models, lines and heatmap; marks the charts stale. New charts: one per call unless all_charts.
  void updateViews(bool all_charts = false);
  bool rebuildCharts(bool all);  // true when every wanted chart exists
  // The charts the job's metrics and hosts call for, in their place order.
  std::vector<QString> wantedCharts() const;
  MetricChart* addChart(const QString& title, bool health);
  // How many charts' lines were out of date; all of them are updated, or only the first.
  int updateLines(bool all);
  void elideTitle();
  void updateHeader();
  void updateCheckpointLine();
  QString summaryText(const client::ShownJob& shown) const;
  QString whereText() const;
  void updateProblemLine(const client::ShownJob& shown);
  enum class ProblemTone { kUnknown, kWarning, kFailure };
  void showProblem(const QString& text, ProblemTone tone);  // the line under the header
  void updateEvents();
  // The events list's row of job_->events()[index] (its time in full and its detail as tooltips).
  QTreeWidgetItem* eventItem(size_t index) const;
  void updateMarkers();
  void updateRankList();
  // Checks only `only` in the rank list (null: every entry) and redraws every chart's lines.
  void showOnlyLines(QListWidgetItem* only);
  std::optional<double> timeOrigin() const;  // the job's start on a relative time axis
  void linkRange(MetricChart* source, double x0, double x1);
  void showRankLog(int rank);
  // Marks the event on every chart and zooms them to a tenth of the run around it.
  void focusOnEvent(const JobEvent& event);
  void showEventLog(const JobEvent& event);  // its rank's log of its attempt
  // This job's view state kept across restarts (QSettings "dashboards/<job id>/<what>"): the
  // lines hidden in the rank list, the rank table's sort, each chart's y axis set by hand.
  QString stateKey(const char* what) const;
  QString yAxisKey(const QString& chart_title) const;
  void saveHiddenLines();
  void saveYAxis(const MetricChart* chart, const QString& title);
  void restoreYAxis(MetricChart* chart, const QString& title);
  void confirmStop();
  void confirmKill(int rank);
  // Restart from the newest checkpoint, without `exclude_agent` when not empty; asks first.
  void confirmRestart(const QString& exclude_agent, const QString& reason);
  void fillRestartMenu();
  void showRankMenu(const QPoint& at);

  SessionBridge* bridge_;
  QString job_id_;
  bool live_;
  std::unique_ptr<JobData> job_;
  bool loaded_ = false;
  std::vector<AgentRecords> held_;  // records that came before the snapshot
  uint64_t drawn_version_ = ~0ull;
  bool catching_up_ = false;  // a turn of onRedrawTick() is due (charts still to build)
  std::string last_state_;
  size_t attempt_events_seen_ = ~size_t{0};      // events when the log pane last got the attempts
  std::map<std::string, double> silent_agents_;  // not answering, with the time of the last answer
  XChoice x_choice_ = XChoice::kStep;
  bool show_spread_ = false;
  QComboBox* lines_box_;
  metrics::Axis axis_ = metrics::Axis::kStep;
  double smoothing_ = 0.6;

  QLabel* title_;
  QString title_full_;  // "name  ·  job id", which title_ shows elided where it does not fit
  QLabel* summary_;
  QLabel* about_;
  QLabel* checkpoint_;  // checkpoint economics, while the job runs
  ElidingButton* problem_;
  QPushButton* stop_;
  QPushButton* restart_;
  QMenu* restart_menu_;
  QComboBox* axis_box_;
  QSlider* smoothing_slider_;
  QLabel* smoothing_label_;
  QListWidget* rank_list_;
  QGridLayout* chart_grid_;
  QWidget* chart_area_;
  QScrollArea* scroll_;
  std::map<QString, MetricChart*> charts_;  // by title
  std::set<MetricChart*> stale_charts_;     // data changed since their last refresh
  std::vector<QString> chart_order_;
  std::map<QString, std::vector<std::pair<int, QString>>> chart_keys_;  // lines drawn per chart
  StragglerHeatmap* heatmap_;
  QTabWidget* tabs_;
  RankTableModel* rank_model_;
  RankTableView* rank_table_;
  QTreeWidget* events_;
  size_t events_shown_ = 0;
  std::set<int> hidden_lines_;                 // rank-list keys unchecked (kept: see stateKey())
  QTreeWidgetItem* checkpoint_run_ = nullptr;  // the row of the newest run of checkpoints
  std::vector<ChartMarker> markers_;           // the job's failures, on every chart
  LogPane* log_pane_;
  QTimer* redraw_timer_;
  QTimer* clock_timer_;
};

}  // namespace ringmaster::gui
