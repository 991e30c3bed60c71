#include "history/history_model.h"

#include <QApplication>
#include <QBrush>
#include <QDateTime>
#include <QFont>
#include <cmath>

#include "history/run_format.h"
#include "table_copy.h"

namespace ringmaster::gui {

namespace {

double systemNow() { return QDateTime::currentMSecsSinceEpoch() / 1000.0; }

QString qstr(const std::string& s) { return QString::fromStdString(s); }

// Sorting by state groups what needs attention first: failed, unknown (its agents are silent),
// then live, then the rest.
int stateSeverity(const std::string& state) {
  static const char* const kOrder[] = {"failed",   "unknown",    "waiting",  "running",
                                       "starting", "restarting", "stopping", "submitted",
                                       "stopped",  "succeeded"};
  for (int i = 0; i < static_cast<int>(std::size(kOrder)); ++i) {
    if (state == kOrder[i]) return i;
  }
  return static_cast<int>(std::size(kOrder));
}

}  // namespace

HistoryModel::HistoryModel(QObject* parent) : QAbstractTableModel(parent), now_(systemNow) {}

void HistoryModel::setRuns(std::vector<RunSummary> runs) {
  beginResetModel();
  runs_ = std::move(runs);
  endResetModel();
}

void HistoryModel::setAgentStatus(const client::AgentStatus& status) {
  if (!client::noteAgentStatus(status, &silent_agents_) || runs_.empty()) return;
  emit dataChanged(index(0, 0), index(static_cast<int>(runs_.size()) - 1, kColumns - 1));
}

client::ShownJob HistoryModel::shownOf(const RunSummary& run) const {
  return client::showJob(run.job.state, run.job.finished_at, run.ranks, silent_agents_,
                         client::launcherReportsSteps(run.job.launcher));
}

std::string HistoryModel::stateOf(const RunSummary& run) const { return shownOf(run).state; }

int HistoryModel::rowOf(const QString& job_id) const {
  const std::string id = job_id.toStdString();
  for (size_t i = 0; i < runs_.size(); ++i) {
    if (runs_[i].job.job_id == id) return static_cast<int>(i);
  }
  return -1;
}

void HistoryModel::setClock(std::function<double()> now) {
  now_ = now ? std::move(now) : systemNow;
}

double HistoryModel::durationOf(const RunSummary& run) const {
  const store::JobRow& job = run.job;
  if (job.submitted_at <= 0) return std::nan("");
  if (job.finished_at > 0) return std::max(0.0, job.finished_at - job.submitted_at);
  if (job.state != "running") return std::nan("");
  // Unknown: the clock stops at the silent agents' last answer (unknown when never seen).
  const client::ShownJob shown = shownOf(run);
  if (shown.unknown()) {
    return shown.clock_stop > 0 ? std::max(0.0, shown.clock_stop - job.submitted_at) : std::nan("");
  }
  return std::max(0.0, now_() - job.submitted_at);
}

bool HistoryModel::tickRunningDurations() {
  // One dataChanged per contiguous block of running rows keeps the repaint to those cells.
  bool any = false;
  int first = -1;
  const int n = static_cast<int>(runs_.size());
  for (int row = 0; row <= n; ++row) {
    const std::string state = row < n ? stateOf(runs_[row]) : std::string();
    const bool running = state == "running" || state == "starting";
    if (running && first < 0) first = row;
    if (!running && first >= 0) {
      emit dataChanged(index(first, kDuration), index(row - 1, kDuration),
                       {Qt::DisplayRole, kSortRole});
      any = true;
      first = -1;
    }
  }
  return any;
}

int HistoryModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(runs_.size());
}

int HistoryModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumns;
}

QVariant HistoryModel::sortValue(const RunSummary& run, int column) const {
  const store::JobRow& job = run.job;
  switch (column) {
    case kName:
      return qstr(job.name).toCaseFolded();
    case kState:
      return stateSeverity(stateOf(run));
    case kStarted:
      return job.submitted_at;
    case kDuration: {
      const double d = durationOf(run);
      return std::isnan(d) ? QVariant() : QVariant(d);
    }
    case kRanks:
      return job.world_size;
    case kAttempt:
      return static_cast<int>(job.attempt);
    case kFinalLoss:
      return std::isnan(run.final_loss) ? QVariant() : QVariant(run.final_loss);
    case kBestLoss:
      return std::isnan(run.best_loss) ? QVariant() : QVariant(run.best_loss);
    case kJobId:
      return qstr(job.job_id);
    default:
      return {};
  }
}

