#include "charts/metric_chart.h"

#include <QCategoryAxis>
#include <QChart>
#include <QCoreApplication>
#include <QDateTime>
#include <QElapsedTimer>
#include <QEvent>
#include <QFileDialog>
#include <QFontMetrics>
#include <QGraphicsLayout>
#include <QInputDialog>
#include <QLegend>
#include <QLegendMarker>
#include <QLineEdit>
#include <QLineSeries>
#include <QLocale>
#include <QMenu>
#include <QMessageBox>
#include <QPixmap>
#include <QPointer>
#include <QSaveFile>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>
#include <QValueAxis>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <deque>
#include <string>

#include "charts/axis_ticks.h"
#include "charts/chart_lines_item.h"
#include "charts/chart_view.h"
#include "charts/outlier_clip.h"
#include "charts/palette.h"

namespace ringmaster::gui {
namespace {

constexpr double kRawAlphaWhenSmoothed = 0.25;
constexpr double kMaxSmoothing = 0.99;
// Target spacing between tick labels, in pixels.
constexpr int kXTickSpacingPx = 110;
constexpr int kYTickSpacingPx = 50;
// Narrowest x span a zoom may reach: a couple of steps, or a millisecond of wall time.
constexpr double kMinStepSpan = 2;
constexpr double kMinTimeSpan = 1e-3;
constexpr int kRightMarginPx = 8;

// Readable in a glance: 0.4123, 12.35, 1,234.5, 123,457, 1.23e-05.
QString formatValue(double v) {
  if (std::isnan(v)) return QStringLiteral("NaN");
  if (std::isinf(v)) return v > 0 ? QStringLiteral("+inf") : QStringLiteral("-inf");
  if (v == 0) return QStringLiteral("0");
  const double a = std::abs(v);
  const QLocale en(QLocale::English);
  if (a >= 1e5) return en.toString(v, 'f', 0);
  const int magnitude = static_cast<int>(std::floor(std::log10(a)));
  if (a >= 1e-3) return en.toString(v, 'f', std::max(0, 3 - magnitude));
  return QString::number(v, 'e', 2);
}

void appendNumber(std::string* out, double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, res.ptr);
}

void appendCsvField(std::string* out, const QString& field) {
  const std::string s = field.toStdString();
  if (s.find_first_of(",\"\r\n") == std::string::npos) {
    out->append(s);
    return;
  }
  out->push_back('"');
  for (char c : s) {
    if (c == '"') out->push_back('"');
    out->push_back(c);
  }
  out->push_back('"');
}

QPolygonF toQPoints(const std::vector<ViewPoint>& points) {
  QPolygonF out;
  out.reserve(static_cast<qsizetype>(points.size()));
  for (const auto& p : points) out.append(QPointF(p.x, p.y));
  return out;
}

// For a log axis: log10 of the positive values; the others are counted in `not_drawn` and left
// out (the line joins its neighbours across them). `lo`/`hi` take the range of what is drawn.
QPolygonF toLogQPoints(const std::vector<ViewPoint>& points, int* not_drawn, double* lo, double* hi,
                       bool* any) {
  QPolygonF out;
  out.reserve(static_cast<qsizetype>(points.size()));
  for (const auto& p : points) {
    if (!(p.y > 0) || !std::isfinite(p.y)) {
      if (!std::isnan(p.y)) ++*not_drawn;  // NaN has its own tags
      continue;
    }
    const double y = std::log10(p.y);
    out.append(QPointF(p.x, y));
    *lo = *any ? std::min(*lo, y) : y;
    *hi = *any ? std::max(*hi, y) : y;
    *any = true;
  }
  return out;
}

// The point of `points` (sorted by x) nearest to x; nullptr when empty.
const ViewPoint* nearest(const std::vector<ViewPoint>& points, double x) {
  if (points.empty()) return nullptr;
  auto it = std::lower_bound(points.begin(), points.end(), x,
                             [](const ViewPoint& p, double v) { return p.x < v; });
  if (it == points.end()) return &points.back();
  if (it != points.begin() && x - std::prev(it)->x < it->x - x) --it;
  return &*it;
}

// Dynamic ticks are laid out on every change, so the order of the two changes matters: a new
// range under the old interval (0..10^7 at 0.05) would create millions of tick items for a
// moment. A coarser interval goes first, a finer one after the range. Unchanged axes are left
// alone: each relayout costs Qt Charts more than the whole decimation.
void setValueAxis(QValueAxis* axis, double lo, double hi, double interval, double max_abs) {
  if (axis->tickType() != QValueAxis::TicksDynamic) {
    axis->setTickCount(2);
    axis->setTickType(QValueAxis::TicksDynamic);
  }
  if (axis->min() == lo && axis->max() == hi && axis->tickInterval() == interval) return;
  const QString format = QString::fromStdString(tickLabelFormat(interval, max_abs));
  if (axis->labelFormat() != format) axis->setLabelFormat(format);
  if (interval >= axis->tickInterval()) {
    axis->setTickInterval(interval);
    axis->setRange(lo, hi);
  } else {
    axis->setRange(lo, hi);
    axis->setTickInterval(interval);
  }
}

// A category axis over [lo, hi] with a label at each of `wanted`'s values. `shown` holds the
// labels it has: rebuilding them relayouts the axis, which costs more than the whole decimation,
// so it happens only when a tick changed. `span` scales the start value's offset: a category
// ends strictly after the start value, so it starts just left of a tick on the edge.
void setCategoryTicks(QCategoryAxis* axis, double lo, double hi, double span,
                      std::vector<std::pair<QString, double>> wanted,
                      std::vector<std::pair<QString, double>>* shown) {
  axis->setRange(lo, hi);
  axis->setStartValue(lo - span * 1e-9);
  if (wanted == *shown) return;
  for (const QString& label : axis->categoriesLabels()) axis->remove(label);
  for (const auto& [label, t] : wanted) axis->append(label, t);
  *shown = std::move(wanted);
}

}  // namespace

