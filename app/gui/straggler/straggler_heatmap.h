#pragma once
// The straggler heatmap of a job: one row per rank, one column per few pixels of the visible x
// range, each cell coloured by that rank's mean step time there against the median of all ranks
// (straggler_scale.h). Above it, one sentence names the slowest rank: of the last minute (or last
// 100 steps) by default, since a rank that slowed down an hour into a run hides in the run's
// mean; of the charts' range when they are zoomed. Rows keep a readable height (every row
// labelled "rank N (host)" up to 64 ranks): the widget asks for the height and the dashboard
// scrolls. Hover a cell for its numbers; click a row to pick that rank (rankClicked).
//
// The widget reads the series it is given and does not own them: they must outlive it or be
// replaced with setRanks. GUI thread only.

#include <QString>
#include <QWidget>
#include <vector>

#include "ringmaster/metrics/series.h"
#include "straggler/straggler_grid.h"

namespace ringmaster::gui {

class StragglerHeatmap : public QWidget {
  Q_OBJECT

 public:
  explicit StragglerHeatmap(QWidget* parent = nullptr);

  // One series of step time (seconds) per rank, in rank order; labels e.g. "r3 gpu02" (missing
  // labels read "r<rank>"). A null series is a rank with no data yet.
  void setRanks(std::vector<const metrics::Series*> step_time_by_rank, std::vector<QString> labels);
  void setXAxis(metrics::Axis axis);
  // Follows the charts' visible range; until it is called (or after resetXRange), all data.
  void setXRange(double x0, double x1);
  void resetXRange();
  // Recomputes (after appends) and repaints; cost O(ranks * width * log n).
  void refresh();

  const StragglerGrid& grid() const { return grid_; }
  // "slowest: rank 3 (gpu02) 1.8x median step time (last 30 s)", the ratio being the rank's
  // verdict ratio (stragglerVerdict) over the last 30 s whatever the axis, "(whole run)" when the
  // data is shorter, "(in view)" when the charts are zoomed. Under 1.1x: "no straggler: slowest
  // is rank 3 (gpu02) at 1.04x median step time (last 30 s)".
  QString slowestText() const;
  // The verdict's numbers: of the window slowestText() names.
  int slowestRank() const { return verdict_.rank; }
  // A rank at kStragglerThreshold or more of the median step time in the verdict's window.
  bool hasStraggler() const;
  double slowestRatio() const { return verdict_.ratio; }
  // What the tooltip of a cell says: "rank 3 (gpu02), 14:05:31-14:05:36: 1.8x median (42 ms vs
  // 23 ms)". Empty for a cell outside the grid.
  QString cellText(int rank, int column) const;
  // The rank row and grid column under a point of the widget; -1 outside the grid.
  int rankAt(const QPoint& pos) const;
  int columnAt(const QPoint& pos) const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 signals:
  void rankClicked(int rank);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;

 private:
  struct Layout {
    QRect header, legend, labels, grid, axis;
    int row_height = 0;
    int label_every = 1;  // label every n-th rank when not every label fits
  };
  Layout layout() const;
  int minRowHeight() const;
  int columnsFor(int grid_width) const;
  QString rankName(int rank) const;  // "rank 3 (gpu02)"
  QString xRangeText(double a, double b) const;
  void paintLegend(QPainter& p, const QRect& r) const;
  void paintAxis(QPainter& p, const Layout& l) const;

  std::vector<const metrics::Series*> series_;
  std::vector<QString> labels_;
  metrics::Axis axis_ = metrics::Axis::kTime;
  bool has_range_ = false;
  double range_x0_ = 0, range_x1_ = 0;
  StragglerGrid grid_;
  StragglerVerdict verdict_;  // of the verdict's window (verdict_scope_)
  QString verdict_scope_;     // "last 30 s", "whole run", "in view"
};

}  // namespace ringmaster::gui
