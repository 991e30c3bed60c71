#include "charts/chart_lines_item.h"

#include <QChart>
#include <QPainter>
#include <algorithm>

namespace ringmaster::gui {
namespace {

// Qt Charts draws its series at this z (ChartPresenter::SeriesZValue): over grid and axes.
constexpr qreal kSeriesZ = 5;

}  // namespace

ChartLinesItem::ChartLinesItem(QChart* chart) : QGraphicsItem(chart), chart_(chart) {
  setZValue(kSeriesZ);
  setAcceptedMouseButtons(Qt::NoButton);  // the view's zoom, pan and hover see every event
}

void ChartLinesItem::setRanges(double x0, double x1, double y0, double y1) {
  x0_ = x0;
  x1_ = x1;
  y0_ = y0;
  y1_ = y1;
}

void ChartLinesItem::changed() {
  const QRectF plot = chart_->plotArea();
  if (plot != plot_) {
    prepareGeometryChange();
    plot_ = plot;
  }
  update();
}

QRectF ChartLinesItem::boundingRect() const { return plot_; }

QPolygonF ChartLinesItem::toPixels(const QPolygonF& values) const {
  const double sx = plot_.width() / (x1_ - x0_), sy = plot_.height() / (y1_ - y0_);
  QPolygonF pixels(values.size());
  for (qsizetype i = 0; i < values.size(); ++i) {
    pixels[i] = QPointF(plot_.left() + (values[i].x() - x0_) * sx,
                        plot_.bottom() - (values[i].y() - y0_) * sy);
  }
  return pixels;
}

void ChartLinesItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* /*option*/,
                           QWidget* /*widget*/) {
  if (plot_.isEmpty() || !(x1_ > x0_) || !(y1_ > y0_)) return;
  painter->save();
  painter->setClipRect(plot_);
  painter->setPen(Qt::NoPen);
  for (const Line& line : lines_) {
    if (line.upper.isEmpty() || line.lower.isEmpty()) continue;
    QPolygonF area = toPixels(line.upper);
    const QPolygonF lower = toPixels(line.lower);
    std::copy(lower.rbegin(), lower.rend(), std::back_inserter(area));
    painter->setBrush(line.band_brush);
    painter->drawPolygon(area);
  }
  const auto draw = [&](const QPolygonF& values, const QPen& pen) {
    if (values.isEmpty()) return;
    const QPolygonF pixels = toPixels(values);
    if (pixels.size() == 1) {  // a short run's single evaluation: nothing to join
      const double radius = std::max(2.5, pen.widthF() * 2);
      painter->setPen(Qt::NoPen);
      painter->setBrush(pen.color());
      painter->drawEllipse(pixels.front(), radius, radius);
      return;
    }
    painter->setPen(pen);
    painter->setBrush(Qt::NoBrush);
    // A hairline (the faint raw lines under smoothed ones) goes to the cosmetic stroker whole. A
    // wider line a segment at a time, as Qt Charts draws it: as one polyline it is stroked whole,
    // joins and all, into a polygon that crosses itself at every column's min and max (the GUI
    // thread at 97% of a core for an 8-rank dashboard); each short segment fills fast.
    if (pen.widthF() <= 1) {
      painter->drawPolyline(pixels);
    } else {
      for (qsizetype i = 1; i < pixels.size(); ++i) painter->drawLine(pixels[i - 1], pixels[i]);
    }
  };
  for (const Line& line : lines_) draw(line.raw, line.raw_pen);
  for (const Line& line : lines_) draw(line.smoothed, line.smoothed_pen);
  painter->restore();
}

}  // namespace ringmaster::gui