// The charts waiting after refreshSoon() or refreshLater(), drawn one per turn of the event loop,
// oldest first, those of refreshSoon() before the others.
class ChartRefreshQueue : public QObject {
 public:
  // New data's redraws (refreshLater) take at most a fifth of the GUI thread: after one that took
  // t, the next waits kPacing * t. An 8-rank job redrawing ten charts as fast as its data came
  // kept the GUI thread 54% busy, most of it Qt Charts stroking lines. t counts the chart's last
  // drawing of its lines on the drawing thread too: the cores are the same.
  static constexpr double kPacing = 4;

  explicit ChartRefreshQueue(QObject* parent) : QObject(parent) {
    timer_.setSingleShot(true);
    timer_.setTimerType(Qt::PreciseTimer);
    timer_.setObjectName("chart-refresh-queue");
    connect(&timer_, &QTimer::timeout, this, &ChartRefreshQueue::next);
    clock_.start();
  }
  void add(MetricChart* chart, bool paced) {
    (paced ? paced_ : urgent_).push_back(chart);
    schedule();
  }

 private:
  using Queued = MetricChart::Queued;
  void schedule() {
    // Not 0: a zero timer due again at once can run two charts' refreshes back to back with a
    // paint between and nothing else; a millisecond lets input and other timers in between.
    if (!urgent_.empty()) {
      timer_.start(1);
    } else if (!paced_.empty()) {
      timer_.start(static_cast<int>(std::max<qint64>(1, paced_due_ms_ - clock_.elapsed())));
    } else {
      timer_.stop();
    }
  }
  // The first chart of `queue` still waiting in it (closed charts, and charts moved to the
  // urgent queue meanwhile, are dropped); nullptr when none.
  static MetricChart* take(std::deque<QPointer<MetricChart>>& queue, Queued in) {
    while (!queue.empty()) {
      QPointer<MetricChart> chart = queue.front();
      queue.pop_front();
      if (chart && chart->queued_ == in) return chart;
    }
    return nullptr;
  }
  void next() {
    MetricChart* chart = take(urgent_, Queued::kSoon);
    const bool paced = !chart && clock_.elapsed() >= paced_due_ms_;
    if (paced) chart = take(paced_, Queued::kLater);
    if (chart) {
      chart->queued_ = Queued::kNo;
      QElapsedTimer took;
      took.start();
      chart->refresh();
      chart->view_->renderSceneNow();  // this turn draws it; the next frame only copies it
      if (paced) {
        const double cost = took.nsecsElapsed() / 1e6 + chart->lines_item_->lastDrawingMs();
        paced_due_ms_ = clock_.elapsed() + kPacing * cost;
      }
    }
    schedule();
  }

  QTimer timer_;
  QElapsedTimer clock_;
  double paced_due_ms_ = 0;  // on clock_
  std::deque<QPointer<MetricChart>> urgent_, paced_;
};

MetricChart::MetricChart(const QString& title, QWidget* parent) : QWidget(parent), title_(title) {
  chart_ = new QChart;
  chart_->setTitle(title);
  QFont title_font = font();
  title_font.setBold(true);
  chart_->setTitleFont(title_font);
  // Tick labels through QLocale: "1,250.5" rather than "1250.5".
  chart_->setLocale(QLocale(QLocale::English));
  chart_->setLocalizeNumbers(true);
  chart_->setAnimationOptions(QChart::NoAnimation);
  chart_->setMargins(QMargins(2, 2, kRightMarginPx, 2));
  chart_->layout()->setContentsMargins(0, 0, 0, 0);
  chart_->legend()->setAlignment(Qt::AlignTop);
  chart_->legend()->setShowToolTips(true);
  chart_->legend()->hide();

  y_axis_ = new QValueAxis;
  y_axis_->setTickAnchor(0);
  chart_->addAxis(y_axis_, Qt::AlignLeft);
  y_log_axis_ = new QCategoryAxis;
  y_log_axis_->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
  chart_->addAxis(y_log_axis_, Qt::AlignLeft);
  y_log_axis_->setVisible(false);
  y_log_axis_->setLabelsFont(font());
  x_axis_ = new QCategoryAxis;
  x_axis_->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
  chart_->addAxis(x_axis_, Qt::AlignBottom);
  x_axis_->setLabelsFont(font());
  y_axis_->setLabelsFont(font());
  updateXAxisTitle();
  // An image of the lines drawn in the background is in the view's picture of the scene at once.
  lines_item_ = new ChartLinesItem(chart_, [this] { view_->sceneChanged(); });
  connect(chart_, &QChart::plotAreaChanged, this, [this] { lines_item_->changed(); });

  view_ = new ChartView(chart_, this);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(view_);

  reset_button_ = new QToolButton(view_);
  reset_button_->setText(tr("Reset zoom"));
  reset_button_->setToolTip(tr("Follow the data again (or double-click the plot)"));
  reset_button_->setCursor(Qt::PointingHandCursor);
  reset_button_->hide();
  connect(reset_button_, &QToolButton::clicked, this, [this] { userReset(); });

  ChartView::Callbacks cb;
  cb.zoomToPixels = [this](double a, double b) { userZoom(pixelToX(a), pixelToX(b)); };
  cb.zoomAround = [this](double px, double factor) {
    const double xc = pixelToX(px);
    userZoom(xc - (xc - x0_) * factor, xc + (x1_ - xc) * factor);
  };
  cb.panByPixels = [this](double dx) {
    const double w = chart_->plotArea().width();
    if (w <= 0 || dx == 0) return;
    const double shift = -dx / w * (x1_ - x0_);
    zoomed_ = true;
    x0_ += shift;
    x1_ += shift;
    refresh();
    emit xRangeChanged(x0_, x1_);
  };
  cb.resetZoom = [this] { userReset(); };
  cb.contextMenu = [this](QPoint pos) { showContextMenu(pos); };
  cb.readoutAt = [this](double px) { return readoutAt(px); };
  cb.resized = [this] { refreshSoon(); };
  cb.linesPending = [this] { return lines_item_->drawingPending(); };
  cb.hovered = [this](std::optional<double> px) {
    constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
    const double x = px ? pixelToX(*px) : kNone;
    const std::optional<double> time = px ? timeAtX(x) : std::nullopt;
    emit hoverMoved(axis_ == metrics::Axis::kStep ? x : kNone, time.value_or(kNone));
  };
  view_->setCallbacks(std::move(cb));

  applyChartTheme(chart_, palette());
  setMinimumSize(260, 180);
  refresh();
}

