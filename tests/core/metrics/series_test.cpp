#include "ringmaster/metrics/series.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace ringmaster::metrics {
namespace {

// 10^6 points with the shapes a training run has: steps that sometimes repeat (several records
// per step), irregular wall-clock gaps, and a noisy value with rare spikes.
Series randomSeries(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  std::normal_distribution<double> noise(0, 0.05);
  Series s;
  double step = 0, time = 1.7e9;
  for (size_t i = 0; i < n; ++i) {
    if (unit(rng) < 0.9) step += 1;
    time += 0.001 + unit(rng) * 0.02;
    double value = 2.0 * std::exp(-static_cast<double>(i) / n * 3) + noise(rng);
    if (unit(rng) < 1e-4) value += 50 * unit(rng);
    s.append(step, time, value);
  }
  return s;
}

// Checks columns() against a scan of every point, using the column bounds it reports.
void expectColumnsMatchBruteForce(const Series& s, Axis axis, double x0, double x1, int width) {
  SCOPED_TRACE(testing::Message() << "axis " << static_cast<int>(axis) << " [" << x0 << ", " << x1
                                  << "] width " << width);
  const auto cols = s.columns(axis, x0, x1, width);
  ASSERT_EQ(cols.size(), static_cast<size_t>(width));
  EXPECT_EQ(cols.front().x_begin, x0);
  EXPECT_EQ(cols.back().x_end, x1);
  for (int c = 0; c + 1 < width; ++c) ASSERT_EQ(cols[c].x_end, cols[c + 1].x_begin);

  std::vector<Series::Column> expected(width);
  int c = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const double x = s.sortedX(i, axis);
    if (x < x0 || x > x1) continue;
    while (c + 1 < width && x >= cols[c].x_end) ++c;
    Series::Column& e = expected[c];
    const double v = s.at(i).value;
    if (e.count == 0) {
      e.min = e.max = e.first = v;
      e.first_x = x;
    }
    e.min = std::min(e.min, v);
    e.max = std::max(e.max, v);
    e.sum += v;
    e.last = v;
    e.last_x = x;
    ++e.count;
  }
  size_t total = 0;
  for (int k = 0; k < width; ++k) {
    const auto& got = cols[k];
    const auto& want = expected[k];
    ASSERT_EQ(got.count, want.count) << "column " << k;
    ASSERT_EQ(got.min, want.min) << "column " << k;
    ASSERT_EQ(got.max, want.max) << "column " << k;
    ASSERT_NEAR(got.sum, want.sum, 1e-9 * std::max(1.0, std::abs(want.sum))) << "column " << k;
    ASSERT_EQ(got.first, want.first) << "column " << k;
    ASSERT_EQ(got.last, want.last) << "column " << k;
    ASSERT_EQ(got.first_x, want.first_x) << "column " << k;
    ASSERT_EQ(got.last_x, want.last_x) << "column " << k;
    total += got.count;
  }
  const size_t in_range = s.upperBound(axis, x1) - s.lowerBound(axis, x0);
  EXPECT_EQ(total, in_range);
}

TEST(Series, ColumnsEqualBruteForceOnAMillionPointsBothAxes) {
  const Series s = randomSeries(1'000'000, 7);
  for (Axis axis : {Axis::kStep, Axis::kTime}) {
    const double lo = s.minX(axis), hi = s.maxX(axis), span = hi - lo;
    const std::vector<std::pair<double, double>> ranges = {
        {lo, hi},                                          // everything
        {lo + span * 0.31, lo + span * 0.32},              // 1% of the run
        {lo + span * 0.5, lo + span * 0.5 + span * 1e-4},  // ~100 points over many columns
        {lo - span * 0.1, lo + span * 0.05},               // starts before the data
        {hi - span * 0.2, hi + span},                      // ends after it
    };
    for (auto [x0, x1] : ranges) {
      for (int width : {1, 7, 800, 1920}) expectColumnsMatchBruteForce(s, axis, x0, x1, width);
    }
  }
}

