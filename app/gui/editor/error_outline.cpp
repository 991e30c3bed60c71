#include "editor/error_outline.h"

#include <QEvent>
#include <QPainter>

namespace ringmaster::gui {
namespace {
constexpr int kMargin = 2;
}

ErrorOutline::ErrorOutline(QWidget* target) : QWidget(target->parentWidget()), target_(target) {
  setAttribute(Qt::WA_TransparentForMouseEvents);
  setAttribute(Qt::WA_NoSystemBackground);
  setFocusPolicy(Qt::NoFocus);
  target->installEventFilter(this);
  connect(target, &QObject::destroyed, this, &QObject::deleteLater);
  hide();
}

void ErrorOutline::setActive(bool active) {
  active_ = active;
  follow();
}

void ErrorOutline::follow() {
  if (!target_ || !active_ || !target_->isVisible()) {
    hide();
    return;
  }
  setGeometry(target_->geometry().adjusted(-kMargin, -kMargin, kMargin, kMargin));
  show();
  raise();
}

bool ErrorOutline::eventFilter(QObject* watched, QEvent* event) {
  if (watched == target_) {
    switch (event->type()) {
      case QEvent::Move:
      case QEvent::Resize:
      case QEvent::Show:
      case QEvent::Hide:
      case QEvent::ZOrderChange:
        follow();
        break;
      default:
        break;
    }
  }
  return QWidget::eventFilter(watched, event);
}

void ErrorOutline::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.setRenderHint(QPainter::Antialiasing);
  QPen pen(QColor(0xff, 0x5f, 0x56));  // red that reads on both dark and light bases
  pen.setWidthF(2.0);
  painter.setPen(pen);
  painter.drawRoundedRect(QRectF(rect()).adjusted(1, 1, -1, -1), 3, 3);
}

}  // namespace ringmaster::gui
