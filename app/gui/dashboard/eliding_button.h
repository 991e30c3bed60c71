#pragma once
// A push button whose text is cut with "…" to the width the layout gives it, so that a long
// message (a failure's cause can be a paragraph) never widens the window: a 1,900-character cause
// once pinned the dashboard's minimum width at 1,342 px.

#include <QPushButton>
#include <QString>

namespace ringmaster::gui {

class ElidingButton : public QPushButton {
 public:
  explicit ElidingButton(QWidget* parent = nullptr);

  void setFullText(const QString& text);
  const QString& fullText() const { return full_text_; }

  QSize sizeHint() const override;         // the whole text
  QSize minimumSizeHint() const override;  // a few characters

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void elide();
  QString full_text_;
};

}  // namespace ringmaster::gui
