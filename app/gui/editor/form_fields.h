#pragma once
// Field widgets of the job form that can also show a value the validator rejects. A spec typed
// in the YAML tab may say `world_size: many`; the form shows "many" (and core's message on it)
// instead of quietly replacing it, and writes it back unchanged until the person edits it.
//
// Both ignore the mouse wheel unless focused, so that scrolling the form never changes a value.

#include <QComboBox>
#include <QSpinBox>
#include <QString>
#include <QStringList>

namespace ringmaster::gui {

// An integer spin box whose value can also be any text read from YAML.
class IntField : public QSpinBox {
  Q_OBJECT
 public:
  IntField(int minimum, int maximum, QWidget* parent = nullptr);

  // An integer in range is shown as such; anything else is shown verbatim (raw) until edited.
  void setYamlText(const QString& text);
  // What the YAML gets: the raw text when raw, else the number.
  QString yamlText() const;
  bool isRaw() const { return raw_; }

 Q_SIGNALS:
  void edited();  // by the person, not by setYamlText()

 protected:
  void wheelEvent(QWheelEvent* event) override;

 private:
  void leaveRaw();

  int minimum_;
  bool raw_ = false;
  bool filling_ = false;
};

// A fixed choice (launcher, backend, activation, ...) that can also show an unknown value.
class ChoiceField : public QComboBox {
  Q_OBJECT
 public:
  explicit ChoiceField(const QStringList& choices, QWidget* parent = nullptr);

  // A known choice is selected; an unknown one is added as an extra item until another is chosen.
  void setYamlText(const QString& text);
  QString yamlText() const { return currentText(); }

 Q_SIGNALS:
  void edited();  // by the person

 protected:
  void wheelEvent(QWheelEvent* event) override;

 private:
  void dropExtraItem();

  QStringList choices_;
};

}  // namespace ringmaster::gui
