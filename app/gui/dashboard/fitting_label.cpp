#include "dashboard/fitting_label.h"

#include <QFontMetrics>

namespace ringmaster::gui {

FittingLabel::FittingLabel(QStringList texts, QWidget* parent)
    : QLabel(parent), texts_(std::move(texts)) {
  setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Preferred);
  setToolTip(texts_.value(0));
  fit();
}

QSize FittingLabel::sizeHint() const {
  return {fontMetrics().horizontalAdvance(texts_.value(0)) + 2 * margin(),
          QLabel::sizeHint().height()};
}

QSize FittingLabel::minimumSizeHint() const { return {0, QLabel::minimumSizeHint().height()}; }

void FittingLabel::resizeEvent(QResizeEvent* event) {
  QLabel::resizeEvent(event);
  fit();
}

void FittingLabel::fit() {
  const int room = width() - 2 * margin();
  for (const QString& text : texts_) {
    if (fontMetrics().horizontalAdvance(text) <= room) {
      if (QLabel::text() != text) setText(text);
      return;
    }
  }
  if (!QLabel::text().isEmpty()) setText(QString());
}

}  // namespace ringmaster::gui