TEST(Series, ColumnsOutsideTheDataAreEmpty) {
  Series s;
  for (int i = 0; i < 100; ++i) s.append(i, 1000 + i, i * 0.5);
  const auto cols = s.columns(Axis::kStep, 200, 300, 10);
  ASSERT_EQ(cols.size(), 10u);
  for (const auto& c : cols) {
    EXPECT_EQ(c.count, 0u);
    EXPECT_EQ(c.min, 0);
    EXPECT_EQ(c.max, 0);
    EXPECT_EQ(c.sum, 0);
  }
  // A gap inside the data: columns between two points are empty, the ones at the points are not.
  Series gap;
  gap.append(0, 0, 1);
  gap.append(100, 1, 2);
  const auto g = gap.columns(Axis::kStep, 0, 100, 10);
  EXPECT_EQ(g[0].count, 1u);
  for (int c = 1; c < 9; ++c) EXPECT_EQ(g[c].count, 0u) << c;
  EXPECT_EQ(g[9].count, 1u);  // the last column holds x == x1
  EXPECT_EQ(g[9].max, 2);
}

TEST(Series, EmptySeriesAnswersEveryQuery) {
  Series s;
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.minX(Axis::kStep), 0);
  EXPECT_EQ(s.maxX(Axis::kTime), 0);
  const auto cols = s.columns(Axis::kStep, 0, 10, 5);
  ASSERT_EQ(cols.size(), 5u);
  for (const auto& c : cols) EXPECT_EQ(c.count, 0u);
  size_t b = 1, e = 1;
  s.indexRange(Axis::kStep, 0, 10, &b, &e);
  EXPECT_EQ(b, 0u);
  EXPECT_EQ(e, 0u);
  double lo, hi;
  EXPECT_FALSE(s.valueRange(Axis::kStep, 0, 10, &lo, &hi));
}

TEST(Series, RejectsBadColumnRequestsWithAnEmptyAnswer) {
  Series s;
  s.append(1, 1, 1);
  EXPECT_TRUE(s.columns(Axis::kStep, 0, 10, 0).empty());
  EXPECT_TRUE(s.columns(Axis::kStep, 0, 10, -3).empty());
  EXPECT_TRUE(s.columns(Axis::kStep, 10, 0, 5).empty());
  EXPECT_TRUE(s.columns(Axis::kStep, NAN, 10, 5).empty());
}

TEST(Series, SinglePoint) {
  Series s;
  s.append(42, 1.7e9, 0.25);
  EXPECT_EQ(s.minX(Axis::kStep), 42);
  EXPECT_EQ(s.maxX(Axis::kStep), 42);
  EXPECT_EQ(s.minX(Axis::kTime), 1.7e9);
  // A zero-width range still finds the point, in the last column.
  const auto cols = s.columns(Axis::kStep, 42, 42, 3);
  ASSERT_EQ(cols.size(), 3u);
  EXPECT_EQ(cols[0].count + cols[1].count, 0u);
  EXPECT_EQ(cols[2].count, 1u);
  EXPECT_EQ(cols[2].min, 0.25);
  EXPECT_EQ(cols[2].max, 0.25);
  EXPECT_EQ(cols[2].first_x, 42);
  size_t b, e;
  s.indexRange(Axis::kStep, 0, 100, &b, &e);
  EXPECT_EQ(b, 0u);
  EXPECT_EQ(e, 1u);
  double lo, hi;
  ASSERT_TRUE(s.valueRange(Axis::kStep, 42, 42, &lo, &hi));
  EXPECT_EQ(lo, 0.25);
  EXPECT_EQ(hi, 0.25);
}

TEST(Series, IndexRangeZoomedInHasExactlyThePointsPlusOneNeighbourEachSide) {
  const Series s = randomSeries(1'000'000, 11);
  std::mt19937 rng(3);
  for (Axis axis : {Axis::kStep, Axis::kTime}) {
    const double lo = s.minX(axis), span = s.maxX(axis) - lo;
    for (int trial = 0; trial < 20; ++trial) {
      const double x0 = lo + span * std::uniform_real_distribution<double>(0.01, 0.98)(rng);
      const double x1 = x0 + span * 5e-5;
      size_t b, e;
      s.indexRange(axis, x0, x1, &b, &e);
      // Brute force: the first and last point in range.
      size_t first = s.size(), last = 0;
      for (size_t i = 0; i < s.size(); ++i) {
        const double x = s.x(i, axis);
        if (x >= x0 && x <= x1) {
          first = std::min(first, i);
          last = i;
        }
      }
      ASSERT_LT(first, s.size());
      EXPECT_EQ(b, first - 1);
      EXPECT_EQ(e, last + 2);
      EXPECT_LT(s.x(b, axis), x0);
      EXPECT_GT(s.x(e - 1, axis), x1);
    }
  }
}

