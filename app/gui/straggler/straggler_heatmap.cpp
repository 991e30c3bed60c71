#include "straggler/straggler_heatmap.h"

#include <QDateTime>
#include <QHelpEvent>
#include <QImage>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>
#include <algorithm>
#include <cmath>

#include "straggler/straggler_scale.h"

namespace ringmaster::gui {

namespace {

constexpr int kMargin = 6;
constexpr int kColumnPixels = 4;  // one grid column per this many pixels
// Rows down to a text line up to kLabelledRanks ranks (each labelled; the dashboard scrolls),
// down to kMinRowHeight beyond.
constexpr int kMinRowHeight = 3;
constexpr int kLabelledRanks = 64;
constexpr int kMaxRowHeight = 22;
constexpr int kMaxLabelWidth = 180;
constexpr int kLabelGap = 14;  // between a label and the grid: room for the slowest-rank marker
constexpr int kLegendBarWidth = 120;
// Below this mean ratio the slowest rank is within noise of the median: nobody is a straggler.
constexpr double kStragglerThreshold = 1.10;
// The verdict's window when the charts are not zoomed, in columns of 5 s: a rank slowed down
// for good is named once half of them show it (15 s), a few hiccups never (stragglerVerdict).
// Replayed on a real 8-rank job on 2 cores with one rank throttled to a third: named after
// 12-14 s, and no rank above 1.06x before it.
constexpr double kRecentSeconds = 30;
constexpr int kVerdictColumns = 6;

QString timeOfDay(double unix_seconds, bool with_ms) {
  const auto ms = static_cast<qint64>(std::llround(unix_seconds * 1000.0));
  return QDateTime::fromMSecsSinceEpoch(ms).toLocalTime().toString(
      with_ms ? QStringLiteral("HH:mm:ss.zzz") : QStringLiteral("HH:mm:ss"));
}

// A tick spacing from `steps` (ascending) leaving at least `min_px` pixels between ticks.
double pickTickStep(double span, int width_px, int min_px, const std::vector<double>& steps) {
  const double max_ticks = std::max(1.0, static_cast<double>(width_px) / min_px);
  for (double step : steps) {
    if (span / step <= max_ticks) return step;
  }
  return steps.back();
}

std::vector<double> niceSteps(double span) {
  std::vector<double> steps;
  const double top = std::max(1.0, span);
  for (double decade = 1; decade <= top * 10; decade *= 10) {
    for (double m : {1.0, 2.0, 5.0}) steps.push_back(m * decade);
  }
  return steps;
}

}  // namespace

StragglerHeatmap::StragglerHeatmap(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setAutoFillBackground(true);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

void StragglerHeatmap::setRanks(std::vector<const metrics::Series*> step_time_by_rank,
                                std::vector<QString> labels) {
  labels.resize(step_time_by_rank.size());
  for (size_t r = 0; r < labels.size(); ++r) {
    if (labels[r].isEmpty()) labels[r] = QStringLiteral("r%1").arg(r);
  }
  // The dashboard hands the same ranks over on every redraw: only new ranks or hosts relayout.
  const bool relayout = labels != labels_;
  series_ = std::move(step_time_by_rank);
  labels_ = std::move(labels);
  if (relayout) updateGeometry();
  refresh();
}

void StragglerHeatmap::setXAxis(metrics::Axis axis) {
  if (axis == axis_) return;
  axis_ = axis;
  has_range_ = false;  // a range in steps means nothing in seconds
  refresh();
}

void StragglerHeatmap::setXRange(double x0, double x1) {
  if (!std::isfinite(x0) || !std::isfinite(x1)) return;
  if (x1 < x0) std::swap(x0, x1);
  has_range_ = true;
  range_x0_ = x0;
  range_x1_ = x1;
  refresh();
}

void StragglerHeatmap::resetXRange() {
  has_range_ = false;
  refresh();
}

int StragglerHeatmap::columnsFor(int grid_width) const {
  return std::max(1, grid_width / kColumnPixels);
}

void StragglerHeatmap::refresh() {
  double x0 = range_x0_, x1 = range_x1_;
  if (!has_range_) stragglerDataRange(series_, axis_, &x0, &x1);
  // One point (or one step) still deserves a visible column.
  if (x1 <= x0) x1 = x0 + 1;
  grid_ = computeStragglerGrid(series_, axis_, x0, x1, columnsFor(layout().grid.width()));
  if (has_range_) {
    verdict_scope_ = tr("in view");
    verdict_ = stragglerVerdict(series_, axis_, x0, x1, kVerdictColumns);
  } else {
    // Of the last seconds whatever the charts' axis: a host's noise averages out over time, not
    // steps (100 fast steps were 1.5 s, and a different rank read 1.2x every few seconds).
    double t0 = 0, t1 = 0;
    stragglerDataRange(series_, metrics::Axis::kTime, &t0, &t1);
    const bool recent = t1 - t0 > kRecentSeconds;
    if (recent) t0 = t1 - kRecentSeconds;
    verdict_scope_ = recent ? tr("last %1 s").arg(kRecentSeconds) : tr("whole run");
    verdict_ =
        stragglerVerdict(series_, metrics::Axis::kTime, t0, std::max(t1, t0 + 1), kVerdictColumns);
  }
  update();
}

QString StragglerHeatmap::rankName(int rank) const {
  const QString label =
      rank >= 0 && rank < static_cast<int>(labels_.size()) ? labels_[rank] : QString();
  // Labels like "r3 gpu02" repeat the rank: the sentence names it once, the host in brackets.
  QString host = label;
  const QString prefix = QStringLiteral("r%1").arg(rank);
  if (host.startsWith(prefix) && (host.size() == prefix.size() || host[prefix.size()].isSpace()))
    host = host.mid(prefix.size()).trimmed();
  if (host.isEmpty()) return QStringLiteral("rank %1").arg(rank);
  return QStringLiteral("rank %1 (%2)").arg(rank).arg(host);
}

bool StragglerHeatmap::hasStraggler() const {
  return verdict_.rank >= 0 && verdict_.ratio >= kStragglerThreshold;
}

QString StragglerHeatmap::slowestText() const {
  if (verdict_.rank < 0) return tr("no step time reported in this window");
  const QString who = rankName(verdict_.rank);
  const QString ratio = formatRatio(verdict_.ratio);
  if (verdict_.ratio < kStragglerThreshold) {
    return tr("no straggler: slowest is %1 at %2 median step time (%3)")
        .arg(who, ratio, verdict_scope_);
  }
  return tr("slowest: %1 %2 median step time (%3)").arg(who, ratio, verdict_scope_);
}

QString StragglerHeatmap::xRangeText(double a, double b) const {
  if (axis_ == metrics::Axis::kTime) {
    const bool with_ms = b - a < 2.0;
    return QStringLiteral("%1-%2").arg(timeOfDay(a, with_ms), timeOfDay(b, with_ms));
  }
  return tr("steps %1-%2")
      .arg(static_cast<qint64>(std::ceil(a)))
      .arg(static_cast<qint64>(std::floor(b)));
}

QString StragglerHeatmap::cellText(int rank, int column) const {
  if (rank < 0 || rank >= grid_.ranks || column < 0 || column >= grid_.columns) return {};
  const QString where = QStringLiteral("%1, %2").arg(
      rankName(rank), xRangeText(grid_.columnBegin(column), grid_.columnEnd(column)));
  const double mean = grid_.meanAt(rank, column);
  if (std::isnan(mean)) return tr("%1: no step time reported").arg(where);
  const double median = grid_.median[column];
  const double ratio = grid_.at(rank, column);
  if (std::isnan(ratio))
    return tr("%1: %2 (median %3)").arg(where, formatStepTime(mean), formatStepTime(median));
  return tr("%1: %2 median (%3 vs %4)")
      .arg(where, formatRatio(ratio), formatStepTime(mean), formatStepTime(median));
}

StragglerHeatmap::Layout StragglerHeatmap::layout() const {
  Layout l;
  const QFontMetrics fm = fontMetrics();
  const int w = width() - 2 * kMargin;
  const int line = fm.height();
  const int legend_width = fm.horizontalAdvance(tr("step time \u00f7 median")) +
                           fm.horizontalAdvance(QStringLiteral("0.5x")) +
                           fm.horizontalAdvance(QStringLiteral("\u22652x")) + kLegendBarWidth + 24;
  l.header = QRect(kMargin, kMargin, w, line + 8);
  l.legend = QRect(l.header.right() - legend_width + 1, l.header.top(), legend_width, line + 8);

  const int ranks = static_cast<int>(series_.size());
  const int axis_height = line + 8;
  const int top = l.header.bottom() + 5;
  const int avail = height() - top - axis_height - kMargin;
  l.row_height = ranks > 0 ? std::clamp(avail / ranks, minRowHeight(), kMaxRowHeight) : 0;
  if (l.row_height > 0 && l.row_height < line) {
    // Label every 2^k-th rank, so that labels are one text line apart at least.
    const int need = (line + l.row_height - 1) / l.row_height;
    while (l.label_every < need) l.label_every *= 2;
  }
  // Measured in bold: the slowest rank's label is drawn bold.
  QFont bold = font();
  bold.setBold(true);
  const QFontMetrics bold_fm(bold);
  int label_width = 0;
  for (int r = 0; r < ranks; ++r)
    label_width = std::max(label_width, bold_fm.horizontalAdvance(rankName(r)) + 2);
  label_width = std::max(
      std::min(label_width, kMaxLabelWidth),
      fm.horizontalAdvance(axis_ == metrics::Axis::kTime ? tr("time \u2192") : tr("step \u2192")));
  const int labels_width = label_width + kLabelGap;  // text, then room for the slowest-rank marker
  l.labels = QRect(kMargin, top, labels_width, l.row_height * ranks);
  l.grid = QRect(kMargin + labels_width, top, std::max(1, w - labels_width), l.row_height * ranks);
  l.axis = QRect(l.grid.left(), l.grid.bottom() + 1, l.grid.width(), axis_height);
  return l;
}

int StragglerHeatmap::rankAt(const QPoint& pos) const {
  const Layout l = layout();
  if (l.row_height <= 0 || !l.grid.contains(pos)) return -1;
  const int rank = (pos.y() - l.grid.top()) / l.row_height;
  return rank < grid_.ranks ? rank : -1;
}

int StragglerHeatmap::columnAt(const QPoint& pos) const {
  const Layout l = layout();
  if (grid_.columns <= 0 || !l.grid.contains(pos)) return -1;
  const int column = static_cast<int>(static_cast<int64_t>(pos.x() - l.grid.left()) *
                                      grid_.columns / l.grid.width());
  return std::min(column, grid_.columns - 1);
}

int StragglerHeatmap::minRowHeight() const {
  return series_.size() <= kLabelledRanks ? fontMetrics().height() : kMinRowHeight;
}

QSize StragglerHeatmap::sizeHint() const {
  const int line = fontMetrics().height();
  const int ranks = static_cast<int>(series_.size());
  const int row = std::max(minRowHeight(), ranks <= 16 ? line + 2 : 0);
  return {720, 2 * kMargin + line + 13 + std::max(1, ranks) * row + line + 8};
}

QSize StragglerHeatmap::minimumSizeHint() const {
  const int line = fontMetrics().height();
  const int ranks = static_cast<int>(series_.size());
  return {320, 2 * kMargin + line + 13 + std::max(1, ranks) * minRowHeight() + line + 8};
}

void StragglerHeatmap::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  if (columnsFor(layout().grid.width()) != grid_.columns) refresh();
}

void StragglerHeatmap::mousePressEvent(QMouseEvent* event) {
  if (event->button() == Qt::LeftButton) {
    const int rank = rankAt(event->position().toPoint());
    if (rank >= 0) {
      emit rankClicked(rank);
      event->accept();
      return;
    }
  }
  QWidget::mousePressEvent(event);
}

bool StragglerHeatmap::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const QString text = cellText(rankAt(help->pos()), columnAt(help->pos()));
    if (text.isEmpty()) {
      QToolTip::hideText();
      event->ignore();
    } else {
      QToolTip::showText(help->globalPos(), text, this);
    }
    return true;
  }
  return QWidget::event(event);
}

