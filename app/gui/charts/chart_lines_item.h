#pragma once
// The lines of a MetricChart, drawn by one item of its chart's scene rather than by a Qt Charts
// series each. Qt Charts strokes a line's whole path into a hover shape whenever its points or
// an axis change: most of a chart redraw's cost, and memory that grew with every line until it
// filled the plot (13 MB of an 8-rank dashboard's). MetricChart answers hover from its own
// series, so its lines need only be painted: bands first, then every raw line, then every
// smoothed one; a line of one point is a dot.

#include <QBrush>
#include <QGraphicsItem>
#include <QPen>
#include <QPolygonF>
#include <vector>

class QChart;

namespace ringmaster::gui {

class ChartLinesItem : public QGraphicsItem {
 public:
  struct Line {
    QPolygonF raw, smoothed;  // in axis values (on a log axis, y is already log10)
    QPolygonF upper, lower;   // a band's edges, the same; empty: no band
    QPen raw_pen, smoothed_pen;
    QBrush band_brush;
  };

  // A child of `chart`, drawn in its plot area over the grid.
  explicit ChartLinesItem(QChart* chart);

  std::vector<Line>& lines() { return lines_; }
  const std::vector<Line>& lines() const { return lines_; }
  // The axis values at the plot area's left and right, bottom and top.
  void setRanges(double x0, double x1, double y0, double y1);
  // Repaints after a change of lines, ranges or the chart's plot area.
  void changed();

  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  QPolygonF toPixels(const QPolygonF& values) const;

  QChart* chart_;
  std::vector<Line> lines_;
  double x0_ = 0, x1_ = 1, y0_ = 0, y1_ = 1;
  QRectF plot_;
};

}  // namespace ringmaster::gui