MetricChart::~MetricChart() = default;

QString MetricChart::title() const { return title_; }

void MetricChart::updateXAxisTitle() {
  x_axis_->setTitleText(axis_ == metrics::Axis::kStep ? tr("step")
                        : time_origin_                ? tr("time since start (h:mm:ss)")
                                                      : tr("time"));
}

void MetricChart::setTimeOrigin(std::optional<double> origin) {
  if (origin == time_origin_) return;
  time_origin_ = origin;
  updateXAxisTitle();
  x_ticks_.clear();
  for (const QString& label : x_axis_->categoriesLabels()) x_axis_->remove(label);
  refresh();
}

void MetricChart::setLines(std::vector<ChartLine> lines) {
  chart_->removeAllSeries();
  legend_entries_.clear();
  lines_ = std::move(lines);
  views_.assign(lines_.size(), LineView{});
  lines_item_->lines().assign(lines_.size(), ChartLinesItem::Line{});
  for (size_t i = 0; i < lines_.size(); ++i) {
    auto* entry = new QLineSeries;
    chart_->addSeries(entry);
    entry->setName(lines_[i].label);
    entry->attachAxis(x_axis_);
    entry->attachAxis(y_axis_);
    legend_entries_.push_back(entry);
    for (QLegendMarker* m : chart_->legend()->markers(entry)) {
      connect(m, &QLegendMarker::clicked, this, [this, i] {
        setLineVisible(static_cast<int>(i), !lines_[i].visible);
        emit lineVisibilityToggled(static_cast<int>(i), lines_[i].visible);
      });
    }
  }
  restyleLines();
  refresh();
}

void MetricChart::restyleLines() {
  const bool smooth = smoothing_ > 0;
  styled_smooth_ = smooth;
  const double base_width = lines_.size() > kMaxLegendLines ? 1.2 : 1.6;
  for (size_t i = 0; i < lines_.size(); ++i) {
    const double width = lines_[i].bold ? 2 * base_width : base_width;
    const QColor color = lines_[i].color.isValid() ? lines_[i].color : seriesColor(int(i));
    QColor raw_color = color;
    if (smooth) raw_color.setAlphaF(kRawAlphaWhenSmoothed);
    ChartLinesItem::Line& drawn = lines_item_->lines()[i];
    drawn.raw_pen = QPen(raw_color, smooth ? 1.0 : width);
    drawn.raw_pen.setCosmetic(true);
    drawn.smoothed_pen = QPen(color, width + 0.6);
    drawn.smoothed_pen.setCosmetic(true);
    QColor fill = color;
    fill.setAlphaF(0.22);
    drawn.band_brush = fill;
  }
  lines_item_->changed();
  updateLegend();
  view_->sceneChanged();
}

void MetricChart::updateLegend() {
  QLegend* legend = chart_->legend();
  const int n = static_cast<int>(lines_.size());
  legend->setVisible(n >= 2 && n <= kMaxLegendLines);
  legend->setFont(font());
  const QColor text = palette().color(QPalette::WindowText);
  const QColor faded = palette().color(QPalette::PlaceholderText);
  for (int i = 0; i < n; ++i) {
    QColor color = lines_[i].color.isValid() ? lines_[i].color : seriesColor(i);
    if (!lines_[i].visible) color.setAlphaF(0.3);
    for (QLegendMarker* m : legend->markers(legend_entries_[i])) {
      m->setBrush(color);
      m->setPen(QPen(color));
      m->setLabelBrush(lines_[i].visible ? text : faded);
    }
  }
  view_->sceneChanged();
}

void MetricChart::setLineVisible(int index, bool visible) {
  if (index < 0 || index >= static_cast<int>(lines_.size())) return;
  lines_[index].visible = visible;
  updateLegend();
  refresh();
}

void MetricChart::setXAxis(metrics::Axis axis) {
  if (axis != axis_) {
    axis_ = axis;
    updateXAxisTitle();
  }
  resetZoom();
}

bool MetricChart::adoptSmoothing(double weight) {
  const double clamped = std::isfinite(weight) ? std::clamp(weight, 0.0, kMaxSmoothing) : 0.0;
  if (clamped == smoothing_) return false;
  // The pens and the title ("EMA 0.60") follow on the redraw (see refresh()): a title changed
  // here had every chart of a dashboard draw its scene again in the next paint, all at once.
  smoothing_ = clamped;
  return true;
}

void MetricChart::setSmoothing(double weight) {
  if (adoptSmoothing(weight)) refresh();
}

void MetricChart::setSmoothingSoon(double weight) {
  if (adoptSmoothing(weight)) refreshSoon();
}

void MetricChart::setYLabel(const QString& label) {
  y_label_ = label;
  updateYTitle();
}

void MetricChart::setYScale(YScale scale) {
  if (scale == y_scale_) return;
  y_scale_ = scale;
  y_axis_->setVisible(scale == YScale::kLinear);
  y_log_axis_->setVisible(scale == YScale::kLog);
  refresh();
}

void MetricChart::setIncludeZero(bool include) {
  if (include == include_zero_) return;
  include_zero_ = include;
  refresh();
}

void MetricChart::setClipOutliers(bool clip) {
  if (clip == clip_outliers_) return;
  clip_outliers_ = clip;
  refresh();
}

void MetricChart::setYRange(std::optional<std::pair<double, double>> range) {
  manual_y_ = range;
  refresh();
}

std::pair<double, double> MetricChart::yRange() const { return {y_axis_->min(), y_axis_->max()}; }

QString MetricChart::yTitle() const { return y_axis_->titleText(); }

QString MetricChart::chartTitle() const { return chart_->title(); }

