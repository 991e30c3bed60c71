#pragma once
// The QChartView under MetricChart: turns mouse and wheel input into zoom/pan requests in plot
// pixels and paints the overlays (rubber band, hover line and readout, "no data" placeholder).
// It knows nothing of series: MetricChart maps pixels to x and answers the readout.

#include <QChartView>
#include <QColor>
#include <QPixmap>
#include <QPointF>
#include <QString>
#include <functional>
#include <optional>
#include <vector>

namespace ringmaster::gui {

class ChartView : public QChartView {
 public:
  struct ReadoutRow {
    QColor color;  // invalid: a row without a swatch ("… 20 more")
    QString text;
  };
  struct Marker {
    double px = 0;  // scene x of the line
    QString label;
    QColor color;
  };
  // A NaN or infinite value of a line: a tag at the plot's top (NaN, +Inf) or bottom (-Inf).
  struct ValueFlag {
    double px = 0;  // scene x
    bool bottom = false;
    QString text;  // "NaN", "+Inf", "−Inf"
    QColor color;  // the line's
  };
  struct Readout {
    QString header;
    std::vector<ReadoutRow> rows;
    std::optional<double> snap_px;  // the crosshair stands here (a real point), not at the cursor
  };
  // The readout box lays its rows out in as many columns of this width as the plot's height
  // needs and its width holds (8 ranks and the job total in a short chart: two columns).
  static constexpr int kReadoutColumnWidth = 190;
  // Rows of `line_height` a readout column holds in a plot of `plot_height` (under its header).
  static int readoutRowsPerColumn(double plot_height, int line_height);
  // Every callback may be empty. Pixel positions are scene x, which is also viewport x.
  struct Callbacks {
    std::function<void(double px0, double px1)> zoomToPixels;  // rubber band released
    std::function<void(double px, double factor)> zoomAround;  // wheel; factor < 1 zooms in
    std::function<void(double dx)> panByPixels;                // content follows the mouse
    std::function<void()> resetZoom;                           // double-click
    std::function<void(QPoint global_pos)> contextMenu;        // right click without a drag
    std::function<Readout(double px)> readoutAt;
    std::function<void()> resized;
    // The lines are being drawn in the background (ChartLinesItem): the scene's picture waits
    // for them rather than being drawn twice, once with the old lines.
    std::function<bool()> linesPending;
    // The cursor moved over the plot (scene x), or left it (nullopt).
    std::function<void(std::optional<double> px)> hovered;
  };

  explicit ChartView(QChart* chart, QWidget* parent = nullptr);
  void setCallbacks(Callbacks callbacks);
  // Drawn in the middle of the plot when not empty ("Waiting for data…").
  void setPlaceholder(const QString& text);
  // A line at the plot's top right, e.g. "no data since 14:02:11"; empty: none.
  void setNote(const QString& text);
  const QString& note() const { return note_; }
  // Vertical lines across the plot with their labels at the top (failures).
  void setMarkers(std::vector<Marker> markers);
  void setValueFlags(std::vector<ValueFlag> flags);
  // The scene changed (points, axes, styles): paint it again rather than from its image. The
  // owner says so after each change it makes; Qt's own change signal, queued, is a safety net.
  void sceneChanged();
  // Draws a changed scene into its image now rather than in the window's next paint, which then
  // only copies it: the chart queue calls it right after a chart's redraw, so that each chart's
  // drawing is an event of its own. Painted together, the charts redrawn since the last frame
  // (an 8-rank dashboard while the smoothing slider moves) held the GUI thread 35-48 ms at once.
  void renderSceneNow();
  // Another chart's crosshair, where its moment is on this one (scene x); nullopt: none.
  void setEcho(std::optional<double> px);
  std::optional<double> echo() const { return echo_; }
  const std::vector<ValueFlag>& valueFlags() const { return flags_; }

 protected:
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void leaveEvent(QEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void drawForeground(QPainter* painter, const QRectF& rect) override;
  // The scene (axes, series, legend) from a pixmap drawn when it last changed, the overlay
  // (crosshair, readout, markers, notes) fresh on top: a mouse move over a 64-rank chart, or
  // another chart's crosshair echoed here, repaints in about a millisecond instead of stroking
  // every line again (38 ms at 64 lines of 1,600 points).
  void paintEvent(QPaintEvent* event) override;

 private:
  enum class Drag { kNone, kZoom, kPan, kRightPending };
  QRectF plot() const;
  void renderSceneImage();                          // when the scene changed or the view's size did
  QFont scaledFont(double scale, bool bold) const;  // the tags' and notes' font
  void drawReadout(QPainter* painter, const QRectF& plot);
  void drawMarkers(QPainter* painter, const QRectF& plot);
  void drawValueFlags(QPainter* painter, const QRectF& plot);

  Callbacks callbacks_;
  QString placeholder_;
  QString note_;
  std::vector<Marker> markers_;
  std::vector<ValueFlag> flags_;
  Drag drag_ = Drag::kNone;
  QPointF press_pos_, last_pos_;
  std::optional<QPointF> hover_;
  std::optional<double> echo_;
  QPixmap scene_image_;
  bool scene_changed_ = true;
  bool drawing_scene_image_ = false;  // drawForeground() leaves the overlay out of it
};

}  // namespace ringmaster::gui
