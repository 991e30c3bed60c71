#pragma once
// Banner: the news of the window (a job finished or failed, an agent's key changed), named, with
// Open and Dismiss. It floats over the bottom-right corner of the widget it is given, above the
// content, instead of taking a row of the layout: a banner in the layout pushed everything down
// 30 px under the pointer each time one came, and clicks landed on the wrong control.
//
// Thread safety: a QWidget; GUI thread only.

#include <QFrame>
#include <QString>
#include <functional>

class QLabel;

namespace ringmaster::gui {

class Banner : public QFrame {
  Q_OBJECT
 public:
  static constexpr int kMaxWidthPx = 560;
  static constexpr int kMarginPx = 12;  // from the corner of the widget it floats over

  // Floats over `over` (its parent), following its size.
  explicit Banner(QWidget* over);

  // Shows `title` and `text`; Open runs `open` (and hides the banner).
  void announce(const QString& title, const QString& text, bool failure,
                std::function<void()> open);
  QString text() const;  // empty while hidden
  void openNews();       // what Open does; also the tray message's click

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void place();

  QLabel* text_;
  std::function<void()> open_;
};

}  // namespace ringmaster::gui
