// computeStragglerGrid and stragglerVerdict on synthetic step times: a rank made slow on purpose is
// named, a busy host's hiccups are not.
#include "straggler/straggler_grid.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <random>

#include "straggler/straggler_scale.h"

namespace ringmaster::gui {
namespace {

constexpr double kT0 = 1795442400.0;
constexpr int kSteps = 200;
constexpr double kStepSeconds = 0.1;

// Step s of every rank happens at kT0 + s * kStepSeconds; step times jitter by +-2% around
// kStepSeconds. `slow_rank`, from `slow_from` on, takes `factor` times as long.
std::vector<std::unique_ptr<metrics::Series>> makeRanks(int ranks, int slow_rank = -1,
                                                        int slow_from = 0, double factor = 1.0) {
  std::vector<std::unique_ptr<metrics::Series>> out;
  for (int r = 0; r < ranks; ++r) {
    auto s = std::make_unique<metrics::Series>();
    for (int step = 0; step < kSteps; ++step) {
      double t = kStepSeconds * (1.0 + 0.02 * std::sin(step * 0.7 + r * 1.3));
      if (r == slow_rank && step >= slow_from) t *= factor;
      s->append(step, kT0 + step * kStepSeconds, t);
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<const metrics::Series*> view(const std::vector<std::unique_ptr<metrics::Series>>& v) {
  std::vector<const metrics::Series*> out;
  for (const auto& s : v) out.push_back(s.get());
  return out;
}

TEST(StragglerGrid, NamesTheRankMadeTwiceAsSlowInTheSecondHalf) {
  const auto ranks = makeRanks(8, /*slow_rank=*/5, /*slow_from=*/kSteps / 2, 2.0);
  // 20 columns of 10 steps each over the time axis: columns 0-9 before, 10-19 after.
  const double x1 = kT0 + (kSteps - 1) * kStepSeconds;
  const StragglerGrid grid = computeStragglerGrid(view(ranks), metrics::Axis::kTime, kT0, x1, 20);
  ASSERT_EQ(grid.ranks, 8);
  ASSERT_EQ(grid.columns, 20);
  ASSERT_EQ(grid.ratio.size(), 160u);
  EXPECT_EQ(grid.slowest_rank, 5);
  // Half the window at ~1x, half at ~2x.
  EXPECT_NEAR(grid.slowest_ratio, 1.5, 0.05);
  for (int c = 0; c < 20; ++c) {
    const double expected = c < 10 ? 1.0 : 2.0;
    EXPECT_NEAR(grid.at(5, c), expected, 0.06) << "column " << c;
    for (int r = 0; r < 8; ++r) {
      if (r == 5) continue;
      EXPECT_NEAR(grid.at(r, c), 1.0, 0.05) << "rank " << r << " column " << c;
    }
    EXPECT_NEAR(grid.median[c], kStepSeconds, kStepSeconds * 0.03);
  }
  // Zoomed to the second half only, rank 5 is 2x throughout.
  const StragglerGrid late =
      computeStragglerGrid(view(ranks), metrics::Axis::kTime, kT0 + 10.0, x1, 8);
  EXPECT_EQ(late.slowest_rank, 5);
  EXPECT_NEAR(late.slowest_ratio, 2.0, 0.06);
  // And to the first half, nobody stands out.
  const StragglerGrid early =
      computeStragglerGrid(view(ranks), metrics::Axis::kStep, 0, kSteps / 2 - 1, 10);
  EXPECT_LT(early.slowest_ratio, 1.05);
}

TEST(StragglerGrid, EqualRanksAreAllAtOneTimesTheMedian) {
  const auto ranks = makeRanks(8);
  const StragglerGrid grid =
      computeStragglerGrid(view(ranks), metrics::Axis::kStep, 0, kSteps - 1, 25);
  for (double ratio : grid.ratio) EXPECT_NEAR(ratio, 1.0, 0.05);
  ASSERT_GE(grid.slowest_rank, 0);
  EXPECT_NEAR(grid.slowest_ratio, 1.0, 0.05);
}

TEST(StragglerGrid, EmptySeriesAndNullRanksGiveNaNRows) {
  auto ranks = makeRanks(3, 2, 0, 3.0);
  metrics::Series empty;
  std::vector<const metrics::Series*> input = view(ranks);
  input.push_back(&empty);
  input.push_back(nullptr);
  const StragglerGrid grid = computeStragglerGrid(input, metrics::Axis::kStep, 0, kSteps - 1, 10);
  ASSERT_EQ(grid.ranks, 5);
  for (int c = 0; c < grid.columns; ++c) {
    EXPECT_TRUE(std::isnan(grid.at(3, c)));
    EXPECT_TRUE(std::isnan(grid.at(4, c)));
  }
  EXPECT_TRUE(std::isnan(grid.rank_ratio[3]));
  EXPECT_EQ(grid.slowest_rank, 2);
  // Median of {1, 1, 3} is 1: rank 2 reads 3x.
  EXPECT_NEAR(grid.slowest_ratio, 3.0, 0.15);

  // Nothing at all: no slowest rank.
  const StragglerGrid none =
      computeStragglerGrid({&empty, nullptr}, metrics::Axis::kTime, 0, 10, 10);
  EXPECT_EQ(none.slowest_rank, -1);
  EXPECT_EQ(none.slowest_ratio, 0);
  const StragglerGrid no_ranks = computeStragglerGrid({}, metrics::Axis::kTime, 0, 10, 10);
  EXPECT_EQ(no_ranks.ranks, 0);
  EXPECT_EQ(no_ranks.slowest_rank, -1);
}

TEST(StragglerGrid, SingleRankIsItsOwnMedian) {
  const auto ranks = makeRanks(1, 0, 50, 4.0);
  const StragglerGrid grid =
      computeStragglerGrid(view(ranks), metrics::Axis::kStep, 0, kSteps - 1, 10);
  EXPECT_EQ(grid.slowest_rank, 0);
  for (double ratio : grid.ratio) EXPECT_DOUBLE_EQ(ratio, 1.0);
}

TEST(StragglerGrid, GapsInOneRankLeaveNaNCellsOnlyThere) {
  // Rank 1 reports nothing between steps 50 and 149.
  auto ranks = makeRanks(4);
  metrics::Series gappy;
  for (int step = 0; step < kSteps; ++step) {
    if (step >= 50 && step < 150) continue;
    gappy.append(step, kT0 + step * kStepSeconds, kStepSeconds);
  }
  std::vector<const metrics::Series*> input = view(ranks);
  input[1] = &gappy;
  const StragglerGrid grid = computeStragglerGrid(input, metrics::Axis::kStep, 0, kSteps - 1, 20);
  for (int c = 0; c < 20; ++c) {
    // A column has data when it holds a step outside the gap (the last column holds x1 too).
    bool has_data = false;
    for (int step = 0; step < kSteps; ++step) {
      const bool inside =
          step >= grid.columnBegin(c) && (step < grid.columnEnd(c) || (c == 19 && step <= grid.x1));
      if (inside && (step < 50 || step >= 150)) has_data = true;
    }
    const bool in_gap = !has_data;
    EXPECT_EQ(std::isnan(grid.at(1, c)), in_gap) << "column " << c;
    EXPECT_FALSE(std::isnan(grid.at(0, c)));
  }
}

TEST(StragglerGrid, ZeroMedianAndNaNValuesDoNotPoisonTheGrid) {
  metrics::Series zero_a, zero_b, nan_rank;
  for (int step = 0; step < 10; ++step) {
    zero_a.append(step, step, 0.0);
    zero_b.append(step, step, 0.0);
  }
  const StragglerGrid zeros =
      computeStragglerGrid({&zero_a, &zero_b}, metrics::Axis::kStep, 0, 9, 5);
  for (double ratio : zeros.ratio) EXPECT_DOUBLE_EQ(ratio, 1.0);

  // A NaN step time (a rank that printed "nan") is no data, not a straggler.
  const auto ranks = makeRanks(3);
  for (int step = 0; step < kSteps; ++step)
    nan_rank.append(step, kT0 + step * kStepSeconds, std::nan(""));
  std::vector<const metrics::Series*> input = view(ranks);
  input.push_back(&nan_rank);
  const StragglerGrid grid = computeStragglerGrid(input, metrics::Axis::kStep, 0, kSteps - 1, 10);
  EXPECT_NE(grid.slowest_rank, 3);
  for (int c = 0; c < 10; ++c) {
    EXPECT_TRUE(std::isnan(grid.at(3, c)));
    EXPECT_NEAR(grid.median[c], kStepSeconds, kStepSeconds * 0.03);
  }
}

TEST(StragglerGrid, BadArgumentsGiveNoColumns) {
  const auto ranks = makeRanks(2);
  EXPECT_EQ(computeStragglerGrid(view(ranks), metrics::Axis::kStep, 0, 10, 0).columns, 0);
  EXPECT_EQ(computeStragglerGrid(view(ranks), metrics::Axis::kStep, 10, 0, 5).columns, 0);
  EXPECT_EQ(computeStragglerGrid(view(ranks), metrics::Axis::kStep, 0, std::nan(""), 5).columns, 0);
  const StragglerGrid bad = computeStragglerGrid(view(ranks), metrics::Axis::kStep, 0, 10, -3);
  EXPECT_EQ(bad.ranks, 2);
  EXPECT_TRUE(bad.ratio.empty());
  EXPECT_EQ(bad.slowest_rank, -1);
}

// 8 ranks on a busy host for 300 s at 10 steps a second: busy time 20 ms +-10%, and one step in
// 200 descheduled for 10-40 times as long (a real 8-rank job on 2 cores had 0.1-0.3 % of its
// steps at 3-5x the median: this is harsher). From `throttled_from` on (seconds), rank 3 runs at a
// third of its speed.
std::vector<std::unique_ptr<metrics::Series>> busyHost(double throttled_from) {
  std::mt19937 random(7);
  std::normal_distribution<double> jitter(1.0, 0.1);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<std::unique_ptr<metrics::Series>> out;
  for (int r = 0; r < 8; ++r) {
    auto s = std::make_unique<metrics::Series>();
    for (int step = 0; step < 3000; ++step) {
      const double t = step * 0.1;
      double busy = 0.020 * jitter(random);
      if (uniform(random) < 1.0 / 200) busy *= 10 + 30 * uniform(random);
      if (r == 3 && t >= throttled_from) busy *= 3;
      s->append(step, kT0 + t, busy);
    }
    out.push_back(std::move(s));
  }
  return out;
}

// The two faults at once: a verdict that named a different rank every few seconds on a
// busy host, and one that took most of a minute to name a rank throttled to a third.
TEST(StragglerVerdict, ABusyHostsHiccupsNameNobodyAThrottledRankIsNamedWithinFifteenSeconds) {
  const auto quiet = busyHost(/*throttled_from=*/1e9);
  double worst = 0, worst_mean = 0;
  for (double t = 30; t <= 299; t += 1) {
    const StragglerVerdict verdict =
        stragglerVerdict(view(quiet), metrics::Axis::kTime, kT0 + t - 30, kT0 + t, 6);
    ASSERT_GE(verdict.rank, 0);
    worst = std::max(worst, verdict.ratio);
    // The same window as a mean of column means: what the verdict was before.
    worst_mean = std::max(worst_mean, computeStragglerGrid(view(quiet), metrics::Axis::kTime,
                                                           kT0 + t - 30, kT0 + t, 6)
                                          .slowest_ratio);
  }
  EXPECT_LT(worst, 1.06) << "a hiccup named somebody";
  EXPECT_GT(worst_mean, 1.10) << "the hiccups should be strong enough to fool a mean";

  const auto throttled = busyHost(/*throttled_from=*/200);
  double named_after = -1;
  for (double t = 200; t <= 260 && named_after < 0; t += 0.5) {
    const StragglerVerdict verdict =
        stragglerVerdict(view(throttled), metrics::Axis::kTime, kT0 + t - 30, kT0 + t, 6);
    if (verdict.rank == 3 && verdict.ratio >= 1.5) named_after = t - 200;
  }
  std::printf(
      "busy host: verdict at most %.3fx (a mean of columns: %.3fx); a throttled rank "
      "named after %.1f s\n",
      worst, worst_mean, named_after);
  EXPECT_GE(named_after, 0) << "never named";
  EXPECT_LE(named_after, 15);
  const StragglerVerdict late =
      stragglerVerdict(view(throttled), metrics::Axis::kTime, kT0 + 260, kT0 + 290, 6);
  EXPECT_EQ(late.rank, 3);
  EXPECT_NEAR(late.ratio, 3.0, 0.3);
}

TEST(StragglerVerdict, NoDataOrBadArgumentsNameNobody) {
  metrics::Series empty;
  EXPECT_EQ(stragglerVerdict({&empty, nullptr}, metrics::Axis::kTime, 0, 10, 6).rank, -1);
  EXPECT_EQ(stragglerVerdict({}, metrics::Axis::kTime, 0, 10, 6).rank, -1);
  const auto ranks = makeRanks(2);
  EXPECT_EQ(stragglerVerdict(view(ranks), metrics::Axis::kStep, 0, 10, 0).rank, -1);
  EXPECT_EQ(stragglerVerdict(view(ranks), metrics::Axis::kStep, 10, 0, 6).rank, -1);
  EXPECT_EQ(stragglerVerdict(view(ranks), metrics::Axis::kStep, 0, std::nan(""), 6).rank, -1);
  // A rank whose step times are all NaN has no say.
  metrics::Series nan_rank;
  for (int step = 0; step < kSteps; ++step) nan_rank.append(step, kT0, std::nan(""));
  std::vector<const metrics::Series*> input = view(ranks);
  input.push_back(&nan_rank);
  const StragglerVerdict verdict = stragglerVerdict(input, metrics::Axis::kStep, 0, kSteps - 1, 6);
  EXPECT_NE(verdict.rank, 2);
  EXPECT_NEAR(verdict.ratio, 1.0, 0.03);
}

TEST(StragglerScale, NeutralAtOneWarmerWhenSlowerCoolerWhenFaster) {
  QPalette dark;
  dark.setColor(QPalette::Base, QColor(27, 29, 33));
  const QColor one = stragglerColor(1.0, dark);
  const QColor slow = stragglerColor(2.0, dark);
  const QColor slower = stragglerColor(5.0, dark);
  const QColor fast = stragglerColor(0.5, dark);
  EXPECT_LT(std::abs(one.red() - one.blue()), 30);  // grey-ish
  EXPECT_GT(slow.red(), 230);
  EXPECT_LT(slow.green(), 80);
  EXPECT_EQ(slow, slower);  // saturates at 2x
  EXPECT_GT(fast.blue(), fast.red() + 80);
  EXPECT_FALSE(stragglerColor(std::nan(""), dark).isValid());
  EXPECT_EQ(formatStepTime(0.042), "42 ms");
  EXPECT_EQ(formatStepTime(0.0234), "23 ms");
  EXPECT_EQ(formatStepTime(1.5), "1.50 s");
  EXPECT_EQ(formatStepTime(0.00085), "850 \u00b5s");
  EXPECT_EQ(formatRatio(1.83), "1.8x");
  EXPECT_EQ(formatRatio(1.04), "1.04x");
}

}  // namespace
}  // namespace ringmaster::gui