// The unit, and what the chart does to the data: "seconds · log", "… · 3 points <= 0 not drawn",
// "… · 2 outliers clipped"; the smoothing beside the chart's title.
void MetricChart::updateYTitle() {
  QStringList parts;
  if (!y_label_.isEmpty()) parts << y_label_;
  if (y_scale_ == YScale::kLog) {
    parts << (not_drawn_ > 0 ? tr("log · %n point(s) \u2264 0 not drawn", nullptr, not_drawn_)
                             : tr("log"));
  }
  if (manual_y_) parts << tr("fixed range");
  if (clipped_ > 0) {
    parts << (clipped_ == 1 ? tr("1 outlier clipped") : tr("%1 outliers clipped").arg(clipped_));
  }
  const QString title = parts.join(QStringLiteral(" · "));
  if (y_axis_->titleText() != title) {
    y_axis_->setTitleText(title);
    y_log_axis_->setTitleText(title);
  }
  // What the bold lines are, beside the chart's name (TensorBoard's weight), so that a saved
  // image says it too. Qt Charts titles take rich text.
  const QString chart_title =
      smoothing_ > 0 ? title_.toHtmlEscaped() +
                           QStringLiteral("&nbsp;&nbsp;<span style='font-weight:normal'>%1</span>")
                               .arg(tr("EMA %1").arg(smoothing_, 0, 'f', 2))
                     : title_.toHtmlEscaped();
  if (chart_->title() != chart_title) chart_->setTitle(chart_title);
}

void MetricChart::askYRange() {
  const auto [lo, hi] = yRange();
  const bool log = y_scale_ == YScale::kLog;
  const QString now =
      QStringLiteral("%1, %2").arg(log ? std::pow(10, lo) : lo).arg(log ? std::pow(10, hi) : hi);
  // Wide enough for its title, which the window manager cut ("Y range of step ti…").
  QInputDialog dialog(this);
  dialog.setWindowTitle(tr("Y range of %1").arg(title_));
  dialog.setLabelText(tr("From, to (e.g. 0, 2.5):"));
  dialog.setTextValue(now);
  dialog.setMinimumWidth(fontMetrics().horizontalAdvance(dialog.windowTitle()) + 160);
  if (dialog.exec() != QDialog::Accepted) return;
  const QString text = dialog.textValue();
  const QStringList parts = text.split(',');
  bool a_ok = false, b_ok = false;
  const double a = parts.size() == 2 ? parts[0].trimmed().toDouble(&a_ok) : 0;
  const double b = parts.size() == 2 ? parts[1].trimmed().toDouble(&b_ok) : 0;
  if (!a_ok || !b_ok || !(b > a) || (log && a <= 0)) {
    QMessageBox::warning(this, tr("Y range"),
                         tr("'%1' is not a range: two numbers, the first below the second%2.")
                             .arg(text, log ? tr(", both above 0 on a log axis") : QString()));
    return;
  }
  setYRange(std::make_pair(a, b));
  emit yAxisChosen();
}

int MetricChart::plotColumns() const {
  const int w = static_cast<int>(chart_->plotArea().width());
  return w >= 20 ? w : std::max(100, width() - 80);
}

std::pair<double, double> MetricChart::dataRange() const {
  double lo = 0, hi = 0;
  bool any = false;
  for (bool only_visible : {true, false}) {
    for (const ChartLine& line : lines_) {
      if ((only_visible && !line.visible) || !line.series || line.series->empty()) continue;
      const double a = line.series->minX(axis_), b = line.series->maxX(axis_);
      lo = any ? std::min(lo, a) : a;
      hi = any ? std::max(hi, b) : b;
      any = true;
    }
    if (any) break;
  }
  if (!any) return {0, 1};
  if (hi <= lo) {
    const double pad = axis_ == metrics::Axis::kTime ? 30 : 1;
    return {lo - pad, hi + pad};
  }
  return {lo, hi};
}

// One chart per turn of the event loop: a layout that resizes ten charts at once (a chart added
// above them, the window resized) or a dashboard whose charts all have new points costs ten short
// turns instead of one long one. A resize redraws here too, not inside the layout pass.
void MetricChart::refreshSoon() { queue(Queued::kSoon); }

void MetricChart::refreshLater() { queue(Queued::kLater); }

void MetricChart::queue(Queued when) {
  if (queued_ == Queued::kSoon || queued_ == when) return;  // kLater moves up to kSoon
  queued_ = when;
  static QPointer<ChartRefreshQueue> shared;
  if (!shared) shared = new ChartRefreshQueue(QCoreApplication::instance());
  shared->add(this, when == Queued::kLater);
}

