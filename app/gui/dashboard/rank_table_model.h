#pragma once
// The rank table of a dashboard: one row per rank with its agent, pid, state, step, samples/s,
// the age of its newest record and how it exited. A rank whose updates stopped while it is
// running stands out (the age turns amber after 30 s), so a hang is visible before any watchdog.

#include <QAbstractTableModel>
#include <vector>

#include "dashboard/job_data.h"

namespace ringmaster::gui {

class RankTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    kRank,
    kAgent,
    kDevice,
    kPid,
    kState,
    kStep,
    kSamplesPerSec,
    kLastUpdate,
    kExit,
    kCount
  };

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
  std::vector<RankInfo> rows_;
  double now_ = 0;
};

// Colour of a rank or job state, readable on a dark background.
QColor stateColor(const std::string& state);

}  // namespace ringmaster::gui
