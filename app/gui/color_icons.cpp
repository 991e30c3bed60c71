#include "color_icons.h"

#include <QPainter>
#include <QPixmap>

namespace ringmaster::gui {

QIcon dotIcon(const QColor& color) {
  QPixmap pixmap(32, 32);
  pixmap.fill(Qt::transparent);
  QPainter painter(&pixmap);
  painter.setRenderHint(QPainter::Antialiasing);
  painter.setPen(Qt::NoPen);
  painter.setBrush(color);
  painter.drawEllipse(QRectF(5, 5, 22, 22));
  return QIcon(pixmap);
}

const QIcon& ColorIcons::swatch(const QColor& color) const {
  auto found = swatches_.constFind(color.rgba());
  if (found != swatches_.constEnd()) return *found;
  QPixmap pixmap(16, 16);
  pixmap.fill(color);
  return *swatches_.insert(color.rgba(), QIcon(pixmap));
}

const QIcon& ColorIcons::dot(const QColor& color) const {
  auto found = dots_.constFind(color.rgba());
  if (found != dots_.constEnd()) return *found;
  return *dots_.insert(color.rgba(), dotIcon(color));
}

}  // namespace ringmaster::gui