void MetricChart::refresh() {
  // The pens change only between smoothing off and on, and here rather than when it is set: a
  // restyle redraws the chart's scene, and a slider dragged through 0 restyled every chart of a
  // dashboard at once (a 100 ms stall with 8 ranks).
  if ((smoothing_ > 0) != styled_smooth_) restyleLines();
  // Two passes at most: new tick labels can change the plot width, and columns should be pixels.
  for (int pass = 0; pass < 2; ++pass) {
    if (chart_->layout() && !chart_->layout()->isActivated()) chart_->layout()->activate();
    const int columns = plotColumns();
    if (!zoomed_) std::tie(x0_, x1_) = dataRange();
    const ViewRequest request{axis_, x0_, x1_, columns, smoothing_};
    drawn_points_ = 0;
    drawn_band_points_ = 0;
    not_drawn_ = 0;
    bool has_values = false, any_data = false;
    double lo = 0, hi = 0;
    const bool log = y_scale_ == YScale::kLog;
    for (size_t i = 0; i < lines_.size(); ++i) {
      const ChartLine& line = lines_[i];
      ChartLinesItem::Line& drawn = lines_item_->lines()[i];
      const bool drawable = line.visible && line.series && !line.series->empty();
      views_[i] = drawable ? decimateForView(*line.series, request) : LineView{};
      const LineView& v = views_[i];
      any_data = any_data || drawable;
      if (log) {
        int not_smoothed = 0;  // a smoothed point <= 0 stands for raw ones already counted
        drawn.raw = toLogQPoints(v.raw, &not_drawn_, &lo, &hi, &has_values);
        drawn.smoothed = toLogQPoints(v.smoothed, &not_smoothed, &lo, &hi, &has_values);
      } else {
        drawn.raw = toQPoints(v.raw);
        drawn.smoothed = toQPoints(v.smoothed);
      }
      drawn_points_ += static_cast<int>(v.raw.size() + v.smoothed.size());
      if (line.band_low && line.band_high) {
        // The band's edges decimated like the line: per column, the lowest of the minima and
        // the highest of the maxima (each column's min/max pair), so no excursion is lost.
        LineView low, high;
        if (drawable) {
          ViewRequest edges = request;
          edges.smoothing = 0;
          low = decimateForView(*line.band_low, edges);
          high = decimateForView(*line.band_high, edges);
        }
        if (log) {
          int not_banded = 0;
          drawn.upper = toLogQPoints(high.raw, &not_banded, &lo, &hi, &has_values);
          drawn.lower = toLogQPoints(low.raw, &not_banded, &lo, &hi, &has_values);
        } else {
          drawn.upper = toQPoints(high.raw);
          drawn.lower = toQPoints(low.raw);
          for (const LineView* edge : {&low, &high}) {
            if (!edge->has_values) continue;
            lo = has_values ? std::min(lo, edge->y_min) : edge->y_min;
            hi = has_values ? std::max(hi, edge->y_max) : edge->y_max;
            has_values = true;
          }
        }
        drawn_band_points_ += static_cast<int>(low.raw.size() + high.raw.size());
      }
      if (!log && v.has_values) {
        lo = has_values ? std::min(lo, v.y_min) : v.y_min;
        hi = has_values ? std::max(hi, v.y_max) : v.y_max;
        has_values = true;
      }
    }
    clipped_ = 0;
    if (clip_outliers_ && !log && !manual_y_ && has_values) {
      std::vector<std::vector<double>> values;
      for (const LineView& v : views_) {
        values.emplace_back();
        for (const ViewPoint& p : v.raw) values.back().push_back(p.y);
      }
      const ClippedRange clipped = clipOutliers(values);
      if (clipped.lo <= clipped.hi) {
        lo = clipped.lo;
        hi = clipped.hi;
        clipped_ = clipped.outside;
      }
    }
    applyXAxisRange(columns);
    applyYRange(lo, hi, has_values);
    updateYTitle();
    view_->setPlaceholder(any_data ? QString()
                                   : (lines_.empty() ? tr("No series") : tr("Waiting for data…")));
    if (chart_->layout()) chart_->layout()->activate();
    if (std::abs(plotColumns() - columns) <= 1) break;
  }
  lines_item_->setRanges(x0_, x1_, y_axis_->min(), y_axis_->max());
  lines_item_->changed();
  view_->sceneChanged();
  placeMarkers();
  reset_button_->setVisible(zoomed_);
  if (zoomed_) {
    const QRectF plot = chart_->plotArea();
    reset_button_->adjustSize();
    reset_button_->move(static_cast<int>(plot.right()) - reset_button_->width() - 4,
                        static_cast<int>(plot.top()) + 4);
  }
}

void MetricChart::applyXAxisRange(int columns) {
  const double span = x1_ - x0_;
  const int target = std::max(2, columns / kXTickSpacingPx);
  const bool time = axis_ == metrics::Axis::kTime;
  double interval;
  std::vector<double> ticks;
  if (time && time_origin_) {
    interval = niceTimeInterval(span, target);
    ticks = tickValues(x0_, x1_, interval, *time_origin_);  // round elapsed times
  } else if (time) {
    interval = niceTimeInterval(span, target);
    // Round local times: 14:00, not 14:00 UTC shown as 16:00.
    const double utc_offset =
        QDateTime::fromSecsSinceEpoch(static_cast<qint64>(x0_)).offsetFromUtc();
    ticks = tickValues(x0_, x1_, interval, -utc_offset);
  } else {
    // Steps are whole numbers: a 3-step run gets ticks 1, 2, 3, not 1.0, 1.5, 2.0.
    interval = std::max(1.0, niceTickInterval(span, target));
    ticks = tickValues(x0_, x1_, interval);
  }
  const QLocale en(QLocale::English);
  const int decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(interval) - 1e-9)));
  const QString time_format = interval < 1       ? QStringLiteral("hh:mm:ss.zzz")
                              : span > 20 * 3600 ? QStringLiteral("MM-dd hh:mm")
                              : interval < 60    ? QStringLiteral("hh:mm:ss")
                                                 : QStringLiteral("hh:mm");
  const QFontMetrics metrics(x_axis_->labelsFont());
  std::vector<std::pair<QString, double>> wanted;
  for (double t : ticks) {
    const QString label =
        time && time_origin_ ? QString::fromStdString(formatElapsed(t - *time_origin_, interval))
        : time ? QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(std::llround(t * 1000)))
                     .toString(time_format)
               : en.toString(t, 'f', decimals);
    // A label centred on a tick at the right edge would be cut off by the widget's border.
    const double px_to_edge = span > 0 ? (x1_ - t) / span * columns : 0;
    if (px_to_edge + kRightMarginPx < metrics.horizontalAdvance(label) / 2.0 + 2) continue;
    wanted.emplace_back(label, t);
  }
  setCategoryTicks(x_axis_, x0_, x1_, std::max(span, 1.0), std::move(wanted), &x_ticks_);
}

void MetricChart::applyYRange(double lo, double hi, bool has_values) {
  const int rows = std::max(2, static_cast<int>(chart_->plotArea().height()) / kYTickSpacingPx);
  if (y_scale_ == YScale::kLog) {
    applyLogYRange(lo, hi, has_values, rows);
    return;
  }
  if (manual_y_ && manual_y_->second > manual_y_->first) {
    const double interval = niceTickIntervalWithin(manual_y_->first, manual_y_->second, rows, 2);
    setValueAxis(y_axis_, manual_y_->first, manual_y_->second, interval,
                 std::max(std::abs(manual_y_->first), std::abs(manual_y_->second)));
    return;
  }
  if (!has_values) {
    lo = 0;
    hi = 1;
  }
  if (include_zero_) {
    lo = std::min(lo, 0.0);
    hi = std::max(hi, 0.0);
  }
  // A span within rounding of the values is no span: an EMA of a constant differs from it in
  // its last bits, and ticks 1e-17 apart on values near 1 cannot step from one to the next (Qt
  // Charts then looped for ever making labels, and the line was drawn across the whole height).
  const double magnitude = std::max(std::abs(lo), std::abs(hi));
  if (hi - lo <= magnitude * 1e-9) lo = hi = (lo + hi) / 2;
  const double span = hi - lo;
  const double pad = span > 0 ? span * 0.06 : (hi != 0 ? std::abs(hi) * 0.1 : 1);
  lo -= pad;
  hi += pad;
  const double interval = niceTickIntervalWithin(lo, hi, rows, 2);
  setValueAxis(y_axis_, lo, hi, interval, std::max(std::abs(lo), std::abs(hi)));
}

