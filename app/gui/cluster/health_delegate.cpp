#include "cluster/health_delegate.h"

#include <QApplication>
#include <QPainter>
#include <algorithm>

#include "cluster/agent_table_model.h"
#include "cluster/sparkline.h"

namespace ringmaster::gui {

void paintBar(QPainter& painter, const QRectF& rect, double fraction, const QColor& color,
              const QString& text, const QPalette& palette) {
  painter.save();
  painter.setRenderHint(QPainter::Antialiasing, true);
  QColor track = palette.color(QPalette::Base).lighter(160);
  painter.setPen(Qt::NoPen);
  painter.setBrush(track);
  painter.drawRoundedRect(rect, 3, 3);
  const double width = rect.width() * std::clamp(fraction, 0.0, 1.0);
  if (width > 0.5) {
    QColor fill = color;
    fill.setAlpha(190);
    painter.setBrush(fill);
    painter.drawRoundedRect(QRectF(rect.left(), rect.top(), width, rect.height()), 3, 3);
  }
  painter.setPen(palette.color(QPalette::Text));
  painter.drawText(rect.adjusted(6, 0, -6, 0), Qt::AlignVCenter | Qt::AlignLeft, text);
  painter.restore();
}

void HealthDelegate::paint(QPainter* painter, const QStyleOptionViewItem& option,
                           const QModelIndex& index) const {
  const QVariant fraction = index.data(AgentTableModel::kBarFractionRole);
  const QVariant sparkline = index.data(AgentTableModel::kSparklineRole);
  if (!fraction.isValid() && !sparkline.isValid()) {
    QStyledItemDelegate::paint(painter, option, index);
    return;
  }
  // Background and selection as the style draws them, without text.
  QStyleOptionViewItem background = option;
  initStyleOption(&background, index);
  background.text.clear();
  const QWidget* widget = option.widget;
  QStyle* style = widget ? widget->style() : QApplication::style();
  style->drawControl(QStyle::CE_ItemViewItem, &background, painter, widget);

  const QRectF area = QRectF(option.rect).adjusted(4, 4, -4, -4);
  if (sparkline.isValid()) {
    // On the selection's highlight a coloured line would vanish: draw it in the text colour.
    const bool selected = option.state & QStyle::State_Selected;
    paintSparkline(*painter, area, sparkline.value<Sparkline>(),
                   selected ? option.palette.color(QPalette::HighlightedText)
                            : index.data(AgentTableModel::kBarColorRole).value<QColor>());
    return;
  }
  paintBar(*painter, area, fraction.toDouble(),
           index.data(AgentTableModel::kBarColorRole).value<QColor>(),
           index.data(Qt::DisplayRole).toString(), option.palette);
}

QSize HealthDelegate::sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const {
  QSize size = QStyledItemDelegate::sizeHint(option, index);
  if (index.data(AgentTableModel::kSparklineRole).isValid()) size.setWidth(160);
  if (index.data(AgentTableModel::kBarFractionRole).isValid()) {
    size.setWidth(size.width() + 24);  // the bar's rounded ends and padding
  }
  return size.expandedTo(QSize(0, 30));
}

}  // namespace ringmaster::gui
