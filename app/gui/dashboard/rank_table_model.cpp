#include "dashboard/rank_table_model.h"

#include <QColor>
#include <algorithm>
#include <cmath>

#include "charts/palette.h"
#include "history/run_format.h"
#include "ringmaster/client/job_liveness.h"
#include "ringmaster/job/device_plan.h"
#include "ringmaster/train/parameter_server.h"
#include "table_copy.h"

namespace ringmaster::gui {
namespace {
constexpr double kStaleSeconds = 30;

// What a rank does in its job's strategy, from the metrics that say so; empty for none.
QString roleText(double ps_role, double pipeline_stage) {
  if (ps_role == static_cast<double>(train::PsRole::kServer)) return "server";
  if (ps_role == static_cast<double>(train::PsRole::kWorker)) return "worker";
  if (!std::isnan(pipeline_stage)) return QString("stage %1").arg(pipeline_stage);
  return {};
}
}  // namespace

QColor stateColor(const std::string& state) {
  if (state == "running") return QColor(0x4d, 0xa3, 0xff);
  if (state == "succeeded") return QColor(0x4c, 0xc3, 0x6a);
  if (state == "failed") return QColor(0xff, 0x55, 0x55);
  if (state == "stopped") return QColor(0xa0, 0xa0, 0xa0);
  if (state == "unknown") return QColor(0xc0, 0x80, 0xff);  // no evidence: neither good nor bad
  return QColor(0xd0, 0xb0, 0x40);                          // pending, submitted, starting
}

RankTableModel::RankTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void RankTableModel::update(const JobData& job, double now, const std::vector<int>& unknown) {
  now_ = now;
  // A rank's series of a metric; nullptr when it reported none.
  const auto seriesOf = [&job](const char* metric, int rank) -> const metrics::Series* {
    const auto* by_rank = job.metric(metric);
    if (!by_rank) return nullptr;
    const auto found = by_rank->find(rank);
    return found == by_rank->end() || found->second.empty() ? nullptr : &found->second;
  };
  const auto newest = [&](const char* metric, int rank) {
    const metrics::Series* s = seriesOf(metric, rank);
    return s ? s->back().value : std::numeric_limits<double>::quiet_NaN();
  };
  const bool reports_steps = client::launcherReportsSteps(job.launcher());
  std::vector<Row> rows;
  rows.reserve(job.ranks().size());
  for (const auto& [rank, info] : job.ranks()) {
    rows.push_back({info, newest("loss", rank), newest("step_time", rank),
                    roleText(newest(train::kPsRoleMetric, rank), newest("pipeline_stage", rank))});
    // Samples/s: the newest while the job runs, the run's mean once it is over (as the header).
    const metrics::Series* rate = seriesOf("samples_per_sec", rank);
    if (job.finished() && rate) rows.back().info.samples_per_sec = meanRate(*rate);
    if (std::binary_search(unknown.begin(), unknown.end(), rank)) {
      rows.back().info.state = "unknown";
    } else {
      rows.back().info.state = client::showRankState(info.state, info.step, reports_steps);
    }
  }
  if (rows.size() != rows_.size()) {
    beginResetModel();
    rows_ = std::move(rows);
    endResetModel();
    return;
  }
  rows_ = std::move(rows);
  if (!rows_.empty()) emit dataChanged(index(0, 0), index(rowCount() - 1, kCount - 1));
}

int RankTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int RankTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kCount;
}

int RankTableModel::rankAt(int row) const {
  return row >= 0 && row < rowCount() ? rows_[static_cast<size_t>(row)].info.rank : -1;
}

QVariant RankTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* kNames[] = {"Rank",          "Role",      "Agent",       "Device",
                                 "PID",           "State",     "Step",        "Loss",
                                 "Step time (s)", "Samples/s", "Last update", "Exit"};
  static_assert(std::size(kNames) == kCount);
  return section >= 0 && section < kCount ? QString(kNames[section]) : QVariant();
}

// What a column sorts by: numbers as numbers (a rank without a value sorts last), the rest as
// shown.
QVariant RankTableModel::sortValue(const Row& row, int column) const {
  const RankInfo& r = row.info;
  const auto number = [](double v) {
    return std::isnan(v) ? QVariant(std::numeric_limits<double>::infinity()) : QVariant(v);
  };
  switch (column) {
    case kRank:
      return r.rank;
    case kPid:
      return r.pid;
    case kStep:
      return static_cast<qlonglong>(r.step);
    case kLoss:
      return number(row.loss);
    case kStepTime:
      return number(row.step_time);
    case kSamplesPerSec:
      return number(r.samples_per_sec);
    case kLastUpdate:
      return r.last_update;
    default:
      return {};  // as shown
  }
}

