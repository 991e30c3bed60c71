#include "cluster/sparkline.h"

#include <QPainter>
#include <QPainterPath>
#include <algorithm>

namespace ringmaster::gui {
namespace {

// Samples come about once a second; a hole longer than this is an agent that did not answer.
constexpr double kGapSeconds = 6;

double scaleMax(const Sparkline& line) {
  if (line.y_max > line.y_min) return line.y_max;
  double top = 0;
  for (const auto& p : line.points) top = std::max(top, p.y());
  for (const auto& p : line.second) top = std::max(top, p.y());
  return top > 0 ? top * 1.1 : 1;
}

void paintSeries(QPainter& painter, const QRectF& rect, const QList<QPointF>& points, double t0,
                 double span, double y_min, double y_max, const QColor& color, bool fill) {
  if (points.isEmpty()) return;
  auto map = [&](const QPointF& p) {
    const double x = rect.left() + (p.x() - t0) / span * rect.width();
    const double v = std::clamp((p.y() - y_min) / (y_max - y_min), 0.0, 1.0);
    return QPointF(std::clamp(x, rect.left(), rect.right()), rect.bottom() - v * rect.height());
  };
  QColor fill_color = color;
  fill_color.setAlpha(55);
  QPen pen(color, 1.5);
  pen.setJoinStyle(Qt::RoundJoin);
  int start = 0;
  while (start < points.size()) {
    int end = start + 1;
    while (end < points.size() && points[end].x() - points[end - 1].x() <= kGapSeconds) ++end;
    QPolygonF polyline;
    for (int i = start; i < end; ++i) polyline << map(points[i]);
    if (polyline.size() == 1) {
      painter.setPen(Qt::NoPen);
      painter.setBrush(color);
      painter.drawEllipse(polyline.front(), 1.5, 1.5);
    } else {
      if (fill) {
        QPolygonF area = polyline;
        area << QPointF(polyline.back().x(), rect.bottom())
             << QPointF(polyline.front().x(), rect.bottom());
        painter.setPen(Qt::NoPen);
        painter.setBrush(fill_color);
        painter.drawPolygon(area);
      }
      painter.setPen(pen);
      painter.setBrush(Qt::NoBrush);
      painter.drawPolyline(polyline);
    }
    start = end;
  }
}

}  // namespace

void paintSparkline(QPainter& painter, const QRectF& rect, const Sparkline& line,
                    const QColor& color, const QColor& second_color) {
  if (rect.width() < 4 || rect.height() < 4 || line.span_s <= 0) return;
  painter.save();
  painter.setRenderHint(QPainter::Antialiasing, true);
  painter.setClipRect(rect);
  const double t0 = line.end_time - line.span_s;
  const double y_min = line.y_max > line.y_min ? line.y_min : 0;
  const double y_max = scaleMax(line);
  QColor baseline = color;
  baseline.setAlpha(70);
  painter.setPen(QPen(baseline, 1));
  painter.drawLine(QPointF(rect.left(), rect.bottom() - 0.5),
                   QPointF(rect.right(), rect.bottom() - 0.5));
  paintSeries(painter, rect, line.points, t0, line.span_s, y_min, y_max, color, true);
  if (!line.second.isEmpty()) {
    paintSeries(painter, rect, line.second, t0, line.span_s, y_min, y_max,
                second_color.isValid() ? second_color : color.lighter(150), false);
  }
  painter.restore();
}

}  // namespace ringmaster::gui
