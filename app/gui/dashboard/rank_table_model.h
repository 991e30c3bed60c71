#pragma once
// The rank table of a dashboard: one row per rank (with its line colour) with its role in the
// job's strategy (a parameter server's "server" or "worker", a pipeline's "stage N", from the
// ps_role and pipeline_stage metrics; "—" for plain data parallelism), agent, device, pid, state,
// step, last loss, last step time, samples/s, the age of its newest record and how
// it exited. A rank whose updates stopped while it is running stands out (the age turns amber
// after 30 s), so a hang is visible before any watchdog. kSortRole gives every column's real
// value for a QSortFilterProxyModel; kCopyRole (table_copy.h) the numbers at full precision.

#include <QAbstractTableModel>
#include <limits>
#include <vector>

#include "color_icons.h"
#include "dashboard/job_data.h"

namespace ringmaster::gui {

class RankTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    kRank,
    kRole,
    kAgent,
    kDevice,
    kPid,
    kState,
    kStep,
    kLoss,
    kStepTime,
    kSamplesPerSec,
    kLastUpdate,
    kExit,
    kCount
  };

  static constexpr int kSortRole = Qt::UserRole + 1;
  static constexpr int kRankRole = Qt::UserRole + 2;  // int, every column

  explicit RankTableModel(QObject* parent = nullptr);
  // Re-reads the ranks (rows are only inserted, never reordered, so selection survives).
  // `unknown`: ranks whose agent does not answer, shown as "unknown" whatever was last heard.
  void update(const JobData& job, double now, const std::vector<int>& unknown = {});

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
  int rankAt(int row) const;

 private:
  struct Row {
    RankInfo info;
    double loss = std::numeric_limits<double>::quiet_NaN();  // the rank's newest, NaN: none
    double step_time = std::numeric_limits<double>::quiet_NaN();
    QString role;  // empty: none reported
  };
  QVariant sortValue(const Row& row, int column) const;
  std::vector<Row> rows_;
  double now_ = 0;
  ColorIcons icons_;  // each rank's swatch
};

// Colour of a rank or job state, readable on a dark background.
QColor stateColor(const std::string& state);

}  // namespace ringmaster::gui
