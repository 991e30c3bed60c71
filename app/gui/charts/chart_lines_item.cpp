#include "charts/chart_lines_item.h"

#include <QChart>
#include <QElapsedTimer>
#include <QPaintDevice>
#include <QPainter>
#include <algorithm>
#include <atomic>
#include <cmath>

#include "charts/chart_drawing_thread.h"

namespace ringmaster::gui {
namespace {

// Qt Charts draws its series at this z (ChartPresenter::SeriesZValue): over grid and axes.
constexpr qreal kSeriesZ = 5;

}  // namespace

struct ChartLinesItem::Inbox {
  ChartLinesItem* item = nullptr;
  std::atomic<uint64_t> latest{0};  // a frame older than this need not be drawn
};

ChartLinesItem::ChartLinesItem(QChart* chart, std::function<void()> drawn)
    : QGraphicsItem(chart),
      chart_(chart),
      drawn_callback_(std::move(drawn)),
      inbox_(std::make_shared<Inbox>()) {
  inbox_->item = this;
  setZValue(kSeriesZ);
  setAcceptedMouseButtons(Qt::NoButton);  // the view's zoom, pan and hover see every event
}

ChartLinesItem::~ChartLinesItem() = default;  // drawings under way find the inbox gone

int ChartLinesItem::drawingsInFlight() { return ChartDrawingThread::get().inFlight(); }

void ChartLinesItem::setRanges(double x0, double x1, double y0, double y1) {
  x0_ = x0;
  x1_ = x1;
  y0_ = y0;
  y1_ = y1;
}

qsizetype ChartLinesItem::points() const {
  qsizetype n = 0;
  for (const Line& line : lines_) {
    n += line.raw.size() + line.smoothed.size() + line.upper.size() + line.lower.size();
  }
  return n;
}

void ChartLinesItem::changed() {
  const QRectF plot = chart_->plotArea();
  if (plot != plot_) {
    prepareGeometryChange();
    plot_ = plot;
  }
  inbox_->latest = ++generation_;
  in_background_ = points() >= kBackgroundFromPoints && !plot_.isEmpty();
  if (in_background_) {
    // Made here, drawn there, adopted here: the frame, and the image, cross in the job.
    auto drawn = std::make_shared<std::shared_ptr<const Drawn>>();
    const std::weak_ptr<Inbox> weak = inbox_;  // the item may go meanwhile
    const uint64_t generation = generation_;
    ChartDrawingThread::get().submit(
        {.wanted =
             [weak, generation] {
               const std::shared_ptr<Inbox> inbox = weak.lock();
               return inbox && inbox->latest == generation;
             },
         .work = [frame = Frame{lines_, mapping(), pixel_ratio_}, drawn] { *drawn = draw(frame); },
         .done =
             [weak, generation, drawn] {
               if (std::shared_ptr<Inbox> inbox = weak.lock(); inbox && *drawn) {
                 inbox->item->adopt(generation, *drawn);
               }
             }});
  } else {
    shown_.reset();
  }
  update();
}

void ChartLinesItem::adopt(uint64_t generation, std::shared_ptr<const Drawn> drawn) {
  if (!in_background_ || generation <= shown_generation_) return;
  last_drawing_ms_ = drawn->ms;
  shown_ = std::move(drawn);
  shown_generation_ = generation;
  update();
  if (drawn_callback_) drawn_callback_();
}

void ChartLinesItem::drawNow() {
  if (!in_background_ || shown_generation_ == generation_) return;
  shown_ = draw(Frame{lines_, mapping(), pixel_ratio_});
  shown_generation_ = generation_;
  update();
}

QRectF ChartLinesItem::boundingRect() const { return plot_; }

std::shared_ptr<const ChartLinesItem::Drawn> ChartLinesItem::draw(const Frame& frame) {
  QElapsedTimer clock;
  clock.start();
  auto drawn = std::make_shared<Drawn>();
  drawn->mapping = frame.mapping;
  drawn->at = frame.mapping.plot.toAlignedRect();
  drawn->image = QImage(QSize(static_cast<int>(std::ceil(drawn->at.width() * frame.pixel_ratio)),
                              static_cast<int>(std::ceil(drawn->at.height() * frame.pixel_ratio))),
                        QImage::Format_ARGB32_Premultiplied);
  drawn->image.setDevicePixelRatio(frame.pixel_ratio);
  drawn->image.fill(Qt::transparent);
  QPainter painter(&drawn->image);
  painter.setRenderHint(QPainter::Antialiasing, true);
  painter.translate(-drawn->at.topLeft());
  drawLines(painter, frame.lines, frame.mapping);
  painter.end();
  drawn->ms = static_cast<double>(clock.nsecsElapsed()) / 1e6;
  return drawn;
}

void ChartLinesItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* /*option*/,
                           QWidget* /*widget*/) {
  const Mapping now = mapping();
  if (!now.valid()) return;
  const qreal ratio = painter->device() ? painter->device()->devicePixelRatioF() : 1;
  if (!in_background_) {
    pixel_ratio_ = ratio;
    drawLines(*painter, lines_, now);
    return;
  }
  if (ratio != pixel_ratio_) {  // drawn for another screen: again, for this one
    pixel_ratio_ = ratio;
    changed();
  }
  if (!shown_ || !shown_->mapping.valid()) return;
  // The last image where its ranges lie in today's plot and ranges: the lines stay put under a
  // zoom or a pan until their new drawing is back, and are exact when nothing has moved.
  const Mapping& then = shown_->mapping;
  const QRectF at(shown_->at);
  const QRectF target(now.toPixel(then.toValue(at.topLeft())),
                      now.toPixel(then.toValue(at.bottomRight())));
  painter->save();
  painter->setClipRect(now.plot);
  painter->drawImage(target, shown_->image);
  painter->restore();
}

