#include "charts/palette.h"

#include <QAbstractAxis>
#include <QChart>
#include <QGuiApplication>
#include <QLegend>
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

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

// Okabe and Ito's colour-blind-safe palette, in orders whose neighbours differ most under
// protanopia and deuteranopia (checked by simulation in palette_test). On the dark plot its black
// becomes a light grey and its blue and vermillion are lifted; on white its yellow, too light to
// read, gives way to black.
constexpr QRgb kColourBlindSafeDark[] = {0xe69f00, 0x56b4e9, 0x009e73, 0xf0e442,
                                         0x0072b2, 0xdddddd, 0xd55e00, 0xcc79a7};
constexpr QRgb kColourBlindSafeLight[] = {0xe69f00, 0x56b4e9, 0x009e73, 0x0072b2,
                                          0xd55e00, 0xcc79a7, 0x222222, 0x999999};
constexpr int kColourBlindSafeCount = 8;
// Colours made once per palette: the eight above, then the hue walk's colours that are not too
// close to one already taken. Past these, the hue walk goes on unchecked.
constexpr int kCheckedColours = 40;
constexpr double kMinLabDistance = 10;

// Lifts a colour's HSL lightness until it reads on a dark plot (WCAG contrast >= 4.5 against
// #1e1e1e needs a luminance of about 0.23), or lowers it until it reads on a white one (3:1, as
// for lines: 0.30 at most). The hue stays.
QColor readable(QColor c, bool dark) {
  float h, s, l;
  c.getHslF(&h, &s, &l);
  for (int i = 0; i < 100; ++i) {
    const double y = relativeLuminance(c);
    if (dark ? y >= 0.26 : y <= 0.28) break;
    l = std::clamp(l + (dark ? 0.01f : -0.01f), 0.0f, 1.0f);
    c = QColor::fromHslF(h < 0 ? 0 : h, s, l);
  }
  return c;
}

// CIE76 distance in Lab.
double labDistance(const QColor& a, const QColor& b) {
  auto lab = [](const QColor& c) {
    const double r = linear(c.redF()), g = linear(c.greenF()), bl = linear(c.blueF());
    const double x = (0.4124 * r + 0.3576 * g + 0.1805 * bl) / 0.95047;
    const double y = 0.2126 * r + 0.7152 * g + 0.0722 * bl;
    const double z = (0.0193 * r + 0.1192 * g + 0.9505 * bl) / 1.08883;
    auto f = [](double t) { return t > 0.008856 ? std::cbrt(t) : 7.787 * t + 16.0 / 116; };
    return std::array<double, 3>{116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))};
  };
  const auto p = lab(a), q = lab(b);
  return std::hypot(p[0] - q[0], p[1] - q[1], p[2] - q[2]);
}

// Past the first eight: 16 hues, each bright and pale, neighbours in index far apart in hue.
QColor hueWalkColor(int index, bool dark) {
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
  if (dark) return c;
  // On white: the pale round darker than the bright one, so that the two stay apart.
  return readable(pale ? blend(c, QColor(Qt::black), 0.35) : c, false);
}

std::vector<QColor> checkedColours(bool dark) {
  std::vector<QColor> out;
  for (QRgb rgb : dark ? kColourBlindSafeDark : kColourBlindSafeLight) {
    out.push_back(dark ? readable(QColor(rgb), true) : QColor(rgb));
  }
  for (int walk = 0; static_cast<int>(out.size()) < kCheckedColours && walk < 4096; ++walk) {
    const QColor candidate = hueWalkColor(walk, dark);
    const bool apart = std::all_of(out.begin(), out.end(), [&](const QColor& taken) {
      return labDistance(candidate, taken) >= kMinLabDistance;
    });
    if (apart) out.push_back(candidate);
  }
  return out;
}

}  // namespace

QColor seriesColor(int index, bool dark) {
  // Each palette's table is made when first asked for (a few ms), on the GUI thread.
  auto table = [](bool for_dark) -> const std::vector<QColor>& {
    if (for_dark) {
      static const std::vector<QColor> dark_colours = checkedColours(true);
      return dark_colours;
    }
    static const std::vector<QColor> light_colours = checkedColours(false);
    return light_colours;
  };
  const std::vector<QColor>& colours = table(dark);
  if (index < 0) index = 0;
  if (index < static_cast<int>(colours.size())) return colours[static_cast<size_t>(index)];
  return hueWalkColor(index - kColourBlindSafeCount, dark);
}

QColor seriesColor(int index) {
  const bool dark = !qApp || QGuiApplication::palette().color(QPalette::Base).lightness() < 128;
  return seriesColor(index, dark);
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
