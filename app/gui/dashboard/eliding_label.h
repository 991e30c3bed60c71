#pragma once
// A one-line label for a status line whose text can be long (a whole-log search's "match 1 of
// 13; 13 matches in the whole log (205 MB) · showing 8 MB around the match…"): it shows what fits,
// cut with "…", and the whole text as its tooltip. Its text never sets its window's minimum width
// (a search once took the window from 1280 to 1559 px, its controls off the screen) and it asks
// for at most about 48 characters' width, so the controls beside it keep their room.
//
// text() is the whole text; setText() as on any QLabel.

#include <QLabel>

namespace ringmaster::gui {

class ElidingLabel : public QLabel {
 public:
  explicit ElidingLabel(QWidget* parent = nullptr);

  QSize sizeHint() const override;         // the text's width, up to about 48 characters
  QSize minimumSizeHint() const override;  // a few characters, whatever the text
  bool isElided() const;                   // the text is wider than the label

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;  // the whole text as the tooltip when it is cut

 private:
  QString firstLine() const;
  QRect textRect() const;
};

}  // namespace ringmaster::gui
