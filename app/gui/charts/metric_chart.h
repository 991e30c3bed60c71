#pragma once
// A line chart of metric series through Qt Charts, fed only what the view can show: per pixel
// column min/max (so every spike stays visible) or, zoomed in, the exact points (decimate.h).
//
// Interaction: drag to zoom on x, wheel to zoom around the cursor, pan with the right or middle
// button or shift+drag, double-click (or the "Reset zoom" button, or the context menu) to go back
// to following the data. Hovering shows x and each visible line's value there.
// GUI thread only.

#include <QColor>
#include <QString>
#include <QWidget>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "charts/chart_lines_item.h"
#include "charts/chart_view.h"
#include "charts/decimate.h"
#include "ringmaster/metrics/series.h"

class QChart;
class QLineSeries;
class QCategoryAxis;
class QValueAxis;
class QToolButton;

namespace ringmaster::gui {

class ChartRefreshQueue;

struct ChartLine {
  QString label;  // "rank 3", "job total", "gpu01 cpu %"
  QColor color;
  const metrics::Series* series = nullptr;  // owned by the caller, outlives the chart's use
  bool visible = true;
  int rank = -1;  // the rank whose metric it is (the CSV's rank column); -1: none (a total, a host)
  bool bold = false;  // drawn twice as wide: a job total among its ranks' lines
  // A band drawn behind the line, from band_low to band_high at each x (the ranks' min and max
  // around their mean); both or neither, owned like `series`.
  const metrics::Series* band_low = nullptr;
  const metrics::Series* band_high = nullptr;
};

// A moment marked across the chart: an attempt's failure.
struct ChartMarker {
  double time = 0;  // unix seconds
  // Where it stands on the step axis, the same on every chart of a job; NaN: the newest step this
  // chart's lines had reached at `time`.
  double step = std::numeric_limits<double>::quiet_NaN();
  QString label;   // short, drawn at the top of the line: "attempt 1 failed"
  QString detail;  // in the hover readout: the cause
  QColor color;
};

class MetricChart : public QWidget {
  Q_OBJECT
 public:
  // More lines than this hide the legend (the dashboard offers rank toggles instead), and the
  // hover readout lists only the highest and lowest values.
  static constexpr int kMaxLegendLines = 8;
  static constexpr int kMaxReadoutRows = 16;

  explicit MetricChart(const QString& title, QWidget* parent = nullptr);
  ~MetricChart() override;

  QString title() const;
  void setLines(std::vector<ChartLine> lines);  // replaces the lines; keeps the zoom
  void setLineVisible(int index, bool visible);
  // Step or wall time (the time axis shows hh:mm:ss, local time); resets zoom.
  void setXAxis(metrics::Axis axis);
  // With an origin (unix seconds: the job's start), the time axis and the readout count elapsed
  // time from it ("0:05:00") instead of the wall clock; nullopt for the wall clock again.
  void setTimeOrigin(std::optional<double> origin);
  std::optional<double> timeOrigin() const { return time_origin_; }
  void setSmoothing(double weight);  // EMA weight 0 (off) .. 0.99; raw stays drawn faint behind
  // As setSmoothing(), with the redraw on its turn (refreshSoon()): for a slider dragged over a
  // dashboard of many charts, which used to redraw every chart at once on each step of the drag.
  void setSmoothingSoon(double weight);
  // The y axis's title starts with this (the unit: "seconds", "%"), then says what the chart
  // does to the data (log scale, a fixed range, clipped outliers). The smoothing weight stands
  // beside the chart's title ("loss  EMA 0.60"): chartTitle().
  void setYLabel(const QString& label);
  // The y axis: linear, or log10 (ticks on whole decades; values <= 0 are not drawn, and the axis
  // title says how many); with zero always in view (linear only); or a range the user set (values
  // outside are clipped at the plot's edge), nullopt to follow the data again.
  enum class YScale { kLinear, kLog };
  void setYScale(YScale scale);
  YScale yScale() const { return y_scale_; }
  void setIncludeZero(bool include);
  bool includesZero() const { return include_zero_; }
  // Outliers clipped (linear axis, range from the data): the extreme 1% of the values in view
  // are left outside the range, never a whole line (charts/outlier_clip.h); the axis title says
  // how many.
  void setClipOutliers(bool clip);
  bool clipsOutliers() const { return clip_outliers_; }
  void setYRange(std::optional<std::pair<double, double>> range);
  std::pair<double, double> yRange() const;  // the y axis's range now (log10 values on a log axis)
  // The range set by hand (setYRange), in the data's values; nullopt while it follows the data.
  const std::optional<std::pair<double, double>>& manualYRange() const { return manual_y_; }
  QString yTitle() const;
  QString chartTitle() const;                         // as drawn (rich text)
  void setMarkers(std::vector<ChartMarker> markers);  // replaces them; drawn on the next refresh
  // Said at the plot's top right while the data may be stale ("no data since 14:02:11").
  void setStaleNote(const QString& text);
  QString staleNote() const;
  void refresh();  // after appends: re-decimate and redraw; O(width log n)
  // refresh() on a later turn of the event loop; the charts waiting are drawn one per turn.
  void refreshSoon();
  // For new data (a live job): refresh() once the charts' redraws of new data leave the GUI
  // thread time enough for everything else (ChartRefreshQueue's pacing); what a person did
  // (refreshSoon) goes first.
  void refreshLater();
  void resetZoom();
  bool saveImage(const QString& path) const;  // PNG of the chart
  // Visible lines, points in the visible x range: label,rank,step,time,value,smoothed (rank empty
  // for a line of no rank, smoothed with smoothing off).
  bool exportCsv(const QString& path) const;
  std::pair<double, double> xRange() const;  // the visible x range
  int drawnPointCount() const;               // points the last refresh drew (tests, bench)
  int drawnBandPointCount() const { return drawn_band_points_; }  // the bands' share of them

