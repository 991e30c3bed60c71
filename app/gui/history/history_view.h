#pragma once
// The History screen: every run of the SQLite history in a sortable, filterable table. Open one
// (double-click, Enter, or Open) to see it as a read-only dashboard; select two or more and
// Compare to overlay their series. The view only shows what it is given: the caller loads runs
// off the GUI thread (client::loadRunSummaries, on the session's I/O thread) and calls setRuns.

#include <QStringList>
#include <QWidget>
#include <vector>

#include "history/history_model.h"

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

 signals:
  void openRun(const QString& job_id);           // double-click, Enter or Open
  void compareRuns(const QStringList& job_ids);  // two or more selected, Compare
  // One selected, Clone: its spec, to edit into a new job (the run itself is untouched).
  void cloneRun(const QString& spec_yaml, const QString& name);
  void refreshRequested();

 private:
  void updateActions();
  void openCurrent();
  void cloneCurrent();
  void showColumnMenu(const QPoint& at);  // which columns show; kept with the header's state
  void tick();

  HistoryModel* model_;
  HistoryProxy* proxy_;
  QLineEdit* filter_;
  QComboBox* state_;
  QLabel* count_;
  QTableView* table_;
  QPushButton* open_;
  QPushButton* compare_;
  QPushButton* clone_;
  QPushButton* refresh_;
  QTimer* ticker_;
  bool columns_sized_ = false;
};

}  // namespace ringmaster::gui
