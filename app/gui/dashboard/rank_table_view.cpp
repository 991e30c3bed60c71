#include "dashboard/rank_table_view.h"

#include <QEvent>
#include <QHeaderView>
#include <QSortFilterProxyModel>
#include <algorithm>

#include "dashboard/rank_table_model.h"
#include "table_copy.h"

namespace ringmaster::gui {

RankTableView::RankTableView(RankTableModel* ranks, QWidget* parent)
    : QTableView(parent), sorted_(new QSortFilterProxyModel(this)) {
  sorted_->setSourceModel(ranks);
  sorted_->setSortRole(RankTableModel::kSortRole);
  setModel(sorted_);
  setSortingEnabled(true);
  setSelectionBehavior(QAbstractItemView::SelectRows);
  setSelectionMode(QAbstractItemView::ExtendedSelection);
  installTableCopy(this);
  verticalHeader()->setVisible(false);
  horizontalHeader()->setStretchLastSection(true);
  // Every header whole beside its sort arrow ("Step time (s)" was cut at the default width).
  QHeaderView* header = horizontalHeader();
  for (int c = 0; c < ranks->columnCount(); ++c) {
    const QString text = ranks->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString();
    header->resizeSection(c, std::max(header->defaultSectionSize(),
                                      header->fontMetrics().horizontalAdvance(text) + 36));
  }
  setAlternatingRowColors(true);
}

bool RankTableView::orderHeld() const { return !sorted_->dynamicSortFilter(); }

bool RankTableView::viewportEvent(QEvent* event) {
  switch (event->type()) {
    case QEvent::Enter:
    case QEvent::MouseButtonPress:  // a press without an Enter first (a popup just closed)
      holdOrder(true);
      break;
    case QEvent::Leave:
      holdOrder(false);
      break;
    default:
      break;
  }
  return QTableView::viewportEvent(event);
}

void RankTableView::holdOrder(bool hold) {
  if (orderHeld() == hold) return;
  // Back on, the proxy sorts at once by the newest values; Qt's selection follows the rows.
  sorted_->setDynamicSortFilter(!hold);
}

}  // namespace ringmaster::gui
