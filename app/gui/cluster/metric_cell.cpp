#include "cluster/metric_cell.h"

#include <QPainter>

#include "cluster/health_delegate.h"

namespace ringmaster::gui {
namespace {
constexpr int kSparklineHeight = 30;
constexpr int kGap = 3;
}  // namespace

MetricCell::MetricCell(QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void MetricCell::setValue(double fraction, const QColor& color, const QString& text) {
  fraction_ = fraction;
  color_ = color;
  text_ = text;
  setToolTip(text);
  update();
}

void MetricCell::setSparkline(const Sparkline& line, const QColor& color,
                              const QColor& second_color) {
  line_ = line;
  line_color_ = color;
  second_color_ = second_color;
  update();
}

QSize MetricCell::sizeHint() const {
  const int bar = fontMetrics().height() + 8;
  return {fontMetrics().horizontalAdvance(text_) + 40, bar + kGap + kSparklineHeight};
}

QSize MetricCell::minimumSizeHint() const {
  const int bar = fontMetrics().height() + 8;
  return {std::max(110, fontMetrics().horizontalAdvance(text_) + 16),
          bar + kGap + kSparklineHeight};
}

void MetricCell::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  const int bar_height = fontMetrics().height() + 8;
  const QRectF bar(0.5, 0.5, width() - 1, bar_height);
  if (fraction_ >= 0) {
    paintBar(painter, bar, fraction_, color_, text_, palette());
  } else {
    painter.setPen(palette().color(QPalette::Text));
    painter.drawText(bar.adjusted(6, 0, -6, 0), Qt::AlignVCenter | Qt::AlignLeft, text_);
  }
  const QRectF spark(0.5, bar_height + kGap, width() - 1, height() - bar_height - kGap - 1);
  painter.fillRect(spark, palette().color(QPalette::Base));
  paintSparkline(painter, spark.adjusted(2, 3, -2, -1), line_, line_color_, second_color_);
}

}  // namespace ringmaster::gui
