#pragma once
// One health figure in the detail panel: a bar with the current value written on it, and under
// it a sparkline of the last minutes.

#include <QColor>
#include <QWidget>

#include "cluster/sparkline.h"

namespace ringmaster::gui {

class MetricCell : public QWidget {
  Q_OBJECT

 public:
  explicit MetricCell(QWidget* parent = nullptr);

  // fraction < 0: no bar, the text alone (e.g. network rates, which have no ceiling).
  void setValue(double fraction, const QColor& color, const QString& text);
  void setSparkline(const Sparkline& line, const QColor& color,
                    const QColor& second_color = QColor());
  const QString& text() const { return text_; }

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  double fraction_ = -1;
  QColor color_;
  QString text_;
  Sparkline line_;
  QColor line_color_;
  QColor second_color_;
};

}  // namespace ringmaster::gui