  // Additions beyond the contract.
  const std::vector<ChartLine>& lines() const { return lines_; }
  const std::vector<ChartMarker>& markers() const { return markers_; }
  // Where `marker` stands on the current x axis; nullopt while no line has data.
  std::optional<double> markerX(const ChartMarker& marker) const;
  metrics::Axis xAxis() const { return axis_; }
  double smoothing() const { return smoothing_; }
  bool isZoomed() const { return zoomed_; }
  // What the last refresh drew for line `index` (empty view for hidden lines).
  const LineView& lineView(int index) const { return views_[index]; }
  // What is drawn of a line: its points (axis values), pens and band, as painted.
  const ChartLinesItem::Line& drawnLine(int index) const { return lines_item_->lines()[index]; }
  // The plot area's width in pixels, the number of columns decimation uses.
  int plotColumns() const;
  std::optional<double> echoPixel() const;  // where showEcho() drew its line, for tests
  // The unix time at x on this chart's axis (on a step axis, the first line's time of that step).
  std::optional<double> timeAtX(double x) const;
  // What the hover shows at scene x `px` (see the implementation), and where x lies on screen.
  ChartView::Readout readoutAt(double px) const;
  double xToPixel(double x) const;

 signals:
  void xRangeChanged(double x0, double x1);  // the user zoomed or panned (to link other charts)
  void zoomReset();                          // the user went back to following the data
  void lineVisibilityToggled(int index, bool visible);  // the user clicked a legend entry
  void yAxisChosen();  // the user changed the y axis from the menu (scale, zero, clip, range)
  // The cursor is over `step` (NaN on a time axis) at `time` (unix seconds) of this chart; both
  // NaN: it left the plot. For linked charts' showEcho(), so every chart shows the same moment
  // (steps and health alike).
  void hoverMoved(double step, double time);

 public slots:
  void setXRange(double x0, double x1);  // zoom to a range (linked charts); does not re-emit
  // A dashed line at `step` on a step axis (when finite; else at the newest step a line had
  // reached at `time`), at `time` on a time axis; both NaN remove it.
  void showEcho(double step, double time);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  friend class ChartRefreshQueue;

  void updateXAxisTitle();
  void restyleLines();
  void updateLegend();
  void applyYRange(double lo, double hi, bool has_values);
  void applyLogYRange(double lo, double hi, bool has_values, int rows);
  void updateYTitle();
  void askYRange();
  void applyXAxisRange(int columns);
  double pixelToX(double px) const;
  void placeMarkers();  // the markers' pixel places for the current range
  void userZoom(double x0, double x1);
  void userReset();
  void showContextMenu(QPoint global_pos);
  std::pair<double, double> dataRange() const;
  QString formatX(double x) const;
  void appendSmoothed(size_t i, double x, QString* text) const;

  QString title_;
  QString y_label_;
  std::vector<ChartLine> lines_;
  // A Qt Charts series per line with no points, for its legend entry only: lines_item_ draws.
  std::vector<QLineSeries*> legend_entries_;
  std::vector<LineView> views_;
  std::vector<ChartMarker> markers_;
  metrics::Axis axis_ = metrics::Axis::kStep;
  double smoothing_ = 0;
  std::optional<double> time_origin_;
  bool adoptSmoothing(double weight);  // false when unchanged
  bool styled_smooth_ = false;         // the pens are those of smoothing on
  bool zoomed_ = false;
  enum class Queued { kNo, kSoon, kLater };
  Queued queued_ = Queued::kNo;
  void queue(Queued when);
  YScale y_scale_ = YScale::kLinear;
  bool include_zero_ = false;
  std::optional<std::pair<double, double>> manual_y_;
  bool clip_outliers_ = false;
  int not_drawn_ = 0;   // points the log axis could not draw (<= 0) in the last refresh
  size_t clipped_ = 0;  // points outside the clipped range in the last refresh
  double x0_ = 0, x1_ = 1;
  int drawn_points_ = 0;
  int drawn_band_points_ = 0;

  QChart* chart_ = nullptr;
  ChartLinesItem* lines_item_ = nullptr;  // a child of chart_
  ChartView* view_ = nullptr;
  // Ticks and labels of our own on round values: steps with separators, round local times.
  QCategoryAxis* x_axis_ = nullptr;
  // The x axis's current labels and their places: rebuilding them relayouts the axis each time,
  // which costs more than the whole decimation, so it happens only when a tick changes.
  std::vector<std::pair<QString, double>> x_ticks_;
  // The y range; its ticks and labels on a linear scale. On a log one it is hidden (its range,
  // log10 of the values, still places the lines) and y_log_axis_ labels round values (logTicks).
  QValueAxis* y_axis_ = nullptr;
  QCategoryAxis* y_log_axis_ = nullptr;
  std::vector<std::pair<QString, double>> y_log_ticks_;  // as x_ticks_
  QToolButton* reset_button_ = nullptr;
};

}  // namespace ringmaster::gui