QVariant RankTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const Row& row = rows_[static_cast<size_t>(index.row())];
  const RankInfo& r = row.info;
  if (role == kRankRole) return r.rank;
  if (role == kSortRole) {
    if (QVariant value = sortValue(row, index.column()); value.isValid()) return value;
    role = Qt::DisplayRole;
  }
  if (role == kCopyRole) {
    if (index.column() == kLoss && !std::isnan(row.loss)) return row.loss;
    if (index.column() == kStepTime && !std::isnan(row.step_time)) return row.step_time;
    if (index.column() == kSamplesPerSec && !std::isnan(r.samples_per_sec))
      return r.samples_per_sec;
    return {};
  }
  if (role == Qt::DecorationRole && index.column() == kRank) {
    return icons_.swatch(seriesColor(r.rank));
  }
  const double age = r.last_update > 0 ? now_ - r.last_update : -1;
  // An unknown rank was last heard running: it has no exit, and its age keeps growing.
  const bool going =
      r.state == "running" || r.state == "starting" || r.state == "pending" || r.state == "unknown";
  const bool stale = (r.state == "running" || r.state == "unknown") && age > kStaleSeconds;
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case kRank:
        return r.rank;
      case kRole:
        return row.role.isEmpty() ? QString("—") : row.role;
      case kAgent:
        return QString::fromStdString(r.agent);
      case kDevice:  // the UUID or the CPU's reason is in the tooltip
        return r.device.empty() ? QString("—") : QString::fromStdString(job::shortDevice(r.device));
      case kPid:
        return r.pid ? QVariant(r.pid) : QVariant("—");
      case kState:
        return QString::fromStdString(r.state);
      case kStep:
        return r.step >= 0 ? QVariant(static_cast<qlonglong>(r.step)) : QVariant("—");
      case kLoss:
        return std::isnan(row.loss) ? QVariant("—") : QVariant(formatLoss(row.loss));
      case kStepTime:
        return std::isnan(row.step_time) ? QVariant("—")
                                         : QVariant(QString::number(row.step_time, 'g', 3));
      case kSamplesPerSec:
        return std::isnan(r.samples_per_sec) ? QVariant("—")
                                             : QVariant(QString::number(r.samples_per_sec, 'f', 0));
      case kLastUpdate:
        if (!going) return age >= 0 ? QString("done") : QString("—");
        return age >= 0 ? formatDuration(age) + " ago" : QString("—");
      case kExit:
        if (going) return QString();
        if (r.signal) return QString("signal %1").arg(r.signal);
        return r.error.empty()
                   ? QString("code %1").arg(r.exit_code)
                   : QString("code %1: %2").arg(r.exit_code).arg(QString::fromStdString(r.error));
    }
  }
  if (role == Qt::ForegroundRole) {
    if (index.column() == kState) return stateColor(r.state);
    if (index.column() == kLastUpdate && stale) return QColor(0xff, 0xb0, 0x30);
    if (index.column() == kExit && r.state == "failed") return stateColor("failed");
  }
  if (role == Qt::TextAlignmentRole) {
    switch (index.column()) {
      case kRank:
      case kPid:
      case kStep:
      case kLoss:
      case kStepTime:
      case kSamplesPerSec:
        return int(Qt::AlignRight | Qt::AlignVCenter);
      default:
        return int(Qt::AlignLeft | Qt::AlignVCenter);
    }
  }
  if (role == Qt::ToolTipRole && index.column() == kRole && row.role == "server") {
    return QString("Holds a shard of the parameters and applies the optimizer to it");
  }
  if (role == Qt::ToolTipRole && index.column() == kRole && row.role == "worker") {
    return QString(
        "Computes gradients on its batches, pushes them to the servers, pulls the "
        "parameters back");
  }
  if (role == Qt::ToolTipRole && index.column() == kDevice && !r.device.empty()) {
    return QString::fromStdString(r.device);  // the GPU's UUID, or why the job is on the CPU
  }
  if (role == Qt::ToolTipRole && index.column() == kLastUpdate && r.last_update > 0) {
    const QString at = QString("Last record at %1").arg(formatFullTime(r.last_update));
    return stale ? at + QString("\nNo record from rank %1 for %2: is it hung?")
                            .arg(r.rank)
                            .arg(formatDuration(age))
                 : at;
  }
  return {};
}

}  // namespace ringmaster::gui
