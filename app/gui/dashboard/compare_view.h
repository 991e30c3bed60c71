#pragma once
// Runs side by side: each selected run of the history loaded whole, one chart per metric they
// report, one line per run (rank 0, or the job total for samples/s). Export any chart as PNG or
// its lines as CSV from the chart's context menu.
//
// The x axis is the dashboard's choice (DashboardView::XChoice, kept across restarts): steps;
// the time since each run started, so that runs launched hours apart start together; or the
// wall clock, to see which ran when. Hovering names the runs without a point there.

#include <QWidget>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "bridge/session_bridge.h"
#include "charts/metric_chart.h"
#include "dashboard/dashboard_view.h"
#include "dashboard/job_data.h"

class QComboBox;
class QGridLayout;
class QLabel;

namespace ringmaster::gui {

class CompareView : public QWidget {
  Q_OBJECT
 public:
  // Loads each run from the history through the bridge.
  CompareView(SessionBridge* bridge, const QStringList& job_ids, QWidget* parent = nullptr);
  // Runs already loaded (job id, snapshot), in this order.
  explicit CompareView(const std::vector<std::pair<QString, client::JobSnapshot>>& runs,
                       QWidget* parent = nullptr);
  ~CompareView() override;
  bool loaded() const { return pending_.empty(); }
  std::vector<MetricChart*> charts() const;

  using XChoice = DashboardView::XChoice;
  static constexpr const char* kXAxisKey = "compare/xAxis";
  void setXChoice(XChoice choice);  // redraws every chart; kept in QSettings
  XChoice xChoice() const { return x_choice_; }
  // Runs deleted in the History are not drawn (the legend says so) until their delete is undone.
  void setRunsDeleted(const QStringList& job_ids, bool deleted);
  // A run's lines hidden on every chart (as a click on its legend entry does), kept in QSettings
  // for this set of runs.
  void setRunHidden(const QString& job_id, bool hidden);

 private:
  explicit CompareView(QWidget* parent);  // the widgets, no runs yet
  void onJobLoaded(const QString& job_id, Result<std::unique_ptr<JobData>> loaded);
  void build();
  QString hiddenKey() const;  // where this set of runs keeps its hidden ones
  void updateLegend();
  void applyXChoice();
  // The run's start (its submission; else its first point in any series), in unix seconds.
  double startOf(const QString& id) const;
  // `series` of run `id` moved in time so that the run starts at `base` (relative time).
  const metrics::Series* shifted(const QString& id, const metrics::Series* series, double base);

  SessionBridge* bridge_ = nullptr;
  QStringList job_ids_;
  std::set<QString> pending_;  // runs still being read from the history
  std::map<QString, std::unique_ptr<JobData>> runs_;
  QStringList errors_;
  std::map<QString, QColor> colors_;  // each run's, in the legend and its lines
  std::map<QString, QString> labels_;
  std::set<QString> deleted_;
  std::set<QString> hidden_;
  std::vector<std::vector<QString>> drawn_ids_;  // per chart: the run of each line drawn
  QLabel* legend_;
  QComboBox* axis_box_;
  QGridLayout* grid_;
  std::vector<MetricChart*> charts_;
  // Each chart's lines as loaded, with the run each line is of.
  std::vector<std::vector<std::pair<QString, ChartLine>>> chart_lines_;
  std::map<const metrics::Series*, metrics::Series> shifted_;  // by the series they move
  XChoice x_choice_ = XChoice::kStep;
};

}  // namespace ringmaster::gui
