#pragma once
// The History screen: every run of the SQLite history in a sortable, filterable table. Open one
// (double-click, Enter, or Open) to see it as a read-only dashboard; select two or more and
// Compare to overlay their series, or Compare configs to see their specs side by side. Archive
// hides runs (Show archived shows them again, marked); Delete asks first, naming the runs, then
// offers Undo for a while. The view only shows what it is given and asks for changes: the caller
// loads runs off the GUI thread (client::loadRunSummaries, on the session's I/O thread) and calls
// setRuns, and applies editRuns() there too (applyRunEdit), then loads again.

#include <QStringList>
#include <QWidget>
#include <functional>
#include <string>
#include <vector>

#include "history/config_diff_view.h"
#include "history/history_model.h"
#include "history/run_edit.h"

class QCheckBox;
class QFrame;
class QLabel;
class QComboBox;
class QLineEdit;
class QPushButton;
class QTableView;
class QTimer;

namespace ringmaster::gui {

class HistoryProxy;

class HistoryView : public QWidget {
  Q_OBJECT

 public:
  explicit HistoryView(QWidget* parent = nullptr);

  // Replaces the runs, keeping the selection, the current row and the sort where those runs
  // are still present.
  void setRuns(std::vector<RunSummary> runs);
  // Selected job ids in the order shown.
  QStringList selectedJobIds() const;
  // Selects these runs (those present), e.g. to restore a comparison.
  void selectJobIds(const QStringList& job_ids);
  void setFilterText(const QString& text);
  // "12 runs (3 shown)", with ", 2 selected" when any are.
  QString countText() const;

  // The table header's state (order, widths, hidden columns, sort), kept across restarts.
  static constexpr const char* kHeaderKey = "history/header";
  HistoryModel* model() { return model_; }
  HistoryProxy* proxy() { return proxy_; }
  QTableView* table() { return table_; }

  // Asked before a delete, with the names of the runs; true goes on. Default: a dialog.
  void setDeleteConfirmation(std::function<bool(const QStringList& runs)> confirm);
  // How long Undo is offered after a delete (default kUndoMs); then the runs are purged.
  static constexpr int kUndoMs = 10000;
  void setUndoWindowMs(int ms);
  // The runs deleted whose Undo is still offered (their purge not yet asked for).
  const QStringList& pendingDelete() const { return pending_delete_; }
  QString undoText() const;  // "Deleted 2 runs: a, b" while Undo is offered, else ""
  // Archives the selected runs, or unarchives them when all are archived; the Archive button.
  void archiveSelected();
  // The Delete… button (and the Delete key): confirm, mark deleted, offer Undo.
  void deleteSelected();
  void undoDelete();
  // The purge of the runs deleted last, now (the undo window ends, or another delete starts).
  void finishPendingDelete();

  // These runs' labels and specs, for a ConfigDiffView (runs not listed are left out).
  std::vector<RunSpec> specsOf(const QStringList& job_ids) const;

 signals:
  void openRun(const QString& job_id);           // double-click, Enter or Open
  void compareRuns(const QStringList& job_ids);  // two or more selected, Compare
  // One selected, Clone: its spec, to edit into a new job (the run itself is untouched).
  void cloneRun(const QString& spec_yaml, const QString& name);
  void refreshRequested();
  // Two or more selected, Compare configs: their specs side by side (specsOf()).
  void compareConfigs(const QStringList& job_ids);
  // Apply to the history (applyRunEdit, off the GUI thread), then load the runs again.
  void editRuns(const ringmaster::gui::RunEdit& edit);

 private:
  void updateActions();
  QString runLabel(const QString& job_id) const;  // the run's name, or its id
  void openCurrent();
  void cloneCurrent();
  void showColumnMenu(const QPoint& at);  // which columns show; kept with the header's state
  void tick();
  // The pending delete ends: undone (kUndelete) or made final (kPurge).
  void endPendingDelete(RunEdit::Kind kind);

  HistoryModel* model_;
  HistoryProxy* proxy_;
  QLineEdit* filter_;
  QComboBox* state_;
  QLabel* count_;
  QTableView* table_;
  QPushButton* open_;
  QPushButton* compare_;
  QPushButton* clone_;
  QPushButton* configs_;
  QPushButton* archive_;
  QPushButton* delete_;
  QPushButton* refresh_;
  QCheckBox* show_archived_;
  QFrame* undo_bar_;
  QLabel* undo_text_;
  QTimer* undo_timer_;
  QStringList pending_delete_;
  std::function<bool(const QStringList&)> confirm_delete_;
  QTimer* ticker_;
  bool columns_sized_ = false;
  int link_tests_ = 0;  // runs that are a preflight's link tests (setRuns)
};

}  // namespace ringmaster::gui
