#include "table_copy.h"

#include <QClipboard>
#include <QGuiApplication>
#include <QHeaderView>
#include <QKeyEvent>
#include <QTableView>
#include <algorithm>
#include <set>

namespace ringmaster::gui {
namespace {

QString cellText(const QModelIndex& index) {
  QVariant value = index.data(kCopyRole);
  if (!value.isValid()) value = index.data(Qt::DisplayRole);
  QString text = value.typeId() == QMetaType::Double ? QString::number(value.toDouble(), 'g', 17)
                                                     : value.toString();
  text.replace('\t', ' ').replace('\n', ' ');
  return text;
}

// Catches Ctrl+C before the view's own handler (which copies one cell).
class CopyFilter : public QObject {
 public:
  explicit CopyFilter(QAbstractItemView* view) : QObject(view), view_(view) {}

  bool eventFilter(QObject* watched, QEvent* event) override {
    const bool copy =
        (event->type() == QEvent::KeyPress || event->type() == QEvent::ShortcutOverride) &&
        static_cast<QKeyEvent*>(event)->matches(QKeySequence::Copy);
    if (watched != view_ || !copy) return false;
    if (event->type() == QEvent::KeyPress) {
      QGuiApplication::clipboard()->setText(selectedRowsAsTsv(*view_));
    }
    event->accept();
    return true;
  }

 private:
  QAbstractItemView* view_;
};

}  // namespace

QString selectedRowsAsTsv(const QAbstractItemView& view) {
  const QAbstractItemModel* model = view.model();
  if (!model || !view.selectionModel()) return {};
  std::set<int> rows;
  for (const QModelIndex& index : view.selectionModel()->selectedIndexes())
    rows.insert(index.row());
  if (rows.empty()) return {};
  const auto* table = qobject_cast<const QTableView*>(&view);
  std::vector<int> columns;
  for (int c = 0; c < model->columnCount(); ++c) {
    if (!table || !table->isColumnHidden(c)) columns.push_back(c);
  }
  // Columns in the order the header shows them (a user may have dragged them).
  if (table) {
    std::sort(columns.begin(), columns.end(), [table](int a, int b) {
      return table->horizontalHeader()->visualIndex(a) < table->horizontalHeader()->visualIndex(b);
    });
  }
  QStringList lines;
  QStringList header;
  for (int c : columns) header << model->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString();
  if (table) lines << header.join('\t');  // a list has no header to copy
  for (int row : rows) {
    QStringList cells;
    for (int c : columns) cells << cellText(model->index(row, c));
    lines << cells.join('\t');
  }
  return lines.join('\n') + '\n';
}

void installTableCopy(QAbstractItemView* view) { view->installEventFilter(new CopyFilter(view)); }

}  // namespace ringmaster::gui
