#pragma once
// The lines of a MetricChart, drawn by one item of its chart's scene rather than by a Qt Charts
// series each. Qt Charts strokes a line's whole path into a hover shape whenever its points or
// an axis change: most of a chart redraw's cost, and memory that grew with every line until it
// filled the plot (13 MB of an 8-rank dashboard's). MetricChart answers hover from its own
// series, so its lines need only be painted: bands first, then every raw line, then every
// smoothed one; a line of one point is a dot.
//
// Many lines are drawn off the GUI thread: antialiased, 8 ranks' lines of 1,600 points took
// 7-12 ms a chart, nine tenths of a chart's redraw, and a dashboard redraws ten charts. From
// kBackgroundFromPoints on, changed() hands a copy of the lines to the drawing thread
// (chart_drawing_thread.h), which draws them into an image of the plot; until it is back, the
// last image is shown, stretched to where its ranges lie now. Fewer points are drawn in the
// paint itself.

#include <QBrush>
#include <QGraphicsItem>
#include <QImage>
#include <QPen>
#include <QPolygonF>
#include <cstdint>
#include <functional>
#include <memory>
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
  static constexpr qsizetype kBackgroundFromPoints = 4000;

  // A child of `chart`, drawn in its plot area over the grid. `drawn` is called (GUI thread)
  // when an image drawn in the background has replaced the one shown.
  ChartLinesItem(QChart* chart, std::function<void()> drawn);
  ~ChartLinesItem() override;

  std::vector<Line>& lines() { return lines_; }
  const std::vector<Line>& lines() const { return lines_; }
  // The axis values at the plot area's left and right, bottom and top.
  void setRanges(double x0, double x1, double y0, double y1);
  // Repaints after a change of lines, ranges or the chart's plot area.
  void changed();
  // Draws what a background drawing is still on here and now (a saved image must be whole).
  void drawNow();
  // How long the last background drawing took, ms (0: none yet): the chart queue paces new
  // data's redraws by it too, or they would come as often as the GUI thread alone allows.
  double lastDrawingMs() const { return last_drawing_ms_; }
  // Whether the newest lines are still being drawn in the background.
  bool drawingPending() const { return in_background_ && shown_generation_ != generation_; }
  // Background drawings of every chart not yet shown (tests wait for 0 before a screenshot).
  static int drawingsInFlight();

  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  // Axis values to plot pixels and back.
  struct Mapping {
    double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
    QRectF plot;
    bool valid() const { return !plot.isEmpty() && x1 > x0 && y1 > y0; }
    QPointF toPixel(QPointF value) const {
      return {plot.left() + (value.x() - x0) * plot.width() / (x1 - x0),
              plot.bottom() - (value.y() - y0) * plot.height() / (y1 - y0)};
    }
    QPointF toValue(QPointF pixel) const {
      return {x0 + (pixel.x() - plot.left()) * (x1 - x0) / plot.width(),
              y0 + (plot.bottom() - pixel.y()) * (y1 - y0) / plot.height()};
    }
  };
  // What one drawing needs, copied (Qt's containers share their data until one side changes).
  struct Frame {
    std::vector<Line> lines;
    Mapping mapping;
    qreal pixel_ratio = 1;
  };
  struct Drawn {  // the image of a frame
    QImage image;
    QRect at;  // where it lies in the frame's plot coordinates, whole pixels
    Mapping mapping;
    double ms = 0;  // drawing it took
  };
  // The item as its drawings know it: each job holds it weakly (gone with the item) and reads
  // on the drawing thread whether its frame is still the newest.
  struct Inbox;
  static void drawLines(QPainter& painter, const std::vector<Line>& lines, const Mapping& m);
  static std::shared_ptr<const Drawn> draw(const Frame& frame);
  Mapping mapping() const { return {x0_, x1_, y0_, y1_, plot_}; }
  qsizetype points() const;
  void adopt(uint64_t generation, std::shared_ptr<const Drawn> drawn);

  QChart* chart_;
  std::function<void()> drawn_callback_;
  std::vector<Line> lines_;
  double x0_ = 0, x1_ = 1, y0_ = 0, y1_ = 1;
  QRectF plot_;
  qreal pixel_ratio_ = 1;  // of the last paint's device
  bool in_background_ = false;
  uint64_t generation_ = 0;        // of the newest frame handed to the drawing thread
  uint64_t shown_generation_ = 0;  // of `shown_`
  double last_drawing_ms_ = 0;
  std::shared_ptr<const Drawn> shown_;
  std::shared_ptr<Inbox> inbox_;
};

}  // namespace ringmaster::gui
