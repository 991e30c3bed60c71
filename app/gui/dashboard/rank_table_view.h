#pragma once
// RankTableView: the dashboard's rank table, sorted through a proxy by each column's real value
// (RankTableModel::kSortRole), whole rows selected, Ctrl+C as tab-separated rows (table_copy.h).
//
// A live job re-sorts it at every refresh (by Loss, several times a second). Qt's selection
// follows the ranks through a re-sort, but a click does not: a row that moves between the press
// and the aim lands the click on another rank, and a shift-click's anchor is the rank first
// clicked wherever it went since, so a shift-click on the row next to it selected 7 of 8 rows.
// So the order is held while the pointer is over the rows (the values still update in place) and
// catches up when it leaves; the selection then follows its ranks to their new rows.
//
// Thread safety: a QWidget; GUI thread only.

#include <QTableView>

class QSortFilterProxyModel;

namespace ringmaster::gui {

class RankTableModel;

class RankTableView : public QTableView {
  Q_OBJECT
 public:
  explicit RankTableView(RankTableModel* ranks, QWidget* parent = nullptr);

  QSortFilterProxyModel* sortedRanks() const { return sorted_; }
  // True while the pointer is over the rows and re-sorting waits for it to leave.
  bool orderHeld() const;

 protected:
  bool viewportEvent(QEvent* event) override;

 private:
  void holdOrder(bool hold);

  QSortFilterProxyModel* sorted_;
};

}  // namespace ringmaster::gui
