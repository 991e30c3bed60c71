#pragma once
// Runs side by side: each selected run of the history loaded whole, one chart per metric they
// report, one line per run (rank 0, or the job total for samples/s). Export any chart as PNG or
// its lines as CSV from the chart's context menu.

#include <QWidget>
#include <map>
#include <memory>
#include <vector>

#include "bridge/session_bridge.h"
#include "dashboard/job_data.h"

class QGridLayout;
class QLabel;

namespace ringmaster::gui {

class MetricChart;

class CompareView : public QWidget {
  Q_OBJECT
 public:
  CompareView(SessionBridge* bridge, const QStringList& job_ids, QWidget* parent = nullptr);
  ~CompareView() override;
  bool loaded() const { return pending_.empty(); }
  std::vector<MetricChart*> charts() const;

 private:
  void onJobLoaded(uint64_t token, const Result<client::JobSnapshot>& snapshot);
  void build();

  SessionBridge* bridge_;
  QStringList job_ids_;
  std::map<uint64_t, QString> pending_;  // load token -> job id
  std::map<QString, std::unique_ptr<JobData>> runs_;
  QStringList errors_;
  QLabel* legend_;
  QGridLayout* grid_;
  std::vector<MetricChart*> charts_;
};

}  // namespace ringmaster::gui