void StragglerHeatmap::paintLegend(QPainter& p, const QRect& r) const {
  const QFontMetrics fm = fontMetrics();
  const int mid = r.center().y();
  int x = r.left();
  p.setPen(palette().color(QPalette::WindowText));
  const QString caption = tr("step time \u00f7 median");
  p.drawText(QRect(x, r.top(), fm.horizontalAdvance(caption), r.height()), Qt::AlignVCenter,
             caption);
  x += fm.horizontalAdvance(caption) + 8;
  const QString lo = QStringLiteral("0.5x"), hi = QStringLiteral("\u22652x");
  p.drawText(QRect(x, r.top(), fm.horizontalAdvance(lo), r.height()), Qt::AlignVCenter, lo);
  x += fm.horizontalAdvance(lo) + 4;
  const QRect bar(x, mid - 5, kLegendBarWidth, 10);
  for (int i = 0; i < bar.width(); ++i) {
    // The bar spans log2 ratio -1 .. +1, like the cells.
    const double ratio = std::pow(2.0, -1.0 + 2.0 * (i + 0.5) / bar.width());
    p.fillRect(QRect(bar.left() + i, bar.top(), 1, bar.height()), stragglerColor(ratio, palette()));
  }
  p.setPen(palette().color(QPalette::Mid));
  p.drawRect(bar.adjusted(0, 0, -1, -1));
  p.setPen(palette().color(QPalette::WindowText));
  p.drawLine(bar.center().x(), bar.top() - 2, bar.center().x(), bar.bottom() + 2);  // 1x
  x = bar.right() + 5;
  p.drawText(QRect(x, r.top(), fm.horizontalAdvance(hi), r.height()), Qt::AlignVCenter, hi);
}

