#pragma once
// A red frame drawn around a field that has a problem. It is a transparent sibling laid over the
// field rather than a style sheet on it, because a style sheet on a spin box or combo box
// replaces Fusion's drawing of the whole widget (arrows included).

#include <QPointer>
#include <QWidget>

namespace ringmaster::gui {

class ErrorOutline : public QWidget {
  Q_OBJECT
 public:
  // Follows `target` (moves, resizes, hides with it); deleted with it.
  explicit ErrorOutline(QWidget* target);

  QWidget* target() const { return target_; }
  // Shows or hides the frame (it is also hidden while the target is).
  void setActive(bool active);
  bool isActive() const { return active_; }

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;
  void paintEvent(QPaintEvent* event) override;

 private:
  void follow();

  QPointer<QWidget> target_;
  bool active_ = false;
};

}  // namespace ringmaster::gui
