#include "charts/palette.h"

#include <QAbstractAxis>
#include <QChart>
#include <QLegend>
#include <cmath>

namespace ringmaster::gui {
namespace {

constexpr int kHues = 16;
// 7 is coprime with 16, so consecutive indices jump ~158 degrees and the first 16 cover all hues.
constexpr int kHueStride = 7;

QColor blend(const QColor& a, const QColor& b, double t) {
  return QColor::fromRgbF(a.redF() * (1 - t) + b.redF() * t, a.greenF() * (1 - t) + b.greenF() * t,
                          a.blueF() * (1 - t) + b.blueF() * t);
}

double linear(double v) { return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); }

double relativeLuminance(const QColor& c) {
  return 0.2126 * linear(c.redF()) + 0.7152 * linear(c.greenF()) + 0.0722 * linear(c.blueF());
}

}  // namespace

QColor seriesColor(int index) {
  if (index < 0) index = 0;
  const int hue_slot = (index * kHueStride) % kHues;
  const int round = index / kHues;
  const bool pale = round % 2 == 1;
  const double shift = (round / 2) * (360.0 / kHues / 2);  // past 32: between the earlier hues
  const double hue = std::fmod(hue_slot * (360.0 / kHues) + shift, 360.0);
  const double saturation = pale ? 0.75 : 0.85;
  // Red, blue and violet look dark at the HSL lightness that suits yellow: lift each hue until
  // its luminance reads on a dark plot (WCAG contrast >= 4.5 against #1e1e1e needs about 0.23).
  const double min_luminance = pale ? 0.45 : 0.26;
  QColor c;
  for (double lightness = pale ? 0.74 : 0.56; lightness <= 0.95; lightness += 0.01) {
    c = QColor::fromHslF(static_cast<float>(hue / 360.0), static_cast<float>(saturation),
                         static_cast<float>(lightness));
    if (relativeLuminance(c) >= min_luminance) break;
  }
  return c;
}

void applyChartTheme(QChart* chart, const QPalette& palette) {
  const QColor window = palette.color(QPalette::Window);
  const QColor base = palette.color(QPalette::Base);
  const QColor text = palette.color(QPalette::WindowText);
  const QColor grid = blend(base, palette.color(QPalette::Text), 0.18);
  const QColor minor = blend(base, palette.color(QPalette::Text), 0.08);

  chart->setBackgroundBrush(window);
  chart->setBackgroundPen(Qt::NoPen);
  chart->setBackgroundRoundness(0);
  chart->setPlotAreaBackgroundBrush(base);
  chart->setPlotAreaBackgroundPen(QPen(grid));
  chart->setPlotAreaBackgroundVisible(true);
  chart->setTitleBrush(text);
  chart->legend()->setLabelColor(text);
  chart->legend()->setBrush(Qt::NoBrush);
  chart->legend()->setPen(Qt::NoPen);
  for (QAbstractAxis* axis : chart->axes()) {
    axis->setLabelsColor(text);
    axis->setTitleBrush(text);
    axis->setLinePenColor(grid);
    axis->setGridLineColor(grid);
    axis->setMinorGridLineColor(minor);
    axis->setShadesVisible(false);
  }
}

}  // namespace ringmaster::gui
