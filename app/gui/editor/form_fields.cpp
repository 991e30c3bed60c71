#include "editor/form_fields.h"

#include <QWheelEvent>

namespace ringmaster::gui {

IntField::IntField(int minimum, int maximum, QWidget* parent)
    : QSpinBox(parent), minimum_(minimum) {
  setRange(minimum, maximum);
  setFocusPolicy(Qt::StrongFocus);
  setAccelerated(true);
  setKeyboardTracking(true);
  connect(this, &QSpinBox::valueChanged, this, [this](int value) {
    if (filling_) return;
    if (raw_ && value != minimum_ - 1) leaveRaw();
    Q_EMIT edited();
  });
}

void IntField::setYamlText(const QString& text) {
  filling_ = true;
  bool ok = false;
  const qlonglong number = text.trimmed().toLongLong(&ok);
  if (ok && number >= minimum_ && number <= maximum() && !text.trimmed().startsWith('+')) {
    if (raw_) leaveRaw();
    setValue(static_cast<int>(number));
  } else {
    // Qt shows specialValueText at the minimum: one step below the real minimum stands for the
    // raw text, so any step the person takes leaves it.
    raw_ = true;
    setMinimum(minimum_ - 1);
    setSpecialValueText(text.isEmpty() ? QStringLiteral("(empty)") : text);
    setValue(minimum_ - 1);
  }
  filling_ = false;
}

QString IntField::yamlText() const {
  return raw_ ? specialValueText() == QLatin1String("(empty)") ? QString() : specialValueText()
              : QString::number(value());
}

void IntField::leaveRaw() {
  raw_ = false;
  const bool was_filling = filling_;
  filling_ = true;
  setSpecialValueText(QString());
  setMinimum(minimum_);
  filling_ = was_filling;
}

void IntField::wheelEvent(QWheelEvent* event) {
  if (hasFocus()) {
    QSpinBox::wheelEvent(event);
  } else {
    event->ignore();
  }
}

ChoiceField::ChoiceField(const QStringList& choices, QWidget* parent)
    : QComboBox(parent), choices_(choices) {
  addItems(choices);
  setFocusPolicy(Qt::StrongFocus);
  setSizeAdjustPolicy(QComboBox::AdjustToContents);
  connect(this, &QComboBox::activated, this, [this](int index) {
    if (index < choices_.size()) dropExtraItem();
    Q_EMIT edited();
  });
}

void ChoiceField::setYamlText(const QString& text) {
  const QSignalBlocker blocker(this);
  const int index = choices_.indexOf(text);
  if (index >= 0) {
    dropExtraItem();
    setCurrentIndex(index);
    return;
  }
  if (count() > choices_.size()) {
    setItemText(choices_.size(), text);
  } else {
    addItem(text);
  }
  setCurrentIndex(choices_.size());
}

void ChoiceField::dropExtraItem() {
  while (count() > choices_.size()) removeItem(count() - 1);
}

void ChoiceField::wheelEvent(QWheelEvent* event) {
  if (hasFocus()) {
    QComboBox::wheelEvent(event);
  } else {
    event->ignore();
  }
}

}  // namespace ringmaster::gui