// The values' range in log10, a twentieth of it (at least 0.02 decades) to spare at either end,
// labelled with round values (logTicks): 0.3, 0.5, 1, 2 for a loss from 2.3 to 0.3, rather than
// whole decades 0.1 to 10 that left the curve a third of the height (issue 35).
void MetricChart::applyLogYRange(double lo, double hi, bool has_values, int rows) {
  if (manual_y_ && manual_y_->first > 0 && manual_y_->second > manual_y_->first) {
    lo = std::log10(manual_y_->first);
    hi = std::log10(manual_y_->second);
  } else {
    if (!has_values) {
      lo = -1;
      hi = 1;
    }
    const double pad = std::max((hi - lo) / 20, 0.02);
    lo -= pad;
    hi += pad;
  }
  y_axis_->setRange(lo, hi);  // hidden: where the lines go
  std::vector<std::pair<QString, double>> wanted;
  for (double t : logTicks(lo, hi, rows + 1)) {
    wanted.emplace_back(QString::number(std::pow(10.0, t), 'g', 6), t);
  }
  setCategoryTicks(y_log_axis_, lo, hi, hi - lo, std::move(wanted), &y_log_ticks_);
}

void MetricChart::setStaleNote(const QString& text) { view_->setNote(text); }

QString MetricChart::staleNote() const { return view_->note(); }

void MetricChart::setMarkers(std::vector<ChartMarker> markers) {
  markers_ = std::move(markers);
  placeMarkers();
}

std::optional<double> MetricChart::markerX(const ChartMarker& marker) const {
  if (axis_ == metrics::Axis::kTime) return marker.time;
  if (std::isfinite(marker.step)) return marker.step;
  // The newest step any line had reached at the marker's time; the first step when none had.
  std::optional<double> reached, first;
  for (const ChartLine& line : lines_) {
    if (!line.series || line.series->empty()) continue;
    const metrics::Series& s = *line.series;
    first = std::min(first.value_or(s.sortedX(0, axis_)), s.sortedX(0, axis_));
    if (auto step = s.stepAt(marker.time)) reached = std::max(reached.value_or(*step), *step);
  }
  return reached ? reached : first;
}

void MetricChart::placeMarkers() {
  const QRectF plot = chart_->plotArea();
  std::vector<ChartView::Marker> placed;
  for (const ChartMarker& marker : markers_) {
    const std::optional<double> x = markerX(marker);
    if (!x || x1_ <= x0_) continue;
    placed.push_back(
        {plot.left() + (*x - x0_) / (x1_ - x0_) * plot.width(), marker.label, marker.color});
  }
  view_->setMarkers(std::move(placed));

  // Every NaN and ±Inf of a visible line, where it happened: a diverged loss is never hidden.
  std::vector<ChartView::ValueFlag> flags;
  for (size_t i = 0; i < views_.size() && x1_ > x0_; ++i) {
    for (const NonFinitePoint& p : views_[i].non_finite) {
      const double px = plot.left() + (p.x - x0_) / (x1_ - x0_) * plot.width();
      const QString text = std::isnan(p.value) ? QStringLiteral("NaN")
                           : p.value > 0       ? QStringLiteral("+Inf")
                                               : QStringLiteral("\u2212Inf");
      flags.push_back({px, !std::isnan(p.value) && p.value < 0, text, lines_[i].color});
    }
  }
  view_->setValueFlags(std::move(flags));
}

