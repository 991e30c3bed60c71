#include "charts/metric_chart.h"

#include <gtest/gtest.h>

#include <QApplication>
#include <QCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFontMetrics>
#include <QImage>
#include <QLineSeries>
#include <QMouseEvent>
#include <QValueAxis>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include "charts/palette.h"
#include "charts_drawn.h"
#include "qt_wait.h"

namespace ringmaster::gui {
namespace {

using metrics::Axis;
using metrics::Series;

QString screenshotPath(const QString& name) {
  const QString dir = QStringLiteral(RM_BIN_DIR "/../screenshots");
  QDir().mkpath(dir);
  return dir + "/" + name;
}

Series lossSeries(size_t n, int rank, uint32_t seed, double t0 = 1.7e9) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 0.08);
  std::uniform_real_distribution<double> unit(0, 1);
  Series s;
  for (size_t i = 0; i < n; ++i) {
    const double progress = static_cast<double>(i) / n;
    double v = 0.35 + 2.0 * std::exp(-5 * progress) + 0.02 * rank + noise(rng);
    if (unit(rng) < 3e-5) v += 1.5;
    s.append(static_cast<double>(i), t0 + i * 0.25 + rank * 0.01, v);
  }
  return s;
}

class MetricChartTest : public testing::Test {
 protected:
  std::unique_ptr<MetricChart> makeChart(const QString& title, int w = 800, int h = 400) {
    auto chart = std::make_unique<MetricChart>(title);
    chart->resize(w, h);
    chart->show();
    QApplication::processEvents();
    return chart;
  }
  static QRectF plotArea(MetricChart* chart) {
    return chart->findChild<QChartView*>()->chart()->plotArea();
  }
};

