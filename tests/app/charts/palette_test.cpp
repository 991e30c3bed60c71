#include "charts/palette.h"

#include <gtest/gtest.h>

#include <QApplication>
#include <QChart>
#include <QDir>
#include <QFile>
#include <QTableView>
#include <QTemporaryDir>
#include <QValueAxis>
#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "theme.h"

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

TEST(SeriesColor, FortyDistinctColoursReadableOnDarkAndOnLight) {
  for (const bool dark : {true, false}) {
    SCOPED_TRACE(dark ? "dark" : "light");
    const QColor background(dark ? "#1e1e1e" : "#ffffff");
    for (int i = 0; i < 40; ++i) {
      const QColor c = seriesColor(i, dark);
      // WCAG contrast against the plot: 4.5 on the dark one; on white 3 (lines), but 2 for the
      // colour-blind-safe eight, whose orange and sky blue are as light as their design.
      const double y = luminance(c), bg = luminance(background);
      const double contrast = (std::max(y, bg) + 0.05) / (std::min(y, bg) + 0.05);
      EXPECT_GE(contrast, dark    ? 4.5
                          : i < 8 ? 2.0
                                  : 3.0)
          << "colour " << i << " " << c.name().toStdString();
      for (int j = 0; j < i; ++j) {
        EXPECT_GE(labDistance(c, seriesColor(j, dark)), 10)
            << i << " " << c.name().toStdString() << " vs " << j << " "
            << seriesColor(j, dark).name().toStdString();
      }
    }
    // The first eight (a typical job) are far apart from each other.
    for (int i = 0; i < 8; ++i) {
      for (int j = 0; j < i; ++j) {
        EXPECT_GE(labDistance(seriesColor(i, dark), seriesColor(j, dark)), 20) << i << " " << j;
      }
    }
  }
  EXPECT_EQ(seriesColor(-4, true), seriesColor(0, true));
  EXPECT_NE(seriesColor(40, true), seriesColor(8, true));  // it keeps giving new colours
}

// What a protanope or a deuteranope sees (Vienot, Brettel and Mollon 1999, on linear RGB).
QColor simulate(const QColor& c, bool protan) {
  auto lin = [](double v) { return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
  auto gamma = [](double v) {
    v = std::clamp(v, 0.0, 1.0);
    return v <= 0.0031308 ? 12.92 * v : 1.055 * std::pow(v, 1 / 2.4) - 0.055;
  };
  const double r = lin(c.redF()), g = lin(c.greenF()), b = lin(c.blueF());
  const double k = protan ? 0.11238 : 0.29275;
  const double rg = k * r + (1 - k) * g;
  const double bb = (protan ? 0.00401 : -0.02234) * (r - g) + b;
  return QColor::fromRgbF(gamma(rg), gamma(rg), gamma(bb));
}

// The complaint: two ranks' lines that a colour-blind user cannot tell apart. The first
// eight stay apart under protanopia and deuteranopia, in both palettes.
TEST(SeriesColor, TheFirstEightStayApartForColourBlindEyes) {
  for (const bool dark : {true, false}) {
    for (const bool protan : {true, false}) {
      SCOPED_TRACE(std::string(dark ? "dark" : "light") + (protan ? " protan" : " deutan"));
      for (int i = 0; i < 8; ++i) {
        for (int j = 0; j < i; ++j) {
          const QColor a = simulate(seriesColor(i, dark), protan);
          const QColor b = simulate(seriesColor(j, dark), protan);
          EXPECT_GE(labDistance(a, b), i == j + 1 ? 20 : 7)
              << i << " " << seriesColor(i, dark).name().toStdString() << " vs " << j << " "
              << seriesColor(j, dark).name().toStdString();
        }
      }
    }
  }
}

// RINGMASTER_THEME picks the palette for a run; the light one is light, and the lines take the
// light set of colours with it (the app is back in the tests' dark theme afterwards).
TEST(Theme, TheChosenThemeSetsThePaletteAndTheLineColours) {
  auto* app = qobject_cast<QApplication*>(QCoreApplication::instance());
  ASSERT_NE(app, nullptr);
  qputenv("RINGMASTER_THEME", "light");
  EXPECT_EQ(preferredTheme(), Theme::kLight);
  qputenv("RINGMASTER_THEME", "dark");
  EXPECT_EQ(preferredTheme(), Theme::kDark);
  qunsetenv("RINGMASTER_THEME");

  applyTheme(*app, Theme::kLight);
  EXPECT_FALSE(isDark(QApplication::palette()));
  EXPECT_EQ(seriesColor(6), seriesColor(6, /*dark=*/false));
  EXPECT_EQ(seriesColor(6), QColor("#222222"));  // black, where the dark set has vermillion
  applyTheme(*app, Theme::kDark);
  EXPECT_TRUE(isDark(QApplication::palette()));
  EXPECT_EQ(seriesColor(6), seriesColor(6, /*dark=*/true));
}

// "Follow the desktop" outside GNOME, KDE and Xfce: GTK's own setting decides (a light GTK theme
// stayed dark, issue 35).
TEST(Theme, FollowingTheDesktopReadsGtksSetting) {
  const QByteArray desktop = qgetenv("XDG_CURRENT_DESKTOP");
  qunsetenv("XDG_CURRENT_DESKTOP");
  qputenv("GTK_THEME", "Adwaita");
  EXPECT_EQ(desktopTheme(), Theme::kLight);
  qputenv("GTK_THEME", "Adwaita:dark");
  EXPECT_EQ(desktopTheme(), Theme::kDark);
  qunsetenv("GTK_THEME");
  QTemporaryDir config;
  ASSERT_TRUE(QDir().mkpath(config.filePath("gtk-3.0")));
  const QByteArray old_config = qgetenv("XDG_CONFIG_HOME");
  qputenv("XDG_CONFIG_HOME", config.path().toUtf8());
  {
    QFile ini(config.filePath("gtk-3.0/settings.ini"));
    ASSERT_TRUE(ini.open(QIODevice::WriteOnly));
    ini.write("[Settings]\ngtk-theme-name=Adwaita\n");
  }
  EXPECT_EQ(desktopTheme(), Theme::kLight);
  {
    QFile ini(config.filePath("gtk-3.0/settings.ini"));
    ASSERT_TRUE(ini.open(QIODevice::WriteOnly | QIODevice::Truncate));
    ini.write("[Settings]\ngtk-theme-name=Adwaita\ngtk-application-prefer-dark-theme=1\n");
  }
  EXPECT_EQ(desktopTheme(), Theme::kDark);
  if (old_config.isEmpty()) {
    qunsetenv("XDG_CONFIG_HOME");
  } else {
    qputenv("XDG_CONFIG_HOME", old_config);
  }
  if (!desktop.isEmpty()) qputenv("XDG_CURRENT_DESKTOP", desktop);
}

// A widget with a style sheet of its own (the History table's padding) follows a theme change.
TEST(Theme, AWidgetWithAStyleSheetTakesTheNewPalette) {
  auto* app = qobject_cast<QApplication*>(QCoreApplication::instance());
  ASSERT_NE(app, nullptr);
  QTableView table;
  table.setStyleSheet("QTableView::item { padding-left: 6px; }");
  table.ensurePolished();
  applyTheme(*app, Theme::kLight);
  EXPECT_FALSE(isDark(table.palette()));
  applyTheme(*app, Theme::kDark);
  EXPECT_TRUE(isDark(table.palette()));
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
