#include "charts/palette.h"

#include <gtest/gtest.h>

#include <QChart>
#include <QValueAxis>
#include <cmath>

namespace ringmaster::gui {
namespace {

double luminance(const QColor& c) {
  auto lin = [](double v) { return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
  return 0.2126 * lin(c.redF()) + 0.7152 * lin(c.greenF()) + 0.0722 * lin(c.blueF());
}

// CIE76 distance in Lab: about 2.3 is "just noticeable"; lines need far more.
double labDistance(const QColor& a, const QColor& b) {
  auto lab = [](const QColor& c) {
    auto lin = [](double v) {
      return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
    };
    const double r = lin(c.redF()), g = lin(c.greenF()), bl = lin(c.blueF());
    const double x = (0.4124 * r + 0.3576 * g + 0.1805 * bl) / 0.95047;
    const double y = 0.2126 * r + 0.7152 * g + 0.0722 * bl;
    const double z = (0.0193 * r + 0.1192 * g + 0.9505 * bl) / 1.08883;
    auto f = [](double t) { return t > 0.008856 ? std::cbrt(t) : 7.787 * t + 16.0 / 116; };
    return std::array<double, 3>{116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))};
  };
  const auto p = lab(a), q = lab(b);
  return std::hypot(p[0] - q[0], p[1] - q[1], p[2] - q[2]);
}

TEST(SeriesColor, ThirtyTwoDistinctColoursReadableOnDark) {
  const QColor background("#1e1e1e");
  for (int i = 0; i < 32; ++i) {
    const QColor c = seriesColor(i);
    // WCAG contrast ratio against the dark plot background.
    const double contrast = (luminance(c) + 0.05) / (luminance(background) + 0.05);
    EXPECT_GE(contrast, 4.5) << "colour " << i << " " << c.name().toStdString();
    for (int j = 0; j < i; ++j) {
      EXPECT_GE(labDistance(c, seriesColor(j)), 10)
          << i << " " << c.name().toStdString() << " vs " << j << " "
          << seriesColor(j).name().toStdString();
    }
  }
  // The first eight (a typical job) are far apart from each other.
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < i; ++j) EXPECT_GE(labDistance(seriesColor(i), seriesColor(j)), 25);
  }
  EXPECT_EQ(seriesColor(-4), seriesColor(0));
  EXPECT_NE(seriesColor(32), seriesColor(0));  // past 32 it keeps giving new colours
}

TEST(ApplyChartTheme, TakesColoursFromThePalette) {
  QPalette palette;
  palette.setColor(QPalette::Window, QColor("#202225"));
  palette.setColor(QPalette::Base, QColor("#17181a"));
  palette.setColor(QPalette::WindowText, QColor("#e0e0e0"));
  palette.setColor(QPalette::Text, QColor("#e0e0e0"));
  QChart chart;
  auto* axis = new QValueAxis;
  chart.addAxis(axis, Qt::AlignLeft);
  applyChartTheme(&chart, palette);
  EXPECT_EQ(chart.backgroundBrush().color(), QColor("#202225"));
  EXPECT_EQ(chart.plotAreaBackgroundBrush().color(), QColor("#17181a"));
  EXPECT_EQ(axis->labelsBrush().color(), QColor("#e0e0e0"));
  EXPECT_EQ(chart.titleBrush().color(), QColor("#e0e0e0"));
  // Grid lines sit between the plot background and the text: visible, not loud.
  const QColor grid = axis->gridLineColor();
  EXPECT_GT(grid.lightness(), QColor("#17181a").lightness());
  EXPECT_LT(grid.lightness(), QColor("#e0e0e0").lightness());
}

}  // namespace
}  // namespace ringmaster::gui
