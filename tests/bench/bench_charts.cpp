// Redraw time of the app's chart path (MetricChart: per-pixel min/max from metrics::Series, then
// Qt Charts renders) against handing the same points to a plain QLineSeries, for 10^3 .. 10^7
// points, in an 800x400 chart rendered offscreen. Runs with no arguments; prints one RESULT line.
#include <QApplication>
#include <QChart>
#include <QChartView>
#include <QLineSeries>
#include <QPixmap>
#include <QValueAxis>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "charts/metric_chart.h"
#include "charts/palette.h"
#include "ringmaster/metrics/series.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kWidth = 800, kHeight = 400;

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

ringmaster::metrics::Series makeSeries(size_t n) {
  std::mt19937_64 rng(1234);
  std::normal_distribution<double> noise(0, 0.05);
  ringmaster::metrics::Series s;
  for (size_t i = 0; i < n; ++i) {
    const double v = 0.3 + 2.0 * std::exp(-4.0 * i / n) + noise(rng);
    s.append(static_cast<double>(i), 1.7e9 + i * 0.01, v);
  }
  return s;
}

// refresh() (decimation + hand-off to Qt Charts) and a full render of the widget.
double timeMetricChart(const ringmaster::metrics::Series& s, int runs, double* refresh_only_ms) {
  ringmaster::gui::MetricChart chart("loss");
  chart.resize(kWidth, kHeight);
  chart.show();
  chart.setLines({{"rank 0", ringmaster::gui::seriesColor(0), &s}});
  QApplication::processEvents();
  chart.refresh();
  chart.grab();  // warm-up: fonts, glyph caches
  std::vector<double> redraw, refresh;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = Clock::now();
    chart.refresh();
    refresh.push_back(msSince(t0));
    const QPixmap pixmap = chart.grab();
    redraw.push_back(msSince(t0));
    if (pixmap.isNull()) std::fprintf(stderr, "grab failed\n");
  }
  *refresh_only_ms = median(refresh);
  return median(redraw);
}

// Every point into a QLineSeries, then the same render.
double timeQLineSeries(const ringmaster::metrics::Series& s, int runs) {
  QList<QPointF> points;
  points.reserve(static_cast<qsizetype>(s.size()));
  for (size_t i = 0; i < s.size(); ++i) points.append(QPointF(s.at(i).step, s.at(i).value));
  auto* chart = new QChart;
  auto* series = new QLineSeries;
  chart->addSeries(series);
  auto* x = new QValueAxis;
  auto* y = new QValueAxis;
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  series->attachAxis(x);
  series->attachAxis(y);
  x->setRange(0, static_cast<double>(s.size() - 1));
  y->setRange(0, 3);
  QChartView view(chart);
  view.setRenderHint(QPainter::Antialiasing, true);
  view.resize(kWidth, kHeight);
  view.show();
  QApplication::processEvents();
  std::vector<double> times;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = Clock::now();
    series->replace(points);
    const QPixmap pixmap = view.grab();
    times.push_back(msSince(t0));
    if (pixmap.isNull()) std::fprintf(stderr, "grab failed\n");
  }
  return median(times);
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);

  std::string result = "RESULT";
  std::string qline;
  double redraw_1e6 = 0, qline_1e6 = 0;
  const char* names[] = {"1e3", "1e4", "1e5", "1e6", "1e7"};
  size_t n = 1000;
  for (int k = 0; k < 5; ++k, n *= 10) {
    const auto s = makeSeries(n);
    double refresh_ms = 0;
    const double redraw = timeMetricChart(s, 7, &refresh_ms);
    char buf[128];
    std::snprintf(buf, sizeof buf, " redraw_ms_%s=%.2f", names[k], redraw);
    result += buf;
    std::fprintf(stderr, "%s points: MetricChart refresh %.2f ms, refresh+render %.2f ms\n",
                 names[k], refresh_ms, redraw);
    if (k == 4) {
      std::snprintf(buf, sizeof buf, " refresh_ms_1e7=%.2f", refresh_ms);
      result += buf;
    }
    if (n <= 1'000'000) {
      const double q = timeQLineSeries(s, n >= 1'000'000 ? 3 : 5);
      std::snprintf(buf, sizeof buf, " qlineseries_ms_%s=%.2f", names[k], q);
      qline += buf;
      std::fprintf(stderr, "%s points: plain QLineSeries %.2f ms\n", names[k], q);
      if (n == 1'000'000) {
        redraw_1e6 = redraw;
        qline_1e6 = q;
      }
    }
  }
  char ratio[64];
  std::snprintf(ratio, sizeof ratio, " ratio_1e6=%.1f", qline_1e6 / redraw_1e6);
  std::printf("%s%s%s\n", result.c_str(), qline.c_str(), ratio);
  return 0;
}
