#pragma once
// Paints the health columns of the agents table: a bar with its number for cells that give
// AgentTableModel::kBarFractionRole, a sparkline for kSparklineRole, the usual text otherwise.

#include <QStyledItemDelegate>

namespace ringmaster::gui {

class HealthDelegate : public QStyledItemDelegate {
  Q_OBJECT

 public:
  using QStyledItemDelegate::QStyledItemDelegate;

  void paint(QPainter* painter, const QStyleOptionViewItem& option,
             const QModelIndex& index) const override;
  QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override;
};

// A horizontal bar with `text` over it, used by the table and the detail panel alike. The text
// stays in the palette's text colour: the fill is translucent enough to read it on top.
void paintBar(QPainter& painter, const QRectF& rect, double fraction, const QColor& color,
              const QString& text, const QPalette& palette);

}  // namespace ringmaster::gui