TEST(Series, IndexRangeBetweenTwoPointsGivesBoth) {
  Series s;
  for (int i = 0; i < 10; ++i) s.append(i * 10, i, i);
  size_t b, e;
  s.indexRange(Axis::kStep, 31, 39, &b, &e);
  EXPECT_EQ(b, 3u);
  EXPECT_EQ(e, 5u);
  s.indexRange(Axis::kStep, 0, 90, &b, &e);  // the edges have no neighbours to add
  EXPECT_EQ(b, 0u);
  EXPECT_EQ(e, 10u);
}

TEST(Series, ValueRangeMatchesBruteForce) {
  const Series s = randomSeries(200'000, 5);
  const double lo = s.minX(Axis::kStep), span = s.maxX(Axis::kStep) - lo;
  for (double f : {0.0, 0.1, 0.33, 0.9}) {
    const double x0 = lo + span * f, x1 = x0 + span * 0.07;
    double want_lo = INFINITY, want_hi = -INFINITY;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s.x(i, Axis::kStep) >= x0 && s.x(i, Axis::kStep) <= x1) {
        want_lo = std::min(want_lo, s.at(i).value);
        want_hi = std::max(want_hi, s.at(i).value);
      }
    }
    double got_lo, got_hi;
    ASSERT_TRUE(s.valueRange(Axis::kStep, x0, x1, &got_lo, &got_hi));
    EXPECT_EQ(got_lo, want_lo);
    EXPECT_EQ(got_hi, want_hi);
  }
}

// Regression guard for restarts from a checkpoint: the step goes back from 1000 to 500.
TEST(Series, StepGoingBackwardsIsKeptAndClampedToTheRunningMaximum) {
  Series s;
  for (int i = 0; i <= 1000; ++i) s.append(i, i, 1.0);
  for (int i = 500; i <= 1500; ++i) s.append(i, 1001 + i, i == 700 ? 99.0 : 2.0);
  ASSERT_EQ(s.size(), 1001u + 1001u);
  EXPECT_EQ(s.x(1001, Axis::kStep), 500);         // the raw step is kept
  EXPECT_EQ(s.sortedX(1001, Axis::kStep), 1000);  // queries see it at the highest step so far
  EXPECT_EQ(s.sortedX(1001, Axis::kTime), s.x(1001, Axis::kTime));  // time never went back
  EXPECT_EQ(s.minX(Axis::kStep), 0);
  EXPECT_EQ(s.maxX(Axis::kStep), 1500);

  // The replayed steps 500..1000 (with the spike at 700) land in the column holding step 1000.
  const auto cols = s.columns(Axis::kStep, 0, 1500, 15);
  const auto& at1000 = cols[10];
  EXPECT_EQ(at1000.x_begin, 1000);
  // The first step 1000, steps 500..1000 replayed, then 1001..1099.
  EXPECT_EQ(at1000.count, 1u + 501u + 99u);
  EXPECT_EQ(at1000.max, 99.0);
  EXPECT_EQ(at1000.min, 1.0);
  EXPECT_EQ(at1000.first_x, 1000);
  EXPECT_EQ(at1000.last, 2.0);
  EXPECT_EQ(cols[9].count, 100u);  // 900..999 before the restart
  EXPECT_EQ(cols[9].max, 1.0);
  size_t total = 0;
  for (const auto& c : cols) total += c.count;
  EXPECT_EQ(total, s.size());
  expectColumnsMatchBruteForce(s, Axis::kStep, 0, 1500, 800);
  expectColumnsMatchBruteForce(s, Axis::kStep, 990, 1010, 800);

  size_t b, e;
  s.indexRange(Axis::kStep, 1000, 1000, &b, &e);
  EXPECT_EQ(b, 999u);
  EXPECT_EQ(e, 1001u + 501u + 1u);
}

