#include "dashboard/eliding_button.h"

#include <QFontMetrics>
#include <algorithm>

namespace ringmaster::gui {
namespace {
// The stylesheets' horizontal padding and border, with room to spare: the text's margin.
constexpr int kMarginPx = 28;
}  // namespace

ElidingButton::ElidingButton(QWidget* parent) : QPushButton(parent) {
  setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
}

void ElidingButton::setFullText(const QString& text) {
  full_text_ = text;
  updateGeometry();
  elide();
}

QSize ElidingButton::sizeHint() const {
  return {fontMetrics().horizontalAdvance(full_text_) + kMarginPx,
          QPushButton::sizeHint().height()};
}

QSize ElidingButton::minimumSizeHint() const {
  return {fontMetrics().horizontalAdvance(QStringLiteral("MMMMMMMM…")) + kMarginPx,
          QPushButton::minimumSizeHint().height()};
}

void ElidingButton::resizeEvent(QResizeEvent* event) {
  QPushButton::resizeEvent(event);
  elide();
}

void ElidingButton::elide() {
  // The first line only: a multi-line cause would make the button tall.
  const QString line = full_text_.section('\n', 0, 0);
  QPushButton::setText(
      fontMetrics().elidedText(line, Qt::ElideRight, std::max(0, width() - kMarginPx)));
}

}  // namespace ringmaster::gui