void ChartLinesItem::drawLines(QPainter& painter, const std::vector<Line>& lines,
                               const Mapping& m) {
  if (!m.valid()) return;
  const auto toPixels = [&](const QPolygonF& values) {
    QPolygonF pixels(values.size());
    for (qsizetype i = 0; i < values.size(); ++i) pixels[i] = m.toPixel(values[i]);
    return pixels;
  };
  painter.save();
  painter.setClipRect(m.plot);
  painter.setPen(Qt::NoPen);
  for (const Line& line : lines) {
    if (line.upper.isEmpty() || line.lower.isEmpty()) continue;
    QPolygonF area = toPixels(line.upper);
    const QPolygonF lower = toPixels(line.lower);
    std::copy(lower.rbegin(), lower.rend(), std::back_inserter(area));
    painter.setBrush(line.band_brush);
    painter.drawPolygon(area);
  }
  const auto draw = [&](const QPolygonF& values, const QPen& pen) {
    if (values.isEmpty()) return;
    const QPolygonF pixels = toPixels(values);
    if (pixels.size() == 1) {  // a short run's single evaluation: nothing to join
      const double radius = std::max(2.5, pen.widthF() * 2);
      painter.setPen(Qt::NoPen);
      painter.setBrush(pen.color());
      painter.drawEllipse(pixels.front(), radius, radius);
      return;
    }
    painter.setPen(pen);
    painter.setBrush(Qt::NoBrush);
    // A hairline (the faint raw lines under smoothed ones) goes to the cosmetic stroker whole. A
    // wider line a segment at a time, as Qt Charts draws it: as one polyline it is stroked whole,
    // joins and all, into a polygon that crosses itself at every column's min and max (the GUI
    // thread at 97% of a core for an 8-rank dashboard); each short segment fills fast.
    if (pen.widthF() <= 1) {
      painter.drawPolyline(pixels);
    } else {
      for (qsizetype i = 1; i < pixels.size(); ++i) painter.drawLine(pixels[i - 1], pixels[i]);
    }
  };
  for (const Line& line : lines) draw(line.raw, line.raw_pen);
  for (const Line& line : lines) draw(line.smoothed, line.smoothed_pen);
  painter.restore();
}

}  // namespace ringmaster::gui