void StragglerHeatmap::paintAxis(QPainter& p, const Layout& l) const {
  const QFontMetrics fm = fontMetrics();
  const double x0 = grid_.x0, x1 = grid_.x1;
  const double span = x1 - x0;
  const QColor text = palette().color(QPalette::WindowText);
  p.setPen(text);
  p.drawText(QRect(l.labels.left(), l.axis.top() + 3, l.labels.width() - kLabelGap, fm.height()),
             Qt::AlignRight | Qt::AlignTop,
             axis_ == metrics::Axis::kTime ? tr("time \u2192") : tr("step \u2192"));
  if (span <= 0 || l.grid.width() <= 1) return;

  const bool time = axis_ == metrics::Axis::kTime;
  double step;
  bool with_seconds = true;
  if (time) {
    static const std::vector<double> kTimeSteps = {
        1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400};
    step = pickTickStep(span, l.grid.width(), fm.horizontalAdvance(QStringLiteral("00:00:00")) + 24,
                        kTimeSteps);
    with_seconds = step < 60;
  } else {
    step = pickTickStep(span, l.grid.width(),
                        fm.horizontalAdvance(QString::number(static_cast<qint64>(x1))) + 24,
                        niceSteps(span));
  }
  // Local-time ticks land on round local minutes and hours.
  const double offset =
      time ? QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(x0 * 1000)).offsetFromUtc() : 0.0;
  double first = std::ceil((x0 + offset) / step) * step - offset;
  for (double v = first; v <= x1 + 1e-9; v += step) {
    const int px = l.grid.left() + static_cast<int>(std::lround((v - x0) / span * l.grid.width()));
    p.setPen(palette().color(QPalette::Mid));
    p.drawLine(px, l.axis.top(), px, l.axis.top() + 3);
    const QString label =
        time ? QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(std::llround(v * 1000)))
                   .toLocalTime()
                   .toString(with_seconds ? QStringLiteral("HH:mm:ss") : QStringLiteral("HH:mm"))
             : QString::number(static_cast<qint64>(std::llround(v)));
    const int tw = fm.horizontalAdvance(label);
    // Keep the first and last labels inside the widget instead of clipping them.
    const int left = std::clamp(px - tw / 2, l.grid.left() - 4, width() - kMargin - tw);
    p.setPen(text);
    p.drawText(QRect(left, l.axis.top() + 3, tw, fm.height()), Qt::AlignLeft | Qt::AlignTop, label);
  }
}