QVariant HistoryModel::displayValue(const RunSummary& run, int column) const {
  const store::JobRow& job = run.job;
  switch (column) {
    case kName: {
      const QString name = job.name.empty() ? QStringLiteral("(unnamed)") : qstr(job.name);
      return job.archived ? tr("%1 · archived").arg(name) : name;
    }
    case kState:
      return qstr(stateOf(run));
    case kStarted:
      return formatLocalTime(job.submitted_at);
    case kDuration:
      return formatDuration(durationOf(run));
    case kRanks:
      return QString::number(job.world_size);
    case kAttempt:
      return QString::number(job.attempt);
    case kFinalLoss:
      return formatLoss(run.final_loss);
    case kBestLoss:
      return formatLoss(run.best_loss);
    case kJobId:
      return qstr(job.job_id);
    default:
      return {};
  }
}

QVariant HistoryModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(runs_.size())) return {};
  const RunSummary& run = runs_[index.row()];
  const int column = index.column();
  switch (role) {
    case Qt::DisplayRole:
      return displayValue(run, column);
    case kSortRole:
      return sortValue(run, column);
    case kJobIdRole:
      return qstr(run.job.job_id);
    case kCopyRole:  // full precision for a spreadsheet (table_copy.h)
      if (column == kFinalLoss && !std::isnan(run.final_loss)) return run.final_loss;
      if (column == kBestLoss && !std::isnan(run.best_loss)) return run.best_loss;
      if (column == kDuration && !std::isnan(durationOf(run))) return durationOf(run);
      return {};
    case kStateRole:
      return qstr(stateOf(run));
    case kArchivedRole:
      return run.job.archived;
    case Qt::ForegroundRole:
      if (column == kState) return QBrush(stateColor(qstr(stateOf(run)), QApplication::palette()));
      if (run.job.archived) return QApplication::palette().brush(QPalette::PlaceholderText);
      return {};
    case Qt::DecorationRole:
      if (column == kState)
        return icons_.dot(stateColor(qstr(stateOf(run)), QApplication::palette()));
      return {};
    case Qt::FontRole:
      if (column == kState || run.job.archived) {
        QFont font = QApplication::font();
        font.setBold(column == kState);
        font.setItalic(run.job.archived);
        return font;
      }
      return {};
    case Qt::TextAlignmentRole:
      switch (column) {
        case kDuration:
        case kRanks:
        case kAttempt:
        case kFinalLoss:
        case kBestLoss:
          return QVariant(Qt::AlignRight | Qt::AlignVCenter);
        default:
          return QVariant(Qt::AlignLeft | Qt::AlignVCenter);
      }
    case Qt::ToolTipRole:
      if (column == kState || column == kDuration) {
        const client::JobLiveness liveness = shownOf(run).liveness;
        if (liveness.anyUnknown()) return qstr(liveness.describe());
      }
      if (column == kStarted && run.job.finished_at > 0)
        return QStringLiteral("started %1\nended %2")
            .arg(formatLocalTime(run.job.submitted_at), formatLocalTime(run.job.finished_at));
      if (column == kFinalLoss && !std::isnan(run.final_loss))
        return QStringLiteral("last loss reported by rank 0: %1")
            .arg(QString::number(run.final_loss, 'g', 10));
      if (column == kBestLoss && !std::isnan(run.best_loss))
        return QStringLiteral("lowest loss rank 0 reported in the newest attempt: %1")
            .arg(QString::number(run.best_loss, 'g', 10));
      if (column == kName || column == kJobId)
        return QStringLiteral("%1\n%2%3")
            .arg(qstr(run.job.name), qstr(run.job.job_id),
                 run.job.archived ? tr("\narchived: kept whole, left out of the list unless "
                                       "Show archived is on")
                                  : QString());
      return {};
    default:
      return {};
  }
}

QVariant HistoryModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::TextAlignmentRole) {
    switch (section) {
      case kDuration:
      case kRanks:
      case kAttempt:
      case kFinalLoss:
      case kBestLoss:
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
      default:
        return QVariant(Qt::AlignLeft | Qt::AlignVCenter);
    }
  }
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case kName:
      return tr("Name");
    case kState:
      return tr("State");
    case kStarted:
      return tr("Started");
    case kDuration:
      return tr("Duration");
    case kRanks:
      return tr("Ranks");
    case kAttempt:
      return tr("Attempt");
    case kFinalLoss:
      return tr("Final loss");
    case kBestLoss:
      return tr("Best loss");
    case kJobId:
      return tr("Job id");
    default:
      return {};
  }
}

}  // namespace ringmaster::gui
