#include "dashboard/eliding_label.h"

#include <QHelpEvent>
#include <QPainter>
#include <QStyle>
#include <QToolTip>
#include <algorithm>

namespace ringmaster::gui {
namespace {
constexpr int kPreferredChars = 48;
}  // namespace

ElidingLabel::ElidingLabel(QWidget* parent) : QLabel(parent) {
  setTextFormat(Qt::PlainText);
  setWordWrap(false);
  setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Preferred);
}

QSize ElidingLabel::sizeHint() const {
  const QMargins contents = contentsMargins();
  const int margins = contents.left() + contents.right() + 2 * (margin() + frameWidth());
  const int text_width = std::min(fontMetrics().horizontalAdvance(firstLine()),
                                  fontMetrics().averageCharWidth() * kPreferredChars);
  return {margins + text_width, QLabel::minimumSizeHint().height()};
}

QSize ElidingLabel::minimumSizeHint() const {
  return {fontMetrics().horizontalAdvance(QStringLiteral("MMM…")),
          QLabel::minimumSizeHint().height()};
}

bool ElidingLabel::isElided() const {
  return fontMetrics().horizontalAdvance(firstLine()) > textRect().width() || firstLine() != text();
}

QString ElidingLabel::firstLine() const { return text().section('\n', 0, 0); }

QRect ElidingLabel::textRect() const {
  const int m = margin();
  return contentsRect().adjusted(m, m, -m, -m);
}

void ElidingLabel::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  const QRect rect = textRect();
  const QString shown = fontMetrics().elidedText(firstLine(), Qt::ElideRight, rect.width());
  style()->drawItemText(&painter, rect, QStyle::visualAlignment(layoutDirection(), alignment()),
                        palette(), isEnabled(), shown, foregroundRole());
}

bool ElidingLabel::event(QEvent* event) {
  // A tooltip of its own (set by the caller) wins; else the whole text, when it is cut.
  if (event->type() == QEvent::ToolTip && toolTip().isEmpty() && isElided()) {
    QToolTip::showText(static_cast<QHelpEvent*>(event)->globalPos(), text(), this);
    return true;
  }
  return QLabel::event(event);
}

}  // namespace ringmaster::gui
