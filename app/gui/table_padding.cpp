#include "table_padding.h"

#include <QApplication>
#include <QHeaderView>
#include <QPainter>
#include <QProxyStyle>
#include <QStyledItemDelegate>

#include "app_style.h"

namespace ringmaster::gui {
namespace {

class PaddedCellDelegate : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;

  // The background, selection and icon over the whole cell; the text within the margins.
  void paint(QPainter* painter, const QStyleOptionViewItem& option,
             const QModelIndex& index) const override {
    QStyleOptionViewItem cell = option;
    initStyleOption(&cell, index);
    const QString text = cell.text;
    cell.text.clear();
    QStyle* style = cell.widget ? cell.widget->style() : QApplication::style();
    style->drawControl(QStyle::CE_ItemViewItem, &cell, painter, cell.widget);
    if (text.isEmpty()) return;
    cell.text = text;
    QRect room = style->subElementRect(QStyle::SE_ItemViewItemText, &cell, cell.widget)
                     .adjusted(kCellPaddingLeft, 0, -kCellPaddingRight, 0);
    const bool selected = cell.state & QStyle::State_Selected;
    painter->save();
    painter->setFont(cell.font);
    painter->setPen(cell.palette.color(selected ? QPalette::HighlightedText : QPalette::Text));
    painter->drawText(room, static_cast<int>(cell.displayAlignment),
                      cell.fontMetrics.elidedText(text, cell.textElideMode, room.width()));
    painter->restore();
  }
  QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override {
    return QStyledItemDelegate::sizeHint(option, index) +
           QSize(kCellPaddingLeft + kCellPaddingRight, 0);
  }
};

// Header labels inside the same margins as the cells below them.
class PaddedHeaderStyle : public QProxyStyle {
 public:
  // Over the app's own style (its sort arrows), not a bare Fusion a base-less proxy would make.
  PaddedHeaderStyle() : QProxyStyle(new AppStyle) {}
  void drawControl(ControlElement element, const QStyleOption* option, QPainter* painter,
                   const QWidget* widget) const override {
    if (element == CE_HeaderLabel) {
      if (const auto* header = qstyleoption_cast<const QStyleOptionHeader*>(option)) {
        QStyleOptionHeader padded = *header;
        padded.rect.adjust(kCellPaddingLeft, 0, -kCellPaddingRight, 0);
        QProxyStyle::drawControl(element, &padded, painter, widget);
        return;
      }
    }
    QProxyStyle::drawControl(element, option, painter, widget);
  }
  QSize sizeFromContents(ContentsType type, const QStyleOption* option, const QSize& size,
                         const QWidget* widget) const override {
    QSize hint = QProxyStyle::sizeFromContents(type, option, size, widget);
    if (type == CT_HeaderSection) hint.rwidth() += kCellPaddingLeft + kCellPaddingRight;
    return hint;
  }
};

}  // namespace

void padTableColumns(QTableView* table) {
  table->setItemDelegate(new PaddedCellDelegate(table));
  auto* style = new PaddedHeaderStyle;
  style->setParent(table->horizontalHeader());  // a widget does not own the style it is given
  table->horizontalHeader()->setStyle(style);
}

}  // namespace ringmaster::gui