TEST(Series, NonFiniteInputDoesNotPoisonQueries) {
  Series s;
  s.append(0, 0, 1.0);
  s.append(1, 1, NAN);
  s.append(NAN, 2, 3.0);  // counts as step 1, the previous sortedX
  s.append(3, 3, -2.0);
  const auto cols = s.columns(Axis::kStep, 0, 3, 3);
  EXPECT_EQ(cols[0].count, 1u);
  EXPECT_EQ(cols[1].count, 2u);
  EXPECT_EQ(cols[1].min, 3.0);  // NaN is skipped by min and max
  EXPECT_EQ(cols[1].max, 3.0);
  EXPECT_TRUE(std::isnan(cols[1].sum));
  EXPECT_EQ(cols[2].min, -2.0);
  EXPECT_EQ(s.maxX(Axis::kStep), 3);
  double lo, hi;
  ASSERT_TRUE(s.valueRange(Axis::kStep, 0, 3, &lo, &hi));
  EXPECT_EQ(lo, -2.0);
  EXPECT_EQ(hi, 3.0);
}

TEST(Series, PyramidStaysExactWhileGrowing) {
  // Every size from 1 to 300 exercises each carry pattern of the pyramid.
  Series s;
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> v(-1, 1);
  for (int i = 0; i < 300; ++i) {
    s.append(i, i, v(rng));
    expectColumnsMatchBruteForce(s, Axis::kStep, 0, i, 1 + i % 5);
  }
}

// The pyramid's leaves hold 16 points: every range of a 100-point series, whichever leaves its
// ends fall in, gives the min, max and sum of its points.
TEST(Series, EveryRangeEqualsBruteForceWhereverItsEndsFall) {
  Series s;
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> v(-1, 1);
  for (int i = 0; i < 100; ++i) s.append(i, i, v(rng));
  for (size_t begin = 0; begin < s.size(); ++begin) {
    for (size_t end = begin + 1; end <= s.size(); ++end) {
      double min, max, sum, want_sum = 0;
      double want_min = s.at(begin).value, want_max = want_min;
      for (size_t i = begin; i < end; ++i) {
        want_min = std::min(want_min, s.at(i).value);
        want_max = std::max(want_max, s.at(i).value);
        want_sum += s.at(i).value;
      }
      s.valueStats(begin, end, &min, &max, &sum);
      ASSERT_EQ(min, want_min) << begin << ".." << end;
      ASSERT_EQ(max, want_max) << begin << ".." << end;
      ASSERT_NEAR(sum, want_sum, 1e-12) << begin << ".." << end;
    }
  }
}

TEST(Series, ReservingAndShrinkingChangeNothingItHolds) {
  Series s = randomSeries(5000, 11);
  const auto before = s.columns(Axis::kStep, s.minX(Axis::kStep), s.maxX(Axis::kStep), 97);
  s.reserve(20000);
  s.shrinkToFit();
  const auto after = s.columns(Axis::kStep, s.minX(Axis::kStep), s.maxX(Axis::kStep), 97);
  ASSERT_EQ(after.size(), before.size());
  for (size_t c = 0; c < after.size(); ++c) {
    EXPECT_EQ(after[c].count, before[c].count);
    EXPECT_EQ(after[c].min, before[c].min);
    EXPECT_EQ(after[c].max, before[c].max);
    EXPECT_EQ(after[c].sum, before[c].sum);
  }
  s.append(s.back().step + 1, s.back().time + 1, 42);  // and it still grows
  EXPECT_EQ(s.size(), 5001u);
  EXPECT_TRUE(s.monotonic(Axis::kStep));
  s.append(0, s.back().time + 1, 1);  // a restart's replay
  EXPECT_FALSE(s.monotonic(Axis::kStep));
  EXPECT_TRUE(s.monotonic(Axis::kTime));
}

// A failure at t = 47.5 after step 47; the restart replays steps 40.. from t = 90: the step reached
// never goes back.
TEST(Series, StepAtIsTheStepReachedByThatTime) {
  Series s;
  for (int step = 0; step <= 47; ++step) s.append(step, step, 1);
  for (int step = 40; step <= 60; ++step) s.append(step, 50 + step, 1);
  EXPECT_FALSE(s.stepAt(-1));
  EXPECT_EQ(s.stepAt(0), 0.0);
  EXPECT_EQ(s.stepAt(47.5), 47.0);
  EXPECT_EQ(s.stepAt(92), 47.0);  // steps 40-42 of the replay
  EXPECT_EQ(s.stepAt(1000), 60.0);
  EXPECT_FALSE(Series().stepAt(10));
}
}  // namespace
}  // namespace ringmaster::metrics
