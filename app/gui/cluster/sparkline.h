#pragma once
// A sparkline: a small line of the last minutes of one value (and optionally a second one), drawn
// with QPainter. Cheap enough to paint in every table row once a second; Qt Charts would cost a
// scene per cell.

#include <QColor>
#include <QList>
#include <QMetaType>
#include <QPointF>
#include <QRectF>

class QPainter;

namespace ringmaster::gui {

struct Sparkline {
  QList<QPointF> points;  // (unix seconds, value), oldest first
  QList<QPointF> second;  // optional second series on the same scale (e.g. network tx)
  double end_time = 0;    // right edge; the left edge is end_time - span_s
  double span_s = 300;
  double y_min = 0;
  double y_max = 100;  // y_max <= y_min: scaled to the data (from 0)
};

// Draws `line` over `rect`: the series as a polyline with a faint fill under it, broken where
// samples are missing (an agent that did not answer shows as a gap, not a straight line).
void paintSparkline(QPainter& painter, const QRectF& rect, const Sparkline& line,
                    const QColor& color, const QColor& second_color = QColor());

}  // namespace ringmaster::gui

Q_DECLARE_METATYPE(ringmaster::gui::Sparkline)
