#pragma once
// A label with a few versions of its text, longest first, that shows the longest one fitting the
// width the layout gives it, or nothing: a hint beside the controls gives way whole instead of
// being cut mid-word (at 1024 px the dashboard's "Drag: zoom · right-drag: pan · double-click:
// reset" was cut to "rag: zoom ..." against the Reset zoom button). It never widens its window.

#include <QLabel>
#include <QStringList>

namespace ringmaster::gui {

class FittingLabel : public QLabel {
 public:
  explicit FittingLabel(QStringList texts, QWidget* parent = nullptr);

  QSize sizeHint() const override;         // the longest text
  QSize minimumSizeHint() const override;  // nothing

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void fit();
  QStringList texts_;
};

}  // namespace ringmaster::gui