// What the hover shows at scene x `px`. Exact views snap to the nearest real point: the header
// names its step (and time), each row its value, and a line whose nearest point lies elsewhere
// says where. A decimated view names each line's extremes in the hovered pixel column, so a
// spike drawn there can be read. Many rows: the highest and lowest, with "… N more" between.
ChartView::Readout MetricChart::readoutAt(double px) const {
  ChartView::Readout r;
  const double x = pixelToX(px);
  const double column = (x1_ - x0_) / std::max(1, plotColumns());
  const double tolerance = 3 * column;
  for (const ChartMarker& marker : markers_) {
    const std::optional<double> at = markerX(marker);
    if (at && std::abs(*at - x) <= tolerance) {
      r.rows.push_back({marker.color, marker.detail.isEmpty() ? marker.label : marker.detail});
    }
  }
  struct Row {
    int line;
    double value;  // what the rows are ordered by
    QString text;
    std::optional<double> x;  // an exact point's x
  };
  std::vector<Row> rows;
  std::optional<size_t> snapped_line;
  size_t snapped_index = 0;
  double snapped_x = 0;
  bool any_column = false;
  QStringList no_data;  // shown lines that have no point here (a run that stopped earlier)
  for (size_t i = 0; i < lines_.size(); ++i) {
    const ChartLine& line = lines_[i];
    if (!line.visible || !line.series) continue;
    const metrics::Series& s = *line.series;
    if (s.empty() || x < s.sortedX(0, axis_) - tolerance ||
        x > s.sortedX(s.size() - 1, axis_) + tolerance) {
      no_data << line.label;
      continue;
    }
    QString text = line.label + QStringLiteral("  ");
    if (!views_[i].exact) {
      const std::vector<metrics::Series::Column> cols =
          s.columns(axis_, x - column / 2, x + column / 2, 1);
      if (!cols.empty() && cols[0].count > 1) {
        const metrics::Series::Column& c = cols[0];
        any_column = true;
        text += tr("max %1 · min %2").arg(formatValue(c.max), formatValue(c.min));
        appendSmoothed(i, x, &text);
        rows.push_back({static_cast<int>(i), c.max, text, std::nullopt});
        continue;
      }
    }
    size_t k = std::min(s.lowerBound(axis_, x), s.size() - 1);
    if (k > 0 && x - s.sortedX(k - 1, axis_) < s.sortedX(k, axis_) - x) --k;
    const double at = s.sortedX(k, axis_);
    if (!snapped_line || std::abs(at - x) < std::abs(snapped_x - x)) {
      snapped_line = i;
      snapped_index = k;
      snapped_x = at;
    }
    const double v = s.at(k).value;
    text += formatValue(v);
    appendSmoothed(i, x, &text);
    rows.push_back({static_cast<int>(i), v, text, at});
  }
  if (any_column) {
    const QLocale en(QLocale::English);
    const auto whole = [&](double v) {
      return en.toString(static_cast<qlonglong>(std::llround(v)));
    };
    r.header = axis_ == metrics::Axis::kStep
                   ? tr("steps %1–%2").arg(whole(x - column / 2), whole(x + column / 2))
                   : formatX(x - column / 2) + QStringLiteral(" – ") + formatX(x + column / 2);
  } else if (!snapped_line) {
    r.header = formatX(x);
  } else {
    // The snapped point: its step and wall time whichever the axis.
    const metrics::Series::Point& p = lines_[*snapped_line].series->at(snapped_index);
    const QString when =
        QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(std::llround(p.time * 1000)))
            .toString(QStringLiteral("hh:mm:ss"));
    const QString step = tr("step %1").arg(
        QLocale(QLocale::English).toString(static_cast<qlonglong>(std::llround(p.step))));
    r.header = axis_ == metrics::Axis::kTime ? formatX(snapped_x) + QStringLiteral(" · ") + step
                                             : step + QStringLiteral(" · ") + when;
    r.snap_px = xToPixel(snapped_x);
  }
  for (Row& row : rows) {
    if (row.x && snapped_line && *row.x != snapped_x) {
      row.text += QStringLiteral("  (") + formatX(*row.x) + QStringLiteral(")");
    }
  }
  auto color = [this](int i) {
    return lines_[i].color.isValid() ? lines_[i].color : seriesColor(i);
  };
  // As many rows as the box's columns hold in the plot (it never runs past it), at most
  // kMaxReadoutRows.
  const QRectF plot = chart_->plotArea();
  const int per_column =
      ChartView::readoutRowsPerColumn(plot.height(), QFontMetrics(view_->font()).height());
  const int columns =
      std::max(1, static_cast<int>(plot.width() - 12) / ChartView::kReadoutColumnWidth);
  const int fit = per_column * columns - static_cast<int>(r.rows.size());
  const int limit = std::clamp(fit, 3, kMaxReadoutRows);
  if (static_cast<int>(rows.size()) > limit) {
    // Many ranks: the extremes are what matters (a straggler, a diverging rank).
    std::stable_sort(rows.begin(), rows.end(),
                     [](const Row& a, const Row& b) { return a.value > b.value; });
    const int keep = (limit - 1) / 2;
    for (int i = 0; i < keep; ++i) r.rows.push_back({color(rows[i].line), rows[i].text});
    r.rows.push_back({QColor(), tr("… %1 more").arg(static_cast<int>(rows.size()) - 2 * keep)});
    for (size_t i = rows.size() - keep; i < rows.size(); ++i) {
      r.rows.push_back({color(rows[i].line), rows[i].text});
    }
  } else {
    for (const Row& row : rows) r.rows.push_back({color(row.line), row.text});
  }
  // Said, not left out: a compared run that ended earlier has nothing at this step.
  if (!no_data.isEmpty() && !rows.empty()) {
    r.rows.push_back({QColor(), no_data.size() <= 3
                                    ? tr("no data here: %1").arg(no_data.join(QStringLiteral(", ")))
                                    : tr("no data here: %1 lines").arg(no_data.size())});
  }
  return r;
}

// "   ema 0.2315": line i's smoothed value at x, when smoothing is on.
void MetricChart::appendSmoothed(size_t i, double x, QString* text) const {
  if (smoothing_ <= 0) return;
  if (const ViewPoint* e = nearest(views_[i].smoothed, x)) {
    *text += QStringLiteral("   ema ") + formatValue(e->y);
  }
}

double MetricChart::xToPixel(double x) const {
  const QRectF plot = chart_->plotArea();
  if (x1_ <= x0_) return plot.left();
  return plot.left() + (x - x0_) / (x1_ - x0_) * plot.width();
}

std::optional<double> MetricChart::timeAtX(double x) const {
  if (axis_ == metrics::Axis::kTime) return x;
  for (const ChartLine& line : lines_) {
    if (!line.series || line.series->empty()) continue;
    const size_t i = std::min(line.series->lowerBound(axis_, x), line.series->size() - 1);
    return line.series->at(i).time;
  }
  return std::nullopt;
}

void MetricChart::showEcho(double step, double time) {
  std::optional<double> x;
  if (axis_ == metrics::Axis::kStep && std::isfinite(step)) {
    x = step;
  } else if (std::isfinite(time)) {
    ChartMarker moment;  // the markers' rule: a time, or the step reached at that time
    moment.time = time;
    x = markerX(moment);
  }
  view_->setEcho(x ? std::optional<double>(xToPixel(*x)) : std::nullopt);
}

std::optional<double> MetricChart::echoPixel() const { return view_->echo(); }

double MetricChart::pixelToX(double px) const {
  const QRectF plot = chart_->plotArea();
  if (plot.width() <= 0) return x0_;
  return x0_ + (px - plot.left()) / plot.width() * (x1_ - x0_);
}

