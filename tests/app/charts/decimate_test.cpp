#include "charts/decimate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "charts/axis_ticks.h"

namespace ringmaster::gui {
namespace {

using metrics::Axis;
using metrics::Series;

Series noisySeries(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  std::normal_distribution<double> noise(0, 0.1);
  Series s;
  double time = 1.7e9;
  for (size_t i = 0; i < n; ++i) {
    time += 0.002 + 0.01 * unit(rng);
    double v = 3 * std::exp(-3.0 * i / n) + noise(rng);
    if (unit(rng) < 2e-5) v += 40;  // rare spikes must survive decimation
    s.append(static_cast<double>(i), time, v);
  }
  return s;
}

// Brute force over every point: per column of [x0, x1] (edges as Series::columns documents them)
// the min and max value; checks that the drawn points of each column are exactly those.
void expectDrawnEqualsBruteForce(const Series& s, Axis axis, double x0, double x1, int width) {
  SCOPED_TRACE(testing::Message() << "axis " << int(axis) << " [" << x0 << ", " << x1 << "] w "
                                  << width);
  const LineView view = decimateForView(s, {axis, x0, x1, width, 0});
  ASSERT_FALSE(view.exact);
  std::vector<double> edges(width + 1);
  for (int c = 0; c < width; ++c) edges[c] = x0 + (x1 - x0) * (static_cast<double>(c) / width);
  edges[width] = x1;
  auto columnOf = [&](double x) {
    if (x == x1) return width - 1;
    return static_cast<int>(std::upper_bound(edges.begin(), edges.end(), x) - edges.begin()) - 1;
  };
  std::vector<double> want_min(width, INFINITY), want_max(width, -INFINITY);
  for (size_t i = 0; i < s.size(); ++i) {
    const double x = s.x(i, axis);
    if (x < x0 || x > x1) continue;
    const int c = columnOf(x);
    want_min[c] = std::min(want_min[c], s.at(i).value);
    want_max[c] = std::max(want_max[c], s.at(i).value);
  }
  std::vector<std::vector<double>> drawn(width);
  double last_x = -INFINITY;
  for (const ViewPoint& p : view.raw) {
    ASSERT_GE(p.x, last_x) << "points must be in x order";
    last_x = p.x;
    ASSERT_GE(p.x, x0);
    ASSERT_LE(p.x, x1);
    drawn[columnOf(p.x)].push_back(p.y);
  }
  for (int c = 0; c < width; ++c) {
    if (want_min[c] == INFINITY) {
      EXPECT_TRUE(drawn[c].empty()) << "column " << c;
      continue;
    }
    ASSERT_FALSE(drawn[c].empty()) << "column " << c;
    EXPECT_EQ(drawn[c].size(), want_min[c] == want_max[c] ? 1u : 2u) << "column " << c;
    EXPECT_EQ(*std::min_element(drawn[c].begin(), drawn[c].end()), want_min[c]) << "column " << c;
    EXPECT_EQ(*std::max_element(drawn[c].begin(), drawn[c].end()), want_max[c]) << "column " << c;
  }
}

TEST(DecimateForView, MillionPointsPerColumnMinMaxEqualsBruteForce) {
  const Series s = noisySeries(1'000'000, 17);
  for (Axis axis : {Axis::kStep, Axis::kTime}) {
    const double lo = s.minX(axis), hi = s.maxX(axis), span = hi - lo;
    expectDrawnEqualsBruteForce(s, axis, lo, hi, 800);
    expectDrawnEqualsBruteForce(s, axis, lo, hi, 1357);
    expectDrawnEqualsBruteForce(s, axis, lo + span * 0.2, lo + span * 0.21, 640);
    expectDrawnEqualsBruteForce(s, axis, lo - span * 0.5, lo + span * 0.25, 800);
  }
}

TEST(DecimateForView, SpikesSurviveAtFullZoomOut) {
  Series s;
  for (int i = 0; i < 2'000'000; ++i) s.append(i, i, i == 1'234'567 ? 1000.0 : 1.0);
  const LineView view = decimateForView(s, {Axis::kStep, 0, 1'999'999, 800, 0});
  double top = 0;
  for (const auto& p : view.raw) top = std::max(top, p.y);
  EXPECT_EQ(top, 1000.0);
  EXPECT_EQ(view.y_max, 1000.0);
  EXPECT_EQ(view.y_min, 1.0);
}

TEST(DecimateForView, ZoomedInDrawsTheExactPointsAndOneNeighbourEachSide) {
  const Series s = noisySeries(1'000'000, 3);
  const LineView view = decimateForView(s, {Axis::kStep, 500'000.5, 500'100.5, 800, 0});
  ASSERT_TRUE(view.exact);
  ASSERT_EQ(view.raw.size(), 102u);  // steps 500001..500100, plus 500000 and 500101
  for (size_t k = 0; k < view.raw.size(); ++k) {
    EXPECT_EQ(view.raw[k].x, 500'000.0 + k);
    EXPECT_EQ(view.raw[k].y, s.at(500'000 + k).value);
  }
}

TEST(DecimateForView, SwitchesToColumnsAboveTwoPointsPerColumn) {
  Series s;
  for (int i = 0; i < 1000; ++i) s.append(i, i, std::sin(i * 0.1));
  EXPECT_TRUE(decimateForView(s, {Axis::kStep, 0, 199, 100, 0}).exact);    // 200 points
  const LineView dec = decimateForView(s, {Axis::kStep, 0, 200, 100, 0});  // 201 points
  EXPECT_FALSE(dec.exact);
  EXPECT_LE(dec.raw.size(), 200u);
}

TEST(DecimateForView, SmoothingIsADebiasedEmaOverExactPoints) {
  Series s;
  const double values[] = {1, 3, 2, 5};
  for (int i = 0; i < 4; ++i) s.append(i, i, values[i]);
  const double w = 0.6;
  const LineView view = decimateForView(s, {Axis::kStep, 0, 3, 800, w});
  ASSERT_EQ(view.smoothed.size(), 4u);
  double acc = 0, debias = 1;
  for (int i = 0; i < 4; ++i) {
    acc = acc * w + (1 - w) * values[i];
    debias *= w;
    EXPECT_DOUBLE_EQ(view.smoothed[i].y, acc / (1 - debias)) << i;
    EXPECT_EQ(view.smoothed[i].x, i);
  }
  EXPECT_DOUBLE_EQ(view.smoothed[0].y, 1.0);  // debiased: starts at the first value, not near 0
}

TEST(DecimateForView, SmoothingOverColumnMeansWhenDecimated) {
  Series s;
  for (int i = 0; i < 100'000; ++i) s.append(i, i, i % 2 == 0 ? 1.0 : 3.0);
  const LineView view = decimateForView(s, {Axis::kStep, 0, 99'999, 500, 0.9});
  ASSERT_FALSE(view.exact);
  ASSERT_EQ(view.smoothed.size(), 500u);
  for (const auto& p : view.smoothed) EXPECT_NEAR(p.y, 2.0, 0.01);  // every column's mean is 2
  EXPECT_TRUE(decimateForView(s, {Axis::kStep, 0, 99'999, 500, 0}).smoothed.empty());
}

// Issue 21: NaN and ±Inf are never drawn as values nor scaled to, but never hidden either: each
// is a marker where it happened.
TEST(DecimateForView, NonFiniteValuesAreMarkersOutsideTheLineAndTheRange) {
  Series s;
  s.append(0, 0, 1);
  s.append(1, 1, NAN);
  s.append(2, 2, INFINITY);
  s.append(3, 3, 2);
  s.append(4, 4, -INFINITY);
  const LineView view = decimateForView(s, {Axis::kStep, 0, 4, 100, 0});
  ASSERT_EQ(view.raw.size(), 2u);
  EXPECT_EQ(view.y_min, 1);
  EXPECT_EQ(view.y_max, 2);
  ASSERT_EQ(view.non_finite.size(), 3u);
  EXPECT_EQ(view.non_finite[0].x, 1);
  EXPECT_TRUE(std::isnan(view.non_finite[0].value));
  EXPECT_EQ(view.non_finite[1].value, INFINITY);
  EXPECT_EQ(view.non_finite[2].x, 4);
  EXPECT_EQ(view.non_finite[2].value, -INFINITY);
}

TEST(DecimateForView, NonFiniteValuesSurviveDecimation) {
  Series s;
  for (int i = 0; i < 100'000; ++i) {
    const double v = i == 50'000 ? NAN : i == 70'000 ? INFINITY : 1.0;
    s.append(i, i, v);
  }
  const LineView view = decimateForView(s, {Axis::kStep, 0, 99'999, 500, 0});
  ASSERT_FALSE(view.exact);
  ASSERT_EQ(view.non_finite.size(), 2u);
  EXPECT_TRUE(std::isnan(view.non_finite[0].value));
  EXPECT_NEAR(view.non_finite[0].x, 50'000, 200);
  EXPECT_EQ(view.non_finite[1].value, INFINITY);
  EXPECT_NEAR(view.non_finite[1].x, 70'000, 200);
  EXPECT_EQ(view.y_max, 1.0);
}

TEST(DecimateForView, EmptyOrBadRequestsDrawNothing) {
  Series empty;
  EXPECT_TRUE(decimateForView(empty, {Axis::kStep, 0, 10, 100, 0}).raw.empty());
  Series s;
  s.append(1, 1, 1);
  EXPECT_TRUE(decimateForView(s, {Axis::kStep, 10, 0, 100, 0}).raw.empty());
  EXPECT_TRUE(decimateForView(s, {Axis::kStep, 0, 10, 0, 0}).raw.empty());
  EXPECT_FALSE(decimateForView(s, {Axis::kStep, 0, 10, 0, 0}).has_values);
}

// The values at the ticks of a log axis (their logs back to values, rounded for comparison).
std::vector<double> logTickValues(double lo_value, double hi_value, int max_ticks) {
  std::vector<double> values;
  for (double t : logTicks(std::log10(lo_value), std::log10(hi_value), max_ticks)) {
    values.push_back(std::round(std::pow(10.0, t) * 1e6) / 1e6);
  }
  return values;
}

TEST(AxisTicks, ALogAxisHasRoundValuesAsDenseAsItsHeightAllows) {
  // A loss from 2.3 to 0.3: not the decades 0.1, 1, 10 around it.
  EXPECT_EQ(logTickValues(0.28, 2.4, 6), (std::vector<double>{0.5, 1, 2}));
  EXPECT_EQ(logTickValues(0.28, 2.4, 12),
            (std::vector<double>{0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 2}));
  EXPECT_EQ(logTickValues(0.28, 2.4, 2), (std::vector<double>{0.3, 1}));
  // Four decades: 1, 2, 5 on a tall plot, the decades on a short one.
  EXPECT_EQ(logTickValues(1e-3, 10, 13), (std::vector<double>{0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
                                                              0.1, 0.2, 0.5, 1, 2, 5, 10}));
  EXPECT_EQ(logTickValues(1e-3, 10, 5), (std::vector<double>{0.001, 0.01, 0.1, 1, 10}));
  // Twenty decades on 4 rows: every 5th (1e-10, 1e-5, 1, 1e5, 1e10).
  EXPECT_EQ(logTicks(-10, 10, 5), (std::vector<double>{-10, -5, 0, 5, 10}));
  // Within 10%: round steps of the values.
  EXPECT_EQ(logTickValues(0.95, 1.05, 6), (std::vector<double>{0.96, 0.98, 1, 1.02, 1.04}));
  EXPECT_TRUE(logTicks(1, 1, 5).empty());
  EXPECT_TRUE(logTicks(0, std::numeric_limits<double>::infinity(), 5).empty());
}

TEST(AxisTicks, IntervalsAreOneTwoOrFiveTimesAPowerOfTen) {
  EXPECT_DOUBLE_EQ(niceTickInterval(1.0, 5), 0.2);
  EXPECT_DOUBLE_EQ(niceTickInterval(1000, 7), 200);
  EXPECT_DOUBLE_EQ(niceTickInterval(0.37, 4), 0.1);
  // Two ticks asked over 0.983..1.004: 0.02 apart puts only 1.00 inside; 0.01 puts 0.99 and 1.00.
  EXPECT_DOUBLE_EQ(niceTickIntervalWithin(0.983, 1.004, 2, 2), 0.01);
  EXPECT_GE(tickValues(0.983, 1.004, niceTickIntervalWithin(0.983, 1.004, 2, 2)).size(), 2u);
  EXPECT_DOUBLE_EQ(niceTickIntervalWithin(0, 10, 5, 2), 2);  // already enough
  EXPECT_DOUBLE_EQ(niceTickInterval(2.4, 4), 1);
  EXPECT_EQ(niceTickInterval(0, 4), 1);
  EXPECT_EQ(niceTickInterval(NAN, 4), 1);
  EXPECT_EQ(tickLabelFormat(0.05, 2), "%.2f");
  EXPECT_EQ(tickLabelFormat(200, 1e4), "%.0f");
  EXPECT_EQ(tickLabelFormat(0.5, 3), "%.1f");
  EXPECT_EQ(tickLabelFormat(1e-6, 1e-5), "%.3g");
  // An evaluation metric barely moving: 0.019800, 0.019805, ... must not all read "0.0198".
  EXPECT_EQ(tickLabelFormat(5e-6, 0.0198), "%.5g");
  EXPECT_EQ(tickLabelFormat(100, 1.5e9), "%.9g");
}

}  // namespace
}  // namespace ringmaster::gui
