#pragma once
// The runs of the SQLite history as a table model: one row per job, newest first as given.
// DisplayRole is what a person reads; kSortRole is the real value behind it (seconds, counts,
// the loss as a double), so sorting never compares display strings.

#include <QAbstractTableModel>
#include <QString>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "color_icons.h"

// store.h brings in the generated protobuf header, whose Inventory::slots() Qt's `slots` keyword
// macro would eat: hide the macro while it is parsed, whatever the includer included first.
#pragma push_macro("slots")
#undef slots
#include "ringmaster/client/agent_status.h"
#include "ringmaster/client/run_summary.h"
#pragma pop_macro("slots")

namespace ringmaster::gui {

using client::RunSummary;  // read on the I/O thread by client::loadRunSummaries

class HistoryModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    kName,
    kState,
    kStarted,
    kDuration,
    kRanks,
    kAttempt,
    kFinalLoss,
    kBestLoss,
    kJobId,
    kColumns
  };
  // The value to sort by: QString (name, id), int (state severity, ranks, attempt), double
  // (start time, duration, loss). An invalid QVariant where there is no value (no loss yet).
  static constexpr int kSortRole = Qt::UserRole + 1;
  static constexpr int kJobIdRole = Qt::UserRole + 2;  // QString, every column
  static constexpr int kStateRole = Qt::UserRole + 3;  // QString, every column
  // bool, every column: an archived run (shown only with "Show archived", greyed and italic,
  // its name marked "archived").
  static constexpr int kArchivedRole = Qt::UserRole + 4;

  explicit HistoryModel(QObject* parent = nullptr);

  // Replaces every row (a model reset; HistoryView restores its selection afterwards).
  void setRuns(std::vector<RunSummary> runs);
  const std::vector<RunSummary>& runs() const { return runs_; }
  // The row of a job id, -1 when absent.
  int rowOf(const QString& job_id) const;

  // An agent's state from the session: a running job whose going ranks are all on agents that do
  // not answer reads "unknown" (purple), its duration stopped at their last answer, and its
  // tooltip says which agent is silent since when; it reads as recorded again when they answer.
  void setAgentStatus(const client::AgentStatus& status);
  // The state shown: the recorded one, or "unknown" (see setAgentStatus).
  std::string stateOf(const RunSummary& run) const;

  // Seconds since the epoch, for running jobs' durations. Default: the system clock; tests pin it.
  void setClock(std::function<double()> now);
  double now() const { return now_(); }
  // Duration of a run: finished - started, or now - started while running; NaN when unknown.
  double durationOf(const RunSummary& run) const;
  // Signals a change of the Duration column of running rows only (called once a second by the
  // view). Returns false when no row is running.
  bool tickRunningDurations();

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  client::ShownJob shownOf(const RunSummary& run) const;
  QVariant sortValue(const RunSummary& run, int column) const;
  QVariant displayValue(const RunSummary& run, int column) const;

  std::vector<RunSummary> runs_;
  std::map<std::string, double> silent_agents_;  // name -> its last answer (0: never seen)
  std::function<double()> now_;
  ColorIcons icons_;  // state dots, one icon a colour
};

}  // namespace ringmaster::gui