TEST_F(MetricChartTest, HandsQtChartsPerColumnMinMaxEqualToBruteForce) {
  const Series s = lossSeries(1'000'000, 0, 42);
  auto chart = makeChart("loss");
  chart->setLines({{"rank 0", seriesColor(0), &s}});
  chart->refresh();

  const auto [x0, x1] = chart->xRange();
  EXPECT_EQ(x0, 0);
  EXPECT_EQ(x1, 999'999);
  const int width = chart->plotColumns();
  EXPECT_NEAR(width, plotArea(chart.get()).width(), 1.0);  // one column per pixel
  EXPECT_GT(width, 600);

  // What Qt Charts holds, grouped by column, against a scan of all 10^6 points.
  const QList<QPointF> drawn = chart->drawnLine(0).raw;
  EXPECT_EQ(chart->drawnPointCount(), drawn.size());
  EXPECT_LE(drawn.size(), 2 * width);
  auto columnOf = [&](double x) {
    const int c = static_cast<int>(std::floor((x - x0) / (x1 - x0) * width));
    return std::clamp(c, 0, width - 1);
  };
  std::vector<double> want_min(width, INFINITY), want_max(width, -INFINITY);
  std::vector<double> got_min(width, INFINITY), got_max(width, -INFINITY);
  for (size_t i = 0; i < s.size(); ++i) {
    const int c = columnOf(s.x(i, Axis::kStep));
    want_min[c] = std::min(want_min[c], s.at(i).value);
    want_max[c] = std::max(want_max[c], s.at(i).value);
  }
  for (const QPointF& p : drawn) {
    const int c = columnOf(p.x());
    got_min[c] = std::min(got_min[c], p.y());
    got_max[c] = std::max(got_max[c], p.y());
  }
  // floor() here and the series' own column edges may disagree for a point sitting exactly on
  // an edge; decimate_test checks edges exactly, so allow a handful of those here.
  int mismatches = 0;
  for (int c = 0; c < width; ++c) {
    if (got_min[c] != want_min[c] || got_max[c] != want_max[c]) ++mismatches;
  }
  EXPECT_LE(mismatches, 4);
  EXPECT_EQ(*std::max_element(got_max.begin(), got_max.end()),
            *std::max_element(want_max.begin(), want_max.end()));
  EXPECT_EQ(*std::min_element(got_min.begin(), got_min.end()),
            *std::min_element(want_min.begin(), want_min.end()));
  // The view the chart keeps is the decimation of the same request.
  const LineView expected = decimateForView(s, {Axis::kStep, x0, x1, width, 0});
  ASSERT_EQ(expected.raw.size(), static_cast<size_t>(drawn.size()));
  for (qsizetype i = 0; i < drawn.size(); ++i) {
    ASSERT_EQ(drawn[i].x(), expected.raw[i].x);
    ASSERT_EQ(drawn[i].y(), expected.raw[i].y);
  }
}

TEST_F(MetricChartTest, ZoomedToASmallRangeDrawsTheExactPoints) {
  const Series s = lossSeries(1'000'000, 0, 7);
  auto chart = makeChart("loss");
  chart->setLines({{"rank 0", QColor(), &s}});
  chart->setXRange(250'000, 250'300);
  EXPECT_TRUE(chart->isZoomed());
  EXPECT_EQ(chart->xRange(), std::make_pair(250'000.0, 250'300.0));
  EXPECT_TRUE(chart->lineView(0).exact);
  const QList<QPointF> drawn = chart->drawnLine(0).raw;
  ASSERT_EQ(drawn.size(), 301 + 2);  // the range, and one neighbour each side
  EXPECT_EQ(chart->drawnPointCount(), 303);
  for (int k = 0; k < drawn.size(); ++k) {
    EXPECT_EQ(drawn[k].x(), 249'999.0 + k);
    EXPECT_EQ(drawn[k].y(), s.at(249'999 + k).value);
  }
}

TEST_F(MetricChartTest, FollowsTheDataUnlessZoomed) {
  Series s;
  for (int i = 0; i < 100; ++i) s.append(i, i, i);
  auto chart = makeChart("loss");
  chart->setLines({{"rank 0", QColor(), &s}});
  EXPECT_EQ(chart->xRange().second, 99);
  for (int i = 100; i < 500; ++i) s.append(i, i, i);
  chart->refresh();
  EXPECT_EQ(chart->xRange().second, 499);  // auto-scrolls as points arrive

  chart->setXRange(10, 20);
  for (int i = 500; i < 600; ++i) s.append(i, i, i);
  chart->refresh();
  EXPECT_EQ(chart->xRange(), std::make_pair(10.0, 20.0));  // a zoom holds still
  Series other;
  other.append(0, 0, 1);
  chart->setLines({{"a", QColor(), &s}, {"b", QColor(), &other}});
  EXPECT_EQ(chart->xRange(), std::make_pair(10.0, 20.0));  // setLines keeps the zoom
  chart->resetZoom();
  EXPECT_FALSE(chart->isZoomed());
  EXPECT_EQ(chart->xRange().second, 599);
}

TEST_F(MetricChartTest, YRangeFitsTheVisibleData) {
  Series s;
  for (int i = 0; i < 1000; ++i) s.append(i, i, i < 500 ? 10.0 + i % 3 : 100.0 + i % 7);
  auto chart = makeChart("loss");
  chart->setLines({{"rank 0", QColor(), &s}});
  auto* view = chart->findChild<QChartView*>();
  auto* y = qobject_cast<QValueAxis*>(view->chart()->axes(Qt::Vertical).at(0));
  ASSERT_NE(y, nullptr);
  EXPECT_LT(y->min(), 10);
  EXPECT_GT(y->max(), 106);
  chart->setXRange(0, 400);  // only the low part is visible
  EXPECT_LT(y->min(), 10);
  EXPECT_GT(y->max(), 12);
  EXPECT_LT(y->max(), 13);
}

// A loss falling over four decades: on a log axis, labels on round values (0.001 ... 10, with
// 2 and 5 between when the height allows); values <= 0 cannot be drawn there, and the axis title
// says how many were left out; the hover still names real values.
TEST_F(MetricChartTest, ALogAxisShowsRoundValuesAndSaysWhatItCannotDraw) {
  Series s;
  for (int i = 0; i < 400; ++i) s.append(i, i, 10.0 * std::pow(10.0, -i / 100.0));  // 10 .. 1e-3
  s.append(400, 400, 0.0);
  s.append(401, 401, -0.5);
  auto chart = makeChart("loss");
  chart->setLines({{"rank 0", QColor(), &s}});
  chart->setYScale(MetricChart::YScale::kLog);
  QCategoryAxis* y = nullptr;  // the one shown
  for (QAbstractAxis* axis : chart->findChild<QChartView*>()->chart()->axes(Qt::Vertical)) {
    if (axis->isVisible()) y = qobject_cast<QCategoryAxis*>(axis);
  }
  ASSERT_NE(y, nullptr);
  EXPECT_NEAR(y->min(), -3.2, 0.02);  // log10 of 1e-3 and of 10, a twentieth to spare
  EXPECT_NEAR(y->max(), 1.2, 0.02);
  const QStringList labels = y->categoriesLabels();
  EXPECT_TRUE(labels.contains("0.001") && labels.contains("0.01") && labels.contains("0.1") &&
              labels.contains("1") && labels.contains("10"))
      << labels.join(" ").toStdString();
  EXPECT_EQ(y->endValue("0.1"), -1);
  EXPECT_EQ(chart->yTitle(), QString::fromUtf8("log · 2 point(s) \u2264 0 not drawn"));
  // Every drawn point is the log of a positive value.
  for (const QPointF& p : chart->drawnLine(0).raw) {
    EXPECT_GE(p.y(), -3.01);
    EXPECT_LE(p.y(), 1.01);
  }
  const QString hover = chart->readoutAt(chart->xToPixel(200)).rows.back().text;
  EXPECT_TRUE(hover.contains("0.1")) << hover.toStdString();  // 10 * 10^-2, not log10's -1
  EXPECT_FALSE(hover.contains("-1")) << hover.toStdString();
  // A loss from 2.3 to 0.3 fills the height, 0.5, 1 and 2 labelled (not the decades 0.1 to 10).
  Series falling;
  for (int i = 0; i < 100; ++i) falling.append(i, i, 2.3 * std::pow(0.3 / 2.3, i / 99.0));
  chart->setLines({{"rank 0", QColor(), &falling}});
  EXPECT_GT(y->min(), std::log10(0.25));
  EXPECT_LT(y->max(), std::log10(2.6));
  for (const char* label : {"0.5", "1", "2"}) {
    EXPECT_TRUE(y->categoriesLabels().contains(label))
        << y->categoriesLabels().join(" ").toStdString();
  }
  ASSERT_TRUE(chart->saveImage(screenshotPath("metric_chart_log_loss.png")));
  chart->setYScale(MetricChart::YScale::kLinear);
  EXPECT_EQ(chart->yTitle(), "");
  EXPECT_LT(chart->yRange().first, 0.3);
  EXPECT_FALSE(y->isVisible());
}

TEST_F(MetricChartTest, IncludeZeroAndAManualRangeOverrideTheAutoscale) {
  Series s;
  for (int i = 0; i < 100; ++i) s.append(i, i, 5.0 + (i % 10) * 0.1);  // 5.0 .. 5.9
  auto chart = makeChart("throughput");
  chart->setLines({{"rank 0", QColor(), &s}});
  EXPECT_GT(chart->yRange().first, 4);
  chart->setIncludeZero(true);
  EXPECT_LE(chart->yRange().first, 0);
  EXPECT_GT(chart->yRange().second, 5.9);
  chart->setYRange(std::make_pair(5.2, 5.5));
  EXPECT_EQ(chart->yRange(), std::make_pair(5.2, 5.5));
  EXPECT_EQ(chart->yTitle(), "fixed range");
  chart->setYRange(std::nullopt);
  EXPECT_LE(chart->yRange().first, 0);  // include zero again
}

// A 1000x spike on one rank flattens every curve; clipped, the range is the curves', and a rank
// that diverged for good (all its values 50x the others) is still in range.
TEST_F(MetricChartTest, ClippingOutliersDropsSpikesButNeverAWholeLine) {
  std::vector<Series> ranks(8);
  for (int r = 0; r < 8; ++r) {
    for (int i = 0; i < 400; ++i) ranks[r].append(i, i, 1.0 + 0.001 * i + 0.01 * r);
  }
  Series spiky;
  for (int i = 0; i < 400; ++i) spiky.append(i, i, i == 200 ? 1000.0 : 1.2);
  Series diverged;
  for (int i = 0; i < 400; ++i) diverged.append(i, i, 50.0 + 0.01 * i);
  std::vector<ChartLine> lines;
  for (int r = 0; r < 8; ++r) lines.push_back({QString("rank %1").arg(r), QColor(), &ranks[r]});
  lines.push_back({"spiky", QColor(), &spiky});
  auto chart = makeChart("loss");
  chart->setLines(lines);
  EXPECT_GT(chart->yRange().second, 1000);
  chart->setClipOutliers(true);
  EXPECT_LT(chart->yRange().second, 2);
  EXPECT_GT(chart->yRange().second, 1.4);  // every rank's values, 1.0 .. 1.47
  EXPECT_LT(chart->yRange().first, 1.0);
  EXPECT_EQ(chart->yTitle(), "1 outlier clipped");

  lines.push_back({"diverged", QColor(), &diverged});
  chart->setLines(lines);
  EXPECT_GT(chart->yRange().second, 50);  // its median (52) at least
  EXPECT_LT(chart->yRange().second, 1000);

  // A log axis or a range of the user's own is not clipped.
  chart->setYScale(MetricChart::YScale::kLog);
  EXPECT_EQ(chart->yTitle(), "log");
  chart->setYScale(MetricChart::YScale::kLinear);
  chart->setClipOutliers(false);
  EXPECT_GT(chart->yRange().second, 1000);
  EXPECT_EQ(chart->yTitle(), "");
}

// Two runs compared, one shorter: hovering past its end says it has no data there rather than
// leaving it out.
TEST_F(MetricChartTest, TheReadoutSaysWhichLinesHaveNoDataThere) {
  Series long_run, short_run;
  for (int i = 0; i < 200; ++i) long_run.append(i, i, 1.0);
  for (int i = 0; i < 50; ++i) short_run.append(i, i, 2.0);
  auto chart = makeChart("loss");
  chart->setLines({{"run-a", QColor(), &long_run}, {"run-b", QColor(), &short_run}});
  const ChartView::Readout late = chart->readoutAt(chart->xToPixel(150));
  ASSERT_FALSE(late.rows.empty());
  EXPECT_EQ(late.rows.back().text, "no data here: run-b");
  const ChartView::Readout early = chart->readoutAt(chart->xToPixel(20));
  for (const auto& row : early.rows) EXPECT_FALSE(row.text.startsWith("no data"));
}

// A line with a band: the band is drawn behind it, decimated like a line, and in the y range.
TEST_F(MetricChartTest, ABandIsDrawnAndKeptInTheYRange) {
  Series mean, low, high;
  for (int i = 0; i < 100000; ++i) {
    mean.append(i, i, 1.0);
    low.append(i, i, 0.5);
    high.append(i, i, i == 50000 ? 9.0 : 1.5);  // one rank's spike, inside the band
  }
  auto chart = makeChart("loss");
  ChartLine line{"mean of 8 ranks", QColor(), &mean};
  line.band_low = &low;
  line.band_high = &high;
  chart->setLines({line});
  EXPECT_GT(chart->drawnBandPointCount(), 100);
  EXPECT_LT(chart->drawnBandPointCount(), 4 * chart->plotColumns() + 8);  // decimated
  EXPECT_GE(chart->yRange().second, 9.0);  // the spike in the band is in view
  EXPECT_LE(chart->yRange().first, 0.5);
  chart->setLines({{"mean", QColor(), &mean}});
  EXPECT_EQ(chart->drawnBandPointCount(), 0);
}

// Another chart's moment, echoed: on a time axis at that time, on a step axis at the step the
// lines had reached then; and a step chart says which time its x is.
TEST_F(MetricChartTest, AnEchoStandsAtTheSameMomentOnStepAndTimeAxes) {
  Series s;
  for (int i = 0; i < 1000; ++i) s.append(i, 1000.0 + 2.0 * i, 1.0 / (i + 1));  // a step each 2 s
  auto steps = makeChart("loss");
  steps->setLines({{"rank 0", QColor(), &s}});
  auto times = makeChart("GPU utilization %");
  times->setXAxis(Axis::kTime);
  times->setLines({{"gpu01", QColor(), &s}});
  EXPECT_EQ(steps->timeAtX(250), 1500.0);
  EXPECT_EQ(times->timeAtX(1500.0), 1500.0);
  constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  steps->showEcho(kNone, 1500.0);  // a health chart's moment
  ASSERT_TRUE(steps->echoPixel());
  EXPECT_NEAR(*steps->echoPixel(), steps->xToPixel(250), 0.5);
  steps->showEcho(300, 1500.0);  // another step chart's step, whatever this one had by then
  EXPECT_NEAR(*steps->echoPixel(), steps->xToPixel(300), 0.5);
  times->showEcho(300, 1500.0);
  ASSERT_TRUE(times->echoPixel());
  EXPECT_NEAR(*times->echoPixel(), times->xToPixel(1500.0), 0.5);
  times->showEcho(kNone, kNone);
  EXPECT_FALSE(times->echoPixel());
}

// The scene is drawn from an image between its changes: new points still reach the screen.
TEST_F(MetricChartTest, NewPointsReachTheImageAfterARefresh) {
  Series s;
  for (int i = 0; i < 100; ++i) s.append(i, i, 1.0);
  auto chart = makeChart("loss");
  chart->setLines({{"rank 0", QColor(255, 0, 0), &s}});
  auto red_pixels = [&] {
    QApplication::processEvents();
    const QImage image = chart->grab().toImage();
    int red = 0;
    for (int y = 0; y < image.height(); ++y) {
      for (int x = image.width() * 3 / 4; x < image.width(); ++x) {
        const QColor c = image.pixelColor(x, y);
        red += c.red() > 200 && c.green() < 80 && c.blue() < 80;
      }
    }
    return red;
  };
  chart->setXRange(0, 200);  // the right quarter empty
  const int before = red_pixels();
  for (int i = 100; i < 200; ++i) s.append(i, i, 1.0);
  chart->refresh();
  EXPECT_GT(red_pixels(), before + 50);
}

// Eight lines of 4,000 points: drawn by the drawing thread, not in the paint, and shown once
// back; a saved image does not wait for it.
TEST_F(MetricChartTest, ManyPointsAreDrawnOffTheGuiThreadAndShownOnceBack) {
  std::vector<Series> ranks;
  for (int r = 0; r < 8; ++r) ranks.push_back(lossSeries(4000, r, 10 + r));
  auto chart = makeChart("loss");
  std::vector<ChartLine> lines;
  for (int r = 0; r < 8; ++r)
    lines.push_back({QString("rank %1").arg(r), QColor(255, 0, 0), &ranks[r]});
  chart->setLines(lines);
  ASSERT_TRUE(chartsDrawn());
  const auto red_pixels = [](const QImage& image) {
    int red = 0;
    for (int y = 0; y < image.height(); ++y) {
      for (int x = 0; x < image.width(); ++x) {
        const QColor c = image.pixelColor(x, y);
        red += c.red() > 200 && c.green() < 80 && c.blue() < 80;
      }
    }
    return red;
  };
  const int drawn = red_pixels(chart->grab().toImage());
  EXPECT_GT(drawn, 2000);
  // A zoom: a drawing goes to the thread, and the image shown meanwhile is the last one moved to
  // where its ranges now lie (still red where the lines are), until the new one is back.
  chart->setXRange(0, 2000);
  EXPECT_GE(ChartLinesItem::drawingsInFlight(), 1);
  ASSERT_TRUE(chartsDrawn());
  EXPECT_GT(red_pixels(chart->grab().toImage()), 2000);
  // A saved image has the newest lines, drawing or not.
  chart->setXRange(3000, 4000);
  const QString path = screenshotPath("metric_chart_many_points_saved.png");
  ASSERT_TRUE(chart->saveImage(path));
  EXPECT_GT(red_pixels(QImage(path)), 2000);
  ASSERT_TRUE(chartsDrawn());
}

TEST_F(MetricChartTest, SetXRangeDoesNotEmitButUserZoomAndPanDo) {
  const Series s = lossSeries(10'000, 0, 1);
  auto chart = makeChart("loss");
  chart->setLines({{"rank 0", QColor(), &s}});
  std::vector<std::pair<double, double>> emitted;
  int resets = 0;
  QObject::connect(chart.get(), &MetricChart::xRangeChanged,
                   [&](double a, double b) { emitted.emplace_back(a, b); });
  QObject::connect(chart.get(), &MetricChart::zoomReset, [&] { ++resets; });

  chart->setXRange(100, 200);
  EXPECT_TRUE(emitted.empty());

  // A rubber-band drag over the middle half of the plot.
  chart->resetZoom();
  auto* view = chart->findChild<QChartView*>();
  QWidget* vp = view->viewport();
  const QRectF plot = plotArea(chart.get());
  const QPointF a(plot.left() + plot.width() * 0.25, plot.center().y());
  const QPointF b(plot.left() + plot.width() * 0.75, plot.center().y());
  QMouseEvent press(QEvent::MouseButtonPress, a, vp->mapToGlobal(a), Qt::LeftButton, Qt::LeftButton,
                    Qt::NoModifier);
  QMouseEvent move(QEvent::MouseMove, b, vp->mapToGlobal(b), Qt::NoButton, Qt::LeftButton,
                   Qt::NoModifier);
  QMouseEvent release(QEvent::MouseButtonRelease, b, vp->mapToGlobal(b), Qt::LeftButton,
                      Qt::NoButton, Qt::NoModifier);
  QApplication::sendEvent(vp, &press);
  QApplication::sendEvent(vp, &move);
  QApplication::sendEvent(vp, &release);
  ASSERT_EQ(emitted.size(), 1u);
  EXPECT_NEAR(emitted[0].first, 9999 * 0.25, 9999 * 0.01);
  EXPECT_NEAR(emitted[0].second, 9999 * 0.75, 9999 * 0.01);
  EXPECT_EQ(chart->xRange(), emitted[0]);
  EXPECT_TRUE(chart->isZoomed());

  // Wheel zoom in around the centre keeps the centre.
  const double centre_before = (chart->xRange().first + chart->xRange().second) / 2;
  const QPointF mid = plot.center();
  QWheelEvent wheel(mid, vp->mapToGlobal(mid), QPoint(), QPoint(0, 120), Qt::NoButton,
                    Qt::NoModifier, Qt::NoScrollPhase, false);
  QApplication::sendEvent(vp, &wheel);
  ASSERT_EQ(emitted.size(), 2u);
  EXPECT_LT(emitted[1].second - emitted[1].first, emitted[0].second - emitted[0].first);
  EXPECT_NEAR((emitted[1].first + emitted[1].second) / 2, centre_before, 9999 * 0.01);

  // Shift+drag pans: content follows the mouse, so dragging right shows earlier steps.
  const auto before = chart->xRange();
  const QPointF c(plot.center().x() + 100, plot.center().y());
  QMouseEvent pan_press(QEvent::MouseButtonPress, mid, vp->mapToGlobal(mid), Qt::LeftButton,
                        Qt::LeftButton, Qt::ShiftModifier);
  QMouseEvent pan_move(QEvent::MouseMove, c, vp->mapToGlobal(c), Qt::NoButton, Qt::LeftButton,
                       Qt::ShiftModifier);
  QMouseEvent pan_release(QEvent::MouseButtonRelease, c, vp->mapToGlobal(c), Qt::LeftButton,
                          Qt::NoButton, Qt::ShiftModifier);
  QApplication::sendEvent(vp, &pan_press);
  QApplication::sendEvent(vp, &pan_move);
  QApplication::sendEvent(vp, &pan_release);
  ASSERT_EQ(emitted.size(), 3u);
  EXPECT_LT(chart->xRange().first, before.first);
  EXPECT_NEAR(chart->xRange().second - chart->xRange().first, before.second - before.first,
              1e-6 * before.second);

  // Double-click resets and says so (linked charts follow the data again too).
  QMouseEvent dbl(QEvent::MouseButtonDblClick, mid, vp->mapToGlobal(mid), Qt::LeftButton,
                  Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(vp, &dbl);
  EXPECT_EQ(resets, 1);
  EXPECT_FALSE(chart->isZoomed());
  EXPECT_EQ(chart->xRange(), std::make_pair(0.0, 9999.0));
}

TEST_F(MetricChartTest, WheelZoomOutPastTheDataFollowsItAgain) {
  const Series s = lossSeries(1000, 0, 1);
  auto chart = makeChart("loss");
  chart->setLines({{"rank 0", QColor(), &s}});
  chart->setXRange(400, 600);
  int resets = 0;
  QObject::connect(chart.get(), &MetricChart::zoomReset, [&] { ++resets; });
  QWidget* vp = chart->findChild<QChartView*>()->viewport();
  const QPointF mid = plotArea(chart.get()).center();
  QWheelEvent wheel(mid, vp->mapToGlobal(mid), QPoint(), QPoint(0, -120 * 10), Qt::NoButton,
                    Qt::NoModifier, Qt::NoScrollPhase, false);
  QApplication::sendEvent(vp, &wheel);
  EXPECT_FALSE(chart->isZoomed());
  EXPECT_EQ(resets, 1);
}

TEST_F(MetricChartTest, HiddenLinesAreNotDrawnNorExported) {
  Series a, b;
  for (int i = 0; i < 10; ++i) {
    a.append(i, 100 + i, i * 0.5);
    b.append(i, 100 + i, 7);
  }
  auto chart = makeChart("loss");
  chart->setLines({{"rank 0", QColor(), &a}, {"rank, \"one\"", QColor(), &b}});
  EXPECT_EQ(chart->drawnPointCount(), 20);
  chart->setXRange(2, 4);
  const QString path = screenshotPath("metric_chart_export.csv");
  ASSERT_TRUE(chart->exportCsv(path));
  QFile f(path);
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  const QString csv = QString::fromUtf8(f.readAll());
  EXPECT_EQ(csv,
            "label,rank,step,time,value,smoothed\n"
            "rank 0,,2,102,1,\nrank 0,,3,103,1.5,\nrank 0,,4,104,2,\n"
            "\"rank, \"\"one\"\"\",,2,102,7,\n\"rank, \"\"one\"\"\",,3,103,7,\n"
            "\"rank, \"\"one\"\"\",,4,104,7,\n");
  chart->setLineVisible(1, false);
  EXPECT_TRUE(chart->lineView(1).raw.empty());
  EXPECT_TRUE(chart->drawnLine(1).raw.isEmpty());
  ASSERT_TRUE(chart->exportCsv(path));
  f.close();
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  EXPECT_EQ(QString::fromUtf8(f.readAll()).count('\n'), 4);
  EXPECT_FALSE(chart->exportCsv("/nonexistent-dir/x.csv"));
}

// Issue 35: the export had neither the rank nor the smoothed line a person was looking at.
TEST_F(MetricChartTest, ExportedRowsCarryTheirRankAndTheSmoothedValueShown) {
  Series a;
  for (int i = 0; i < 10; ++i) a.append(i, 100 + i, i * 0.5);
  auto chart = makeChart("loss");
  ChartLine line{"rank 3", QColor(), &a};
  line.rank = 3;
  chart->setLines({line});
  chart->setSmoothing(0.5);
  chart->setXRange(2, 4);
  const QString path = screenshotPath("metric_chart_export_smoothed.csv");
  ASSERT_TRUE(chart->exportCsv(path));
  QFile f(path);
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  // EMA 0.5, debiased, from the first exported point: 1, (0.25 + 0.75) / 0.75, 1.5 / 0.875.
  EXPECT_EQ(QString::fromUtf8(f.readAll()),
            "label,rank,step,time,value,smoothed\n"
            "rank 3,3,2,102,1,1\nrank 3,3,3,103,1.5,1.3333333333333333\n"
            "rank 3,3,4,104,2,1.7142857142857142\n");
}

TEST_F(MetricChartTest, SaveImageWritesAPng) {
  const Series s = lossSeries(5000, 0, 9);
  auto chart = makeChart("loss", 640, 360);
  chart->setLines({{"rank 0", QColor(), &s}});
  const QString path = screenshotPath("metric_chart_save.png");
  QFile::remove(path);
  ASSERT_TRUE(chart->saveImage(path));
  QImage img(path);
  ASSERT_FALSE(img.isNull());
  EXPECT_EQ(img.format() == QImage::Format_Invalid, false);
  EXPECT_GE(img.width(), 640);
  // Themed: the plot area is the palette's Base, not Qt Charts' white.
  const QPoint inside = plotArea(chart.get()).center().toPoint();
  const QColor px = img.pixelColor(inside * img.devicePixelRatio());
  EXPECT_LT(px.lightness(), 100) << px.name().toStdString();
  EXPECT_FALSE(chart->saveImage("/nonexistent-dir/x.png"));
}

TEST_F(MetricChartTest, TimeAxisUsesWallClockSeconds) {
  const Series s = lossSeries(100'000, 0, 5);
  auto chart = makeChart("loss");
  chart->setLines({{"rank 0", QColor(), &s}});
  chart->setXRange(10, 20);
  chart->setXAxis(Axis::kTime);  // resets zoom
  EXPECT_FALSE(chart->isZoomed());
  EXPECT_EQ(chart->xRange().first, s.minX(Axis::kTime));
  EXPECT_EQ(chart->xRange().second, s.maxX(Axis::kTime));
  const QList<QPointF> drawn = chart->drawnLine(0).raw;
  ASSERT_FALSE(drawn.isEmpty());
  EXPECT_EQ(drawn.front().x(), s.minX(Axis::kTime));
  // Labels on round local times.
  auto* x_axis = qobject_cast<QCategoryAxis*>(
      chart->findChild<QChartView*>()->chart()->axes(Qt::Horizontal).at(0));
  ASSERT_NE(x_axis, nullptr);
  ASSERT_GE(x_axis->count(), 3);
  for (const QString& label : x_axis->categoriesLabels()) {
    EXPECT_TRUE(label.endsWith(":00") || label.endsWith(":30")) << label.toStdString();
  }
  QApplication::processEvents();
  chart->grab().save(screenshotPath("metric_chart_time.png"));
}

// A failure at step 47, the job resumed from its step-40 checkpoint: the marker stands at the step
// the lines had reached when it failed, on the time axis at its time, and is drawn across the plot.
TEST_F(MetricChartTest, AFailureMarkerStandsWhereTheLinesWereWhenItHappened) {
  const double t0 = 1.7e9;
  Series s;
  for (int step = 0; step <= 47; ++step) s.append(step, t0 + step, 2.0 - step * 0.01);
  for (int step = 40; step <= 100; ++step) s.append(step, t0 + 50 + step, 2.0 - step * 0.01);
  auto chart = makeChart("loss", 800, 400);
  chart->setLines({{"rank 0", QColor(Qt::cyan), &s}});
  auto failedAt = [](double time, double step = std::numeric_limits<double>::quiet_NaN()) {
    return ChartMarker{time, step, "attempt 1 failed", "rank 2 on a2 was killed by signal 9",
                       QColor(0xff, 0x30, 0x30)};
  };
  chart->setMarkers({failedAt(t0 + 47.5)});
  ASSERT_EQ(chart->markers().size(), 1u);
  EXPECT_EQ(chart->markerX(chart->markers()[0]), 47.0);
  chart->setMarkers({failedAt(t0 - 10)});
  EXPECT_EQ(chart->markerX(chart->markers()[0]), 0.0);  // before the first step: at the start
  chart->setMarkers({failedAt(t0 + 47.5, 45)});         // the job's step, given by the dashboard
  EXPECT_EQ(chart->markerX(chart->markers()[0]), 45.0);

  chart->setMarkers({failedAt(t0 + 47.5)});
  chart->refresh();
  QApplication::processEvents();
  const QRectF plot = plotArea(chart.get());
  const auto [x0, x1] = chart->xRange();
  const int px = static_cast<int>(std::lround(plot.left() + (47 - x0) / (x1 - x0) * plot.width()));
  const QImage image = chart->grab().toImage();
  const qreal dpr = image.devicePixelRatio();
  bool found = false;  // the marker's red in the plot's lower half, within a pixel of its place
  for (int dx = -1; dx <= 1 && !found; ++dx) {
    const QColor c = image.pixelColor(
        QPoint(px + dx, static_cast<int>(plot.bottom() - plot.height() / 4)) * dpr);
    found = c.red() > 150 && c.green() < 110 && c.blue() < 110;
  }
  EXPECT_TRUE(found) << "no marker line at x=" << px;
  image.save(screenshotPath("metric_chart_failure_marker.png"));

  chart->setXAxis(Axis::kTime);
  EXPECT_EQ(chart->markerX(chart->markers()[0]), t0 + 47.5);
  chart->setMarkers({});
  EXPECT_TRUE(chart->markers().empty());
}

// Issue 21: a NaN or infinite loss is never drawn as 0 nor skipped silently: it is a tag in the
// line's colour where it happened, and the y range stays that of the finite values.
TEST_F(MetricChartTest, NaNAndInfinitiesAreTaggedWhereTheyHappened) {
  Series s;
  for (int step = 0; step <= 100; ++step) {
    const double v = step == 60 ? NAN : step == 80 ? INFINITY : 2.0 - step * 0.01;
    s.append(step, 1.7e9 + step, v);
  }
  auto chart = makeChart("loss", 800, 400);
  const QColor orange(0xff, 0x99, 0x00);
  chart->setLines({{"rank 0", orange, &s}});
  chart->refresh();
  QApplication::processEvents();
  const LineView& view = chart->lineView(0);
  ASSERT_EQ(view.non_finite.size(), 2u);
  EXPECT_EQ(view.non_finite[0].x, 60);
  EXPECT_TRUE(std::isnan(view.non_finite[0].value));
  EXPECT_EQ(view.non_finite[1].x, 80);
  EXPECT_LE(view.y_max, 2.0);
  EXPECT_GE(view.y_min, 0.9);
  // The NaN's tag, in the line's colour, at the top of the plot above step 60.
  const QRectF plot = plotArea(chart.get());
  const auto [x0, x1] = chart->xRange();
  const int px = static_cast<int>(std::lround(plot.left() + (60 - x0) / (x1 - x0) * plot.width()));
  const QImage image = chart->grab().toImage();
  const qreal dpr = image.devicePixelRatio();
  bool tagged = false;
  for (int dy = 1; dy <= 8 && !tagged; ++dy) {
    const QColor c = image.pixelColor(QPoint(px, static_cast<int>(plot.top()) + dy) * dpr);
    tagged = c.red() > 200 && c.green() > 120 && c.green() < 190 && c.blue() < 80;
  }
  EXPECT_TRUE(tagged) << "no NaN tag above x=" << px;
  image.save(screenshotPath("metric_chart_nan.png"));
}

// Regression: a constant loss (every value 1.0) with smoothing on hung the GUI thread. The EMA
// differs from 1.0 in its last bits, the y range became 1e-16 wide, and Qt Charts looped for
// ever making tick labels that could not step (in the app: a line zigzagging across the height).
TEST_F(MetricChartTest, AConstantSeriesWithSmoothingGetsAUsableRange) {
  Series a, b;
  for (int step = 1; step <= 15; ++step) {
    a.append(step, 1.7e9 + step, 1.0);
    b.append(step, 1.7e9 + step, 1.0);
  }
  auto chart = makeChart("loss", 800, 400);
  chart->setLines({{"rank 0", QColor(Qt::red), &a}, {"rank 1", QColor(Qt::green), &b}});
  chart->setSmoothing(0.6);  // refreshes; hung here
  QApplication::processEvents();
  auto* axis =
      qobject_cast<QValueAxis*>(chart->findChild<QChartView*>()->chart()->axes(Qt::Vertical).at(0));
  ASSERT_NE(axis, nullptr);
  EXPECT_NEAR(axis->min(), 0.9, 1e-9);
  EXPECT_NEAR(axis->max(), 1.1, 1e-9);
  chart->grab().save(screenshotPath("metric_chart_constant.png"));
}

// Issue 35: a short run's single evaluation was not drawn (a line of one point draws nothing).
TEST_F(MetricChartTest, ALineOfOnePointIsDrawnAsADot) {
  Series one, many;
  one.append(100, 1.7e9 + 100, 0.83);
  for (int step = 1; step <= 5; ++step) many.append(step * 40, 1.7e9 + step, 0.8 + step * 0.01);
  auto chart = makeChart("accuracy", 800, 400);
  chart->setLines({{"run a", QColor(Qt::red), &one}, {"run b", QColor(Qt::green), &many}});
  chart->setSmoothing(0.6);
  QApplication::processEvents();
  EXPECT_EQ(chart->drawnLine(0).raw.size(), 1);  // drawn as a dot
  EXPECT_EQ(chart->drawnLine(0).smoothed.size(), 1);
  EXPECT_EQ(chart->drawnLine(1).raw.size(), 5);
  const QImage image = chart->grab().toImage();
  image.save(screenshotPath("metric_chart_one_point.png"));
  int red = 0;  // the dot's pixels: run b is green
  for (int y = 0; y < image.height(); ++y) {
    for (int x = 0; x < image.width(); ++x) {
      const QColor c = image.pixelColor(x, y);
      red += c.red() > 200 && c.green() < 80 && c.blue() < 80;
    }
  }
  EXPECT_GE(red, 12);
  one.append(200, 1.7e9 + 200, 0.85);  // a second evaluation: a line again
  chart->refresh();
  EXPECT_EQ(chart->drawnLine(0).raw.size(), 2);
}

// Issue 35: the job total's white was hard to tell from rank 5's light grey on a dark palette.
TEST_F(MetricChartTest, ABoldLineIsDrawnTwiceAsWide) {
  Series a, b;
  for (int step = 1; step <= 5; ++step) {
    a.append(step, 1.7e9 + step, 1.0 + step);
    b.append(step, 1.7e9 + step, 8.0 + step);
  }
  auto chart = makeChart("samples/s", 800, 400);
  ChartLine total{"job total", QColor(Qt::white), &b};
  total.bold = true;
  chart->setLines({{"rank 5", QColor(0xdddddd), &a}, total});
  EXPECT_DOUBLE_EQ(chart->drawnLine(1).raw_pen.widthF(), 2 * chart->drawnLine(0).raw_pen.widthF());
  chart->setSmoothing(0.6);
  QApplication::processEvents();
  EXPECT_DOUBLE_EQ(chart->drawnLine(1).smoothed_pen.widthF(),
                   2 * chart->drawnLine(0).smoothed_pen.widthF() - 0.6);
}

// What a dragged smoothing slider does to each chart of a dashboard: the value at once, the redraw
// on a later turn of the event loop (one chart per turn), and nothing for an unchanged value.
TEST_F(MetricChartTest, SmoothingSoonRedrawsOnALaterTurn) {
  Series a;
  for (int step = 1; step <= 1000; ++step) a.append(step, 1.7e9 + step, 1.0 + (step % 7) * 0.1);
  auto chart = makeChart("loss", 800, 400);
  chart->setLines({{"rank 0", QColor(Qt::red), &a}});
  ASSERT_TRUE(chart->lineView(0).smoothed.empty());  // smoothing off
  chart->setSmoothingSoon(0.9);
  EXPECT_EQ(chart->smoothing(), 0.9);
  EXPECT_TRUE(chart->lineView(0).smoothed.empty()) << "redrawn at once, not on its turn";
  EXPECT_NEAR(chart->drawnLine(0).raw_pen.color().alphaF(), 1.0, 0.01);  // restyled later too
  for (int i = 0; i < 100 && chart->lineView(0).smoothed.empty(); ++i) {
    QApplication::processEvents(QEventLoop::AllEvents, 10);
  }
  EXPECT_FALSE(chart->lineView(0).smoothed.empty());
  EXPECT_NEAR(chart->drawnLine(0).raw_pen.color().alphaF(), 0.25, 0.01);  // raw faint now
  chart->setSmoothingSoon(0.9);  // unchanged: nothing to do
  EXPECT_EQ(chart->smoothing(), 0.9);
}

// A live job's new points: each chart is redrawn on a turn of its own, paced so that redraws of new
// data leave the GUI thread time for everything else; a chart waiting there that a person then
// touches (refreshSoon) moves up and is drawn once.
TEST_F(MetricChartTest, NewDataIsDrawnOnPacedTurnsAndATouchedChartMovesUp) {
  std::vector<Series> data(4);
  std::vector<std::unique_ptr<MetricChart>> charts;
  for (size_t c = 0; c < data.size(); ++c) {
    for (int step = 1; step <= 100; ++step) data[c].append(step, 1.7e9 + step, 1.0 + c);
    charts.push_back(makeChart(QString("metric %1").arg(c), 600, 300));
    charts[c]->setLines({{"rank 0", QColor(Qt::red), &data[c]}});
    charts[c]->refresh();
    ASSERT_EQ(charts[c]->xRange().second, 100.0);
    for (int step = 101; step <= 200; ++step) data[c].append(step, 1.7e9 + step, 1.0 + c);
    charts[c]->refreshLater();
    charts[c]->refreshLater();  // once queued, asking again changes nothing
  }
  charts[3]->refreshSoon();  // the chart a person touched meanwhile
  auto drawn = [&](size_t c) { return charts[c]->xRange().second == 200.0; };
  EXPECT_TRUE(waitFor([&] { return drawn(3); }, 5000)) << "the touched chart";
  EXPECT_TRUE(waitFor([&] { return drawn(0) && drawn(1) && drawn(2); }, 5000));
}

// Issue 22: the header named the cursor's step with the neighbouring point's value.
TEST_F(MetricChartTest, HoverSnapsToTheNearestRealPointAndNamesItsStepAndTime) {
  Series a, b;
  for (int step = 0; step <= 50; step += 2) a.append(step, 1.7e9 + step, step * 0.01);
  for (int step = 1; step <= 49; step += 2) b.append(step, 1.7e9 + step, 1 + step * 0.01);
  auto chart = makeChart("loss", 800, 400);
  chart->setLines({{"rank 0", QColor(Qt::red), &a}, {"rank 1", QColor(Qt::blue), &b}});
  // Just left of step 40, nearer to it than to 39: rank 0's point at 40 is the nearest.
  const ChartView::Readout r = chart->readoutAt(chart->xToPixel(39.8));
  const QString time =
      QDateTime::fromSecsSinceEpoch(static_cast<qint64>(1.7e9 + 40)).toString("hh:mm:ss");
  EXPECT_EQ(r.header, "step 40 · " + time);
  ASSERT_TRUE(r.snap_px.has_value());
  EXPECT_NEAR(*r.snap_px, chart->xToPixel(40), 1e-6);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].text, "rank 0  0.4000");
  EXPECT_EQ(r.rows[1].text, "rank 1  1.390  (step 39)");  // its own nearest point, named
}

TEST_F(MetricChartTest, HoverOverADecimatedSpikeNamesTheColumnsExtremes) {
  Series s;
  for (int step = 0; step < 1'000'000; ++step) {
    s.append(step, 1.7e9 + step * 0.01, step == 500'000 ? 10.0 : 1.0);
  }
  auto chart = makeChart("loss", 800, 400);
  chart->setLines({{"rank 0", QColor(Qt::red), &s}});
  ASSERT_FALSE(chart->lineView(0).exact);
  const ChartView::Readout r = chart->readoutAt(chart->xToPixel(500'000));
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].text, "rank 0  max 10.00 · min 1.000") << r.rows[0].text.toStdString();
  EXPECT_TRUE(r.header.startsWith("steps ")) << r.header.toStdString();
  EXPECT_TRUE(r.header.contains("–")) << "a column's range: " << r.header.toStdString();
  EXPECT_FALSE(r.snap_px.has_value());
  // Beside the spike, a column of ones.
  const ChartView::Readout flat = chart->readoutAt(chart->xToPixel(250'000));
  EXPECT_EQ(flat.rows[0].text, "rank 0  max 1.000 · min 1.000");
}

TEST_F(MetricChartTest, ManyRanksInAShortChartKeepTheExtremesInsideThePlot) {
  std::vector<Series> ranks(32);  // more than the readout's kMaxReadoutRows
  std::vector<ChartLine> lines;
  for (int r = 0; r < 32; ++r) {
    for (int step = 0; step < 20; ++step) ranks[r].append(step, 1.7e9 + step, r + step * 0.001);
    lines.push_back({QStringLiteral("rank %1").arg(r), seriesColor(r), &ranks[r]});
  }
  auto chart = makeChart("loss", 600, 260);  // room for a few rows only
  chart->setLines(lines);
  const ChartView::Readout r = chart->readoutAt(chart->xToPixel(10));
  const int line_height = QFontMetrics(chart->findChild<QChartView*>()->font()).height();
  const QRectF plot = plotArea(chart.get());
  const int columns =
      static_cast<int>(plot.width() - 12) / ChartView::kReadoutColumnWidth;  // as drawn
  EXPECT_LE(static_cast<int>(r.rows.size()),
            ChartView::readoutRowsPerColumn(plot.height(), line_height) * columns);
  ASSERT_GE(r.rows.size(), 3u);
  EXPECT_TRUE(r.rows.front().text.startsWith("rank 31 ")) << r.rows.front().text.toStdString();
  EXPECT_TRUE(r.rows.back().text.startsWith("rank 0 ")) << r.rows.back().text.toStdString();
  const bool more = std::any_of(r.rows.begin(), r.rows.end(),
                                [](const auto& row) { return row.text.contains(" more"); });
  EXPECT_TRUE(more);
}

// Issue 35: a short chart of 8 ranks and their total listed 4 of them ("… 4 more"); its box now
// takes a second column instead.
TEST_F(MetricChartTest, EightRanksAndTheirTotalAllShowInAShortChart) {
  std::vector<Series> ranks(9);
  std::vector<ChartLine> lines;
  for (int r = 0; r < 9; ++r) {
    for (int step = 0; step < 20; ++step) ranks[r].append(step, 1.7e9 + step, r + step * 0.001);
    lines.push_back({r == 8 ? QStringLiteral("job total") : QStringLiteral("rank %1").arg(r),
                     seriesColor(r), &ranks[r]});
  }
  auto chart = makeChart("samples/s", 700, 200);
  chart->setLines(lines);
  const int line_height = QFontMetrics(chart->findChild<QChartView*>()->font()).height();
  ASSERT_LT(ChartView::readoutRowsPerColumn(plotArea(chart.get()).height(), line_height), 9)
      << "the chart is not short enough to need a second column";
  const ChartView::Readout r = chart->readoutAt(chart->xToPixel(10));
  EXPECT_EQ(r.rows.size(), 9u);
  for (const auto& row : r.rows) EXPECT_FALSE(row.text.contains(" more")) << row.text.toStdString();
}

TEST_F(MetricChartTest, StepTicksAreWholeNumbers) {
  Series s;
  for (int step = 1; step <= 3; ++step) s.append(step, 1.7e9 + step, 1.0 / step);
  auto chart = makeChart("loss", 800, 400);
  chart->setLines({{"rank 0", QColor(Qt::red), &s}});
  auto* axis = qobject_cast<QCategoryAxis*>(
      chart->findChild<QChartView*>()->chart()->axes(Qt::Horizontal).at(0));
  ASSERT_NE(axis, nullptr);
  const QStringList labels = axis->categoriesLabels();
  ASSERT_FALSE(labels.isEmpty());
  for (const QString& label : labels) {
    EXPECT_FALSE(label.contains('.')) << label.toStdString();
  }
}

TEST_F(MetricChartTest, EmptyChartSaysItIsWaiting) {
  Series empty;
  auto chart = makeChart("samples/s", 500, 300);
  chart->setLines({{"rank 0", QColor(), &empty}});
  EXPECT_EQ(chart->drawnPointCount(), 0);
  chart->grab().save(screenshotPath("metric_chart_empty.png"));
  empty.append(5, 5, 3);  // one point: a range around it, no crash
  chart->refresh();
  EXPECT_EQ(chart->drawnPointCount(), 1);
  EXPECT_LT(chart->xRange().first, 5);
  EXPECT_GT(chart->xRange().second, 5);
}

TEST_F(MetricChartTest, ScreenshotEightRanksSmoothed) {
  std::vector<Series> ranks;
  for (int r = 0; r < 8; ++r) ranks.push_back(lossSeries(200'000, r, 100 + r));
  std::vector<ChartLine> lines;
  for (int r = 0; r < 8; ++r) {
    lines.push_back({QStringLiteral("rank %1").arg(r), seriesColor(r), &ranks[r]});
  }
  auto chart = makeChart("loss", 900, 450);
  chart->setYLabel("loss");
  chart->setLines(lines);
  chart->setSmoothing(0.9);
  EXPECT_EQ(chart->smoothing(), 0.9);
  for (int r = 0; r < 8; ++r) {
    EXPECT_FALSE(chart->lineView(r).smoothed.empty());
    EXPECT_NEAR(chart->drawnLine(r).raw_pen.color().alphaF(), 0.25, 0.01);  // raw faint
  }
  EXPECT_GT(chart->drawnPointCount(), 8 * 600);
  EXPECT_LT(chart->drawnPointCount(), 8 * 3 * 900);
  // Hover in the middle for the readout.
  QWidget* vp = chart->findChild<QChartView*>()->viewport();
  const QPointF at = plotArea(chart.get()).center() + QPointF(-120, -60);
  QMouseEvent hover(QEvent::MouseMove, at, vp->mapToGlobal(at), Qt::NoButton, Qt::NoButton,
                    Qt::NoModifier);
  QApplication::sendEvent(vp, &hover);
  ASSERT_TRUE(chart->saveImage(screenshotPath("metric_chart.png")));
  chart->setYScale(MetricChart::YScale::kLog);
  ASSERT_TRUE(chart->saveImage(screenshotPath("metric_chart_log.png")));
  chart->setYScale(MetricChart::YScale::kLinear);
  chart->setSmoothing(5);  // clamped
  EXPECT_EQ(chart->smoothing(), 0.99);
}

TEST_F(MetricChartTest, ScreenshotThirtyTwoRanksZoomedWithReadout) {
  std::vector<Series> ranks;
  for (int r = 0; r < 32; ++r) ranks.push_back(lossSeries(50'000, r, 300 + r));
  std::vector<ChartLine> lines;
  for (int r = 0; r < 32; ++r) {
    lines.push_back({QStringLiteral("rank %1").arg(r), seriesColor(r), &ranks[r]});
  }
  auto chart = makeChart("loss (32 ranks)", 900, 450);
  chart->setYLabel("loss");
  chart->setLines(lines);
  chart->setXRange(20'000, 20'250);
  EXPECT_TRUE(chart->lineView(31).exact);
  QWidget* vp = chart->findChild<QChartView*>()->viewport();
  const QPointF at = plotArea(chart.get()).center() + QPointF(100, 0);
  QMouseEvent hover(QEvent::MouseMove, at, vp->mapToGlobal(at), Qt::NoButton, Qt::NoButton,
                    Qt::NoModifier);
  QApplication::sendEvent(vp, &hover);
  ASSERT_TRUE(chart->saveImage(screenshotPath("metric_chart_32_ranks.png")));
}

}  // namespace
}  // namespace ringmaster::gui