void StragglerHeatmap::paintEvent(QPaintEvent* /*event*/) {
  QPainter p(this);
  const Layout l = layout();
  const QFontMetrics fm = fontMetrics();
  const QColor text = palette().color(QPalette::WindowText);
  const QColor hot = stragglerColor(kStragglerFullScale, palette());
  const bool straggling = hasStraggler();

  // The sentence first: it is what a person reads at a glance.
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.setPen(straggling ? hot.lighter(120) : text);
  const QRect sentence(l.header.left(), l.header.top(), l.legend.left() - l.header.left() - 12,
                       l.header.height());
  p.drawText(sentence, Qt::AlignLeft | Qt::AlignVCenter,
             QFontMetrics(bold).elidedText(slowestText(), Qt::ElideRight, sentence.width()));
  p.setFont(font());
  if (l.legend.left() > l.header.left() + 200) paintLegend(p, l.legend);

  if (grid_.ranks == 0 || grid_.columns == 0 || l.grid.height() <= 0) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect().adjusted(0, l.header.bottom(), 0, 0), Qt::AlignCenter,
               tr("no ranks reporting step time yet"));
    return;
  }

  // Empty (NaN) cells show the base colour behind a transparent pixel.
  p.fillRect(l.grid, palette().color(QPalette::Base));
  QImage image(grid_.columns, grid_.ranks, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::transparent);
  for (int r = 0; r < grid_.ranks; ++r) {
    auto* row = reinterpret_cast<QRgb*>(image.scanLine(r));
    for (int c = 0; c < grid_.columns; ++c) {
      const QColor color = stragglerColor(grid_.at(r, c), palette());
      if (color.isValid()) row[c] = color.rgba();
    }
  }
  p.setRenderHint(QPainter::SmoothPixmapTransform, false);
  p.drawImage(QRectF(l.grid), image);
  if (l.row_height >= 8) {
    // Thin gaps between thick rows keep neighbouring ranks apart.
    p.setPen(palette().color(QPalette::Window));
    for (int r = 1; r < grid_.ranks; ++r) {
      const int y = l.grid.top() + r * l.row_height;
      p.drawLine(l.grid.left(), y, l.grid.right(), y);
    }
  }

  // Rank labels, right-aligned against the grid; the slowest rank always labelled, marked.
  const int slowest = verdict_.rank;
  const int label_right = l.labels.left() + l.labels.width() - kLabelGap;
  auto drawLabel = [&](int r, bool emphasised) {
    const int cy = l.grid.top() + r * l.row_height + l.row_height / 2;
    const QRect box(l.labels.left(), cy - fm.height() / 2, label_right - l.labels.left(),
                    fm.height());
    p.setFont(emphasised ? bold : font());
    p.setPen(emphasised ? hot.lighter(120) : text);
    p.drawText(box, Qt::AlignRight | Qt::AlignVCenter,
               QFontMetrics(p.font()).elidedText(rankName(r), Qt::ElideMiddle, box.width()));
  };
  for (int r = 0; r < grid_.ranks; r += l.label_every) {
    if (straggling && std::abs(r - slowest) * l.row_height < fm.height()) continue;
    drawLabel(r, false);
  }
  if (straggling) {
    drawLabel(slowest, true);
    const int cy = l.grid.top() + slowest * l.row_height + l.row_height / 2;
    QPainterPath marker;
    marker.moveTo(l.grid.left() - 10, cy - 5);
    marker.lineTo(l.grid.left() - 3, cy);
    marker.lineTo(l.grid.left() - 10, cy + 5);
    marker.closeSubpath();
    p.setRenderHint(QPainter::Antialiasing, true);
    p.fillPath(marker, hot);
    p.setRenderHint(QPainter::Antialiasing, false);
    if (l.row_height >= 10) {
      p.setPen(QPen(hot.lighter(130), 1));
      p.setBrush(Qt::NoBrush);
      p.drawRect(QRect(l.grid.left(), l.grid.top() + slowest * l.row_height, l.grid.width() - 1,
                       l.row_height - 1));
    }
  }
  p.setFont(font());
  p.setPen(palette().color(QPalette::Mid));
  p.drawRect(l.grid.adjusted(-1, -1, 0, 0));
  paintAxis(p, l);
}

}  // namespace ringmaster::gui
