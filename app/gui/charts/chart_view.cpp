#include "charts/chart_view.h"

#include <QCoreApplication>
#include <QGraphicsScene>
#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

namespace ringmaster::gui {
namespace {

// A press that moves less than this is a click (context menu), not a drag.
constexpr double kDragThresholdPx = 4;
constexpr double kWheelZoomPerNotch = 0.8;

}  // namespace

ChartView::ChartView(QChart* chart, QWidget* parent) : QChartView(chart, parent) {
  setRenderHint(QPainter::Antialiasing, true);
  // One paint of the whole view per update. The default (minimal) mode repaints every item once
  // per small dirty rectangle that the series and axes report, which made one chart of a live
  // dashboard take hundreds of milliseconds to paint.
  setViewportUpdateMode(QGraphicsView::FullViewportUpdate);
  // Every redraw replaces the series' points: a BSP index of the items would be rebuilt each time
  // for lookups a chart of a handful of items does not need.
  scene()->setItemIndexMethod(QGraphicsScene::NoIndex);
  setMouseTracking(true);
  viewport()->setMouseTracking(true);
  setContextMenuPolicy(Qt::PreventContextMenu);  // shown on right release, after a drag test
  setFrameShape(QFrame::NoFrame);
  // Whatever changed in the scene (new points, a restyle, the axes): draw it again once.
  connect(scene(), &QGraphicsScene::changed, this, &ChartView::sceneChanged);
}

void ChartView::sceneChanged() {
  scene_changed_ = true;
  viewport()->update();
}

void ChartView::renderSceneNow() {
  if (!isVisible()) return;  // drawn when it is shown
  // Qt's own news of the changes just made, queued to the scene, first: it would otherwise come
  // after this drawing and have the paint draw the scene again.
  QCoreApplication::sendPostedEvents(scene(), QEvent::MetaCall);
  renderSceneImage();
}

void ChartView::renderSceneImage() {
  const qreal ratio = viewport()->devicePixelRatioF();
  const QSize pixels = viewport()->size() * ratio;
  // With its lines coming in a moment (then sceneChanged() again), the picture stays as it was
  // until then, axes and lines together, and is drawn once instead of twice.
  const bool waiting = callbacks_.linesPending && callbacks_.linesPending();
  if (scene_image_.size() == pixels && (!scene_changed_ || waiting)) return;
  if (scene_image_.size() != pixels) {
    scene_image_ = QPixmap(pixels);
    scene_image_.setDevicePixelRatio(ratio);
  }
  scene_image_.fill(Qt::transparent);
  QPainter image(&scene_image_);
  image.setRenderHints(renderHints());
  drawing_scene_image_ = true;
  render(&image, QRectF(QPointF(0, 0), viewport()->size()), viewport()->rect());
  drawing_scene_image_ = false;
  scene_changed_ = false;
}

void ChartView::paintEvent(QPaintEvent* /*event*/) {
  renderSceneImage();
  QPainter painter(viewport());
  painter.drawPixmap(0, 0, scene_image_);
  painter.setRenderHints(renderHints());
  painter.setTransform(viewportTransform());
  drawForeground(&painter, mapToScene(viewport()->rect()).boundingRect());
}

void ChartView::setCallbacks(Callbacks callbacks) { callbacks_ = std::move(callbacks); }

void ChartView::setPlaceholder(const QString& text) {
  if (text == placeholder_) return;
  placeholder_ = text;
  viewport()->update();
}

void ChartView::setNote(const QString& text) {
  if (text == note_) return;
  note_ = text;
  viewport()->update();
}

QRectF ChartView::plot() const { return chart()->plotArea(); }

QFont ChartView::scaledFont(double scale, bool bold) const {
  QFont f = font();
  f.setPointSizeF(f.pointSizeF() * scale);
  f.setBold(bold);
  return f;
}

void ChartView::mousePressEvent(QMouseEvent* event) {
  const QPointF pos = mapToScene(event->position().toPoint());
  press_pos_ = last_pos_ = pos;
  const bool in_plot = plot().contains(pos);
  if (event->button() == Qt::LeftButton && in_plot) {
    drag_ = (event->modifiers() & Qt::ShiftModifier) ? Drag::kPan : Drag::kZoom;
  } else if (event->button() == Qt::MiddleButton && in_plot) {
    drag_ = Drag::kPan;
  } else if (event->button() == Qt::RightButton) {
    drag_ = Drag::kRightPending;
  } else {
    QChartView::mousePressEvent(event);  // legend markers and the rest of the scene
    return;
  }
  event->accept();
}

void ChartView::mouseMoveEvent(QMouseEvent* event) {
  const QPointF pos = mapToScene(event->position().toPoint());
  if (drag_ == Drag::kRightPending && std::abs(pos.x() - press_pos_.x()) >= kDragThresholdPx) {
    drag_ = Drag::kPan;
  }
  if (drag_ == Drag::kPan) {
    if (callbacks_.panByPixels) callbacks_.panByPixels(pos.x() - last_pos_.x());
  }
  last_pos_ = pos;
  hover_ = plot().contains(pos) && drag_ != Drag::kPan ? std::optional<QPointF>(pos) : std::nullopt;
  if (callbacks_.hovered) {
    callbacks_.hovered(hover_ ? std::optional<double>(hover_->x()) : std::nullopt);
  }
  viewport()->update();
  if (drag_ == Drag::kNone) QChartView::mouseMoveEvent(event);
}

void ChartView::mouseReleaseEvent(QMouseEvent* event) {
  const QPointF pos = mapToScene(event->position().toPoint());
  const Drag drag = std::exchange(drag_, Drag::kNone);
  if (drag == Drag::kZoom) {
    const QRectF p = plot();
    const double a = std::clamp(std::min(press_pos_.x(), pos.x()), p.left(), p.right());
    const double b = std::clamp(std::max(press_pos_.x(), pos.x()), p.left(), p.right());
    if (b - a >= kDragThresholdPx && callbacks_.zoomToPixels) callbacks_.zoomToPixels(a, b);
  } else if (drag == Drag::kRightPending) {
    if (callbacks_.contextMenu) callbacks_.contextMenu(event->globalPosition().toPoint());
  } else if (drag == Drag::kNone) {
    QChartView::mouseReleaseEvent(event);
    return;
  }
  viewport()->update();
  event->accept();
}

void ChartView::mouseDoubleClickEvent(QMouseEvent* event) {
  if (event->button() == Qt::LeftButton && plot().contains(mapToScene(event->pos()))) {
    if (callbacks_.resetZoom) callbacks_.resetZoom();
    event->accept();
    return;
  }
  QChartView::mouseDoubleClickEvent(event);
}

void ChartView::wheelEvent(QWheelEvent* event) {
  const QPointF pos = mapToScene(event->position().toPoint());
  const double notches = event->angleDelta().y() / 120.0;
  if (!plot().contains(pos) || notches == 0 || !callbacks_.zoomAround) {
    QChartView::wheelEvent(event);
    return;
  }
  callbacks_.zoomAround(pos.x(), std::pow(kWheelZoomPerNotch, notches));
  event->accept();
}

void ChartView::leaveEvent(QEvent* event) {
  hover_.reset();
  if (callbacks_.hovered) callbacks_.hovered(std::nullopt);
  viewport()->update();
  QChartView::leaveEvent(event);
}

void ChartView::resizeEvent(QResizeEvent* event) {
  QChartView::resizeEvent(event);
  if (callbacks_.resized) callbacks_.resized();
}

void ChartView::drawForeground(QPainter* painter, const QRectF& rect) {
  QChartView::drawForeground(painter, rect);
  if (drawing_scene_image_) return;
  const QRectF p = plot();
  painter->save();
  if (drag_ == Drag::kZoom) {
    QColor hl = palette().color(QPalette::Highlight);
    const double a = std::clamp(std::min(press_pos_.x(), last_pos_.x()), p.left(), p.right());
    const double b = std::clamp(std::max(press_pos_.x(), last_pos_.x()), p.left(), p.right());
    painter->setPen(QPen(hl, 1));
    hl.setAlpha(60);
    painter->setBrush(hl);
    painter->drawRect(QRectF(a, p.top(), b - a, p.height()));
  }
  drawMarkers(painter, p);
  drawValueFlags(painter, p);
  if (!note_.isEmpty()) {
    painter->setFont(scaledFont(0.85, true));
    painter->setPen(QColor(0xc0, 0x80, 0xff));  // the colour of "unknown"
    painter->drawText(p.adjusted(4, 2, -4, -2), Qt::AlignRight | Qt::AlignTop, note_);
  }
  if (!placeholder_.isEmpty()) {
    painter->setPen(palette().color(QPalette::PlaceholderText));
    QFont f = font();
    f.setPointSizeF(f.pointSizeF() * 1.2);
    painter->setFont(f);
    painter->drawText(p, Qt::AlignCenter, placeholder_);
  } else if (hover_ && drag_ == Drag::kNone) {
    drawReadout(painter, p);
  } else if (echo_ && *echo_ >= p.left() && *echo_ <= p.right()) {
    QColor line = palette().color(QPalette::Text);
    line.setAlpha(90);
    painter->setPen(QPen(line, 1, Qt::DashLine));
    painter->drawLine(QPointF(*echo_, p.top()), QPointF(*echo_, p.bottom()));
  }
  painter->restore();
}

void ChartView::setMarkers(std::vector<Marker> markers) {
  markers_ = std::move(markers);
  viewport()->update();
}

void ChartView::drawMarkers(QPainter* painter, const QRectF& p) {
  const QFont small = scaledFont(0.85, false);
  const QFontMetrics fm(small);
  painter->setFont(small);
  for (const Marker& m : markers_) {
    if (m.px < p.left() || m.px > p.right()) continue;
    QColor line = m.color;
    line.setAlpha(200);
    painter->setPen(QPen(line, 1.5));
    painter->drawLine(QPointF(m.px, p.top()), QPointF(m.px, p.bottom()));
    // The label on a tag at the top, to the right of the line (to its left near the edge).
    const QString text = fm.elidedText(m.label, Qt::ElideRight, static_cast<int>(p.width() / 2));
    QRectF tag(0, p.top() + 2, fm.horizontalAdvance(text) + 8, fm.height() + 2);
    tag.moveLeft(m.px + tag.width() + 2 > p.right() ? m.px - tag.width() - 2 : m.px + 2);
    painter->setPen(Qt::NoPen);
    painter->setBrush(m.color);
    painter->drawRoundedRect(tag, 2, 2);
    painter->setPen(Qt::white);
    painter->drawText(tag, Qt::AlignCenter, text);
  }
}

void ChartView::setEcho(std::optional<double> px) {
  if (px == echo_) return;
  echo_ = px;
  viewport()->update();
}

void ChartView::setValueFlags(std::vector<ValueFlag> flags) {
  flags_ = std::move(flags);
  viewport()->update();
}

void ChartView::drawValueFlags(QPainter* painter, const QRectF& p) {
  const QFont small = scaledFont(0.75, true);
  const QFontMetrics fm(small);
  painter->setFont(small);
  for (const ValueFlag& f : flags_) {
    if (f.px < p.left() - 1 || f.px > p.right() + 1) continue;
    // A pointer at the edge where the value went, under a tag that names it.
    const double tip = f.bottom ? p.bottom() - 1 : p.top() + 1;
    const double base = f.bottom ? tip - 6 : tip + 6;
    const QPointF triangle[3] = {{f.px, tip}, {f.px - 4, base}, {f.px + 4, base}};
    painter->setPen(Qt::NoPen);
    painter->setBrush(f.color);
    painter->drawPolygon(triangle, 3);
    QRectF tag(0, 0, fm.horizontalAdvance(f.text) + 6, fm.height());
    tag.moveCenter(QPointF(f.px, f.bottom ? base - fm.height() / 2.0 : base + fm.height() / 2.0));
    painter->drawRoundedRect(tag, 2, 2);
    painter->setPen(Qt::black);
    painter->drawText(tag, Qt::AlignCenter, f.text);
  }
}

int ChartView::readoutRowsPerColumn(double plot_height, int line_height) {
  constexpr int kPad = 6;  // drawReadout's
  return std::max(1, static_cast<int>((plot_height - 2 * kPad) / std::max(1, line_height)) - 1);
}

void ChartView::drawReadout(QPainter* painter, const QRectF& p) {
  const double x = hover_->x();
  const Readout r = callbacks_.readoutAt ? callbacks_.readoutAt(x) : Readout{};
  QColor line = palette().color(QPalette::Text);
  line.setAlpha(110);
  painter->setPen(QPen(line, 1, Qt::DashLine));
  const double at = std::clamp(r.snap_px.value_or(x), p.left(), p.right());
  painter->drawLine(QPointF(at, p.top()), QPointF(at, p.bottom()));
  if (r.header.isEmpty() && r.rows.empty()) return;

  QFont bold = font();
  bold.setBold(true);
  const QFontMetrics fm(font()), fmb(bold);
  const int pad = 6, swatch = fm.height() / 2 + 2, gap = 6, lh = fm.height();
  // Rows past one column's height go into more columns, as many as the plot's width holds.
  const int per_column = readoutRowsPerColumn(p.height(), lh);
  const int columns_fit = std::max(1, static_cast<int>(p.width() - 2 * pad) / kReadoutColumnWidth);
  const int count = static_cast<int>(r.rows.size());
  const int columns = std::clamp((count + per_column - 1) / per_column, 1, columns_fit);
  const int rows = std::min(count, per_column * columns);
  const int column_rows = std::min(rows, per_column);
  int column_width = 0;
  for (const auto& row : r.rows) {
    // + 4: elidedText() cuts a text whose width only just equals the room it is given.
    column_width = std::max(column_width, swatch + gap + fm.horizontalAdvance(row.text) + 4);
  }
  // A long row (a failure's cause) is cut to the plot's width rather than past the chart's edge.
  const int room = std::max(40, static_cast<int>(p.width()) - 2 * pad - 4);
  column_width = std::min(column_width, room / columns - (columns > 1 ? gap : 0));
  const int width = std::min(
      std::max(fmb.horizontalAdvance(r.header), columns * column_width + (columns - 1) * gap),
      room);
  const int text_width = column_width - swatch - gap;
  QRectF box(0, 0, width + 2 * pad, (column_rows + 1) * lh + 2 * pad);
  // Beside the cursor, flipped to its left near the right edge, always inside the plot.
  double left = x + 12;
  if (left + box.width() > p.right()) left = x - 12 - box.width();
  left = std::max(left, p.left());
  double top = std::clamp(hover_->y() - box.height() / 2, p.top() + 2,
                          std::max(p.top() + 2, p.bottom() - box.height() - 2));
  box.moveTo(left, top);

  QColor bg = palette().color(QPalette::ToolTipBase);
  bg.setAlpha(235);
  painter->setPen(QPen(palette().color(QPalette::Mid), 1));
  painter->setBrush(bg);
  painter->drawRoundedRect(box, 3, 3);
  painter->setPen(palette().color(QPalette::ToolTipText));
  painter->setFont(bold);
  double y = box.top() + pad;
  painter->drawText(QRectF(box.left() + pad, y, width, lh), Qt::AlignVCenter | Qt::AlignLeft,
                    r.header);
  painter->setFont(font());
  for (int i = 0; i < rows; ++i) {  // down the first column, then the next
    const double row_y = y + (i % per_column + 1) * lh;
    const double left = box.left() + pad + (i / per_column) * (column_width + gap);
    const auto& row = r.rows[i];
    if (row.color.isValid()) {
      painter->fillRect(QRectF(left, row_y + (lh - swatch) / 2.0, swatch, swatch), row.color);
    }
    painter->setPen(palette().color(QPalette::ToolTipText));
    painter->drawText(QRectF(left + swatch + gap, row_y, text_width, lh),
                      Qt::AlignVCenter | Qt::AlignLeft,
                      fm.elidedText(row.text, Qt::ElideRight, text_width));
  }
}

}  // namespace ringmaster::gui