void MetricChart::userZoom(double x0, double x1) {
  if (!(x0 < x1) || !std::isfinite(x0) || !std::isfinite(x1)) return;
  const double min_span = axis_ == metrics::Axis::kTime ? kMinTimeSpan : kMinStepSpan;
  if (x1 - x0 < min_span) {
    const double c = (x0 + x1) / 2;
    x0 = c - min_span / 2;
    x1 = c + min_span / 2;
  }
  const auto [lo, hi] = dataRange();
  if (x0 <= lo && x1 >= hi) {
    // Zoomed out past the data: follow it again rather than freeze a range wider than it.
    userReset();
    return;
  }
  zoomed_ = true;
  x0_ = x0;
  x1_ = x1;
  refresh();
  emit xRangeChanged(x0_, x1_);
}

void MetricChart::userReset() {
  resetZoom();
  emit zoomReset();
}

void MetricChart::setXRange(double x0, double x1) {
  if (!(x0 < x1) || !std::isfinite(x0) || !std::isfinite(x1)) return;
  zoomed_ = true;
  x0_ = x0;
  x1_ = x1;
  refresh();
}

void MetricChart::resetZoom() {
  zoomed_ = false;
  refresh();
}

std::pair<double, double> MetricChart::xRange() const { return {x0_, x1_}; }

int MetricChart::drawnPointCount() const { return drawn_points_; }

QString MetricChart::formatX(double x) const {
  if (axis_ == metrics::Axis::kTime && time_origin_) {
    return QString::fromStdString(formatElapsed(x - *time_origin_, x1_ - x0_ < 10 ? 0.5 : 1));
  }
  if (axis_ == metrics::Axis::kTime) {
    const auto t = QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(std::llround(x * 1000)));
    return t.toString(x1_ - x0_ < 10 ? QStringLiteral("hh:mm:ss.zzz") : QStringLiteral("hh:mm:ss"));
  }
  return tr("step %1").arg(
      QLocale(QLocale::English).toString(static_cast<qlonglong>(std::llround(x))));
}

bool MetricChart::saveImage(const QString& path) const {
  lines_item_->drawNow();  // not what a background drawing will bring
  view_->sceneChanged();   // whatever changed since the last paint is in the image
  const QPixmap pixmap = view_->grab();
  return !pixmap.isNull() && pixmap.save(path, "PNG");
}

bool MetricChart::exportCsv(const QString& path) const {
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly)) return false;
  // smoothed: the EMA the chart draws (debiased, from the first exported point of the line), of
  // the points themselves rather than of the drawn columns; empty with smoothing off.
  std::string buf = "label,rank,step,time,value,smoothed\n";
  const double weight = std::clamp(smoothing_, 0.0, 0.999);
  for (const ChartLine& line : lines_) {
    if (!line.visible || !line.series) continue;
    const metrics::Series& s = *line.series;
    double ema = 0, debias = 1;
    const size_t end = s.upperBound(axis_, x1_);
    for (size_t i = s.lowerBound(axis_, x0_); i < end; ++i) {
      const auto& p = s.at(i);
      appendCsvField(&buf, line.label);
      buf.push_back(',');
      if (line.rank >= 0) appendNumber(&buf, line.rank);
      buf.push_back(',');
      appendNumber(&buf, p.step);
      buf.push_back(',');
      appendNumber(&buf, p.time);
      buf.push_back(',');
      appendNumber(&buf, p.value);
      buf.push_back(',');
      if (smoothing_ > 0 && std::isfinite(p.value)) {
        ema = ema * weight + (1 - weight) * p.value;
        debias *= weight;
        appendNumber(&buf, ema / (1 - debias));
      }
      buf.push_back('\n');
      if (buf.size() > (1 << 20)) {
        if (file.write(buf.data(), static_cast<qint64>(buf.size())) < 0) return false;
        buf.clear();
      }
    }
  }
  if (file.write(buf.data(), static_cast<qint64>(buf.size())) < 0) return false;
  return file.commit();
}

void MetricChart::showContextMenu(QPoint global_pos) {
  QMenu menu(this);
  menu.addAction(tr("Save image…"), this, [this] {
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Save chart image"), title_ + QStringLiteral(".png"), tr("PNG image (*.png)"));
    if (!path.isEmpty() && !saveImage(path)) {
      QMessageBox::warning(this, tr("Save image"), tr("Could not write %1.").arg(path));
    }
  });
  menu.addAction(tr("Export CSV…"), this, [this] {
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export visible series"), title_ + QStringLiteral(".csv"), tr("CSV (*.csv)"));
    if (!path.isEmpty() && !exportCsv(path)) {
      QMessageBox::warning(this, tr("Export CSV"), tr("Could not write %1.").arg(path));
    }
  });
  menu.addSeparator();
  menu.addSeparator();
  QAction* log = menu.addAction(tr("Log scale"), this, [this](bool on) {
    setYScale(on ? YScale::kLog : YScale::kLinear);
    emit yAxisChosen();
  });
  log->setCheckable(true);
  log->setChecked(y_scale_ == YScale::kLog);
  QAction* zero = menu.addAction(tr("Include zero"), this, [this](bool on) {
    setIncludeZero(on);
    emit yAxisChosen();
  });
  zero->setCheckable(true);
  zero->setChecked(include_zero_);
  zero->setEnabled(y_scale_ == YScale::kLinear && !manual_y_);
  QAction* clip = menu.addAction(tr("Clip outliers"), this, [this](bool on) {
    setClipOutliers(on);
    emit yAxisChosen();
  });
  clip->setCheckable(true);
  clip->setChecked(clip_outliers_);
  clip->setEnabled(y_scale_ == YScale::kLinear && !manual_y_);
  menu.addAction(tr("Set y range…"), this, [this] { askYRange(); });
  if (manual_y_) {
    menu.addAction(tr("Y range from the data"), this, [this] {
      setYRange({});
      emit yAxisChosen();
    });
  }
  menu.addSeparator();
  QAction* reset = menu.addAction(tr("Reset zoom"), this, [this] { userReset(); });
  reset->setEnabled(zoomed_);
  menu.exec(global_pos);
}

void MetricChart::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange || event->type() == QEvent::FontChange) {
    if (!chart_) return;
    applyChartTheme(chart_, palette());
    x_axis_->setLabelsFont(font());
    y_axis_->setLabelsFont(font());
    y_log_axis_->setLabelsFont(font());
    updateLegend();
    view_->sceneChanged();
  }
}

}  // namespace ringmaster::gui
