#include "straggler/straggler_grid.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ringmaster::gui {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// REQUIRES: !values.empty(). Reorders values.
double medianOf(std::vector<double>& values) {
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return (lower + upper) / 2;
}

// ranks*columns, rank-major: each rank's mean step time in each column of [x0, x1]; NaN where it
// has none. With drop_slowest, a column of three or more steps leaves out its slowest one.
std::vector<double> columnMeans(const std::vector<const metrics::Series*>& step_time_by_rank,
                                metrics::Axis axis, double x0, double x1, int columns,
                                bool drop_slowest) {
  std::vector<double> means(step_time_by_rank.size() * columns, kNaN);
  for (size_t r = 0; r < step_time_by_rank.size(); ++r) {
    const metrics::Series* series = step_time_by_rank[r];
    if (series == nullptr || series->empty()) continue;
    const std::vector<metrics::Series::Column> cols = series->columns(axis, x0, x1, columns);
    for (int c = 0; c < columns && c < static_cast<int>(cols.size()); ++c) {
      const metrics::Series::Column& col = cols[c];
      if (col.count == 0) continue;
      const bool drop = drop_slowest && col.count >= 3;
      means[r * columns + c] = drop ? (col.sum - col.max) / static_cast<double>(col.count - 1)
                                    : col.sum / static_cast<double>(col.count);
    }
  }
  return means;
}

// Divides each column's means by their median across ranks (in place: NaN where the median is not
// positive, 1 where every rank is at zero); returns the medians.
std::vector<double> divideByColumnMedian(std::vector<double>& values, int ranks, int columns) {
  std::vector<double> medians(columns, kNaN);
  std::vector<double> present;
  present.reserve(ranks);
  for (int c = 0; c < columns; ++c) {
    present.clear();
    for (int r = 0; r < ranks; ++r) {
      const double m = values[static_cast<size_t>(r) * columns + c];
      if (std::isfinite(m)) present.push_back(m);
    }
    if (present.empty()) continue;
    const double median = medianOf(present);
    medians[c] = median;
    for (int r = 0; r < ranks; ++r) {
      double& v = values[static_cast<size_t>(r) * columns + c];
      if (!std::isfinite(v)) continue;
      if (median > 0) {
        v /= median;
      } else {
        v = v == median ? 1.0 : kNaN;  // all zero: nobody is slower than anybody
      }
    }
  }
  return medians;
}

bool badRange(double x0, double x1, int columns) {
  return columns < 1 || !std::isfinite(x0) || !std::isfinite(x1) || x1 < x0;
}

}  // namespace

StragglerGrid computeStragglerGrid(const std::vector<const metrics::Series*>& step_time_by_rank,
                                   metrics::Axis axis, double x0, double x1, int columns) {
  StragglerGrid grid;
  grid.ranks = static_cast<int>(step_time_by_rank.size());
  grid.x0 = x0;
  grid.x1 = x1;
  if (badRange(x0, x1, columns)) return grid;
  grid.columns = columns;
  grid.mean = columnMeans(step_time_by_rank, axis, x0, x1, columns, /*drop_slowest=*/false);
  grid.ratio = grid.mean;
  grid.median = divideByColumnMedian(grid.ratio, grid.ranks, columns);
  grid.rank_ratio.assign(grid.ranks, kNaN);

  for (int r = 0; r < grid.ranks; ++r) {
    double sum = 0;
    int n = 0;
    for (int c = 0; c < columns; ++c) {
      const double ratio = grid.at(r, c);
      if (std::isnan(ratio)) continue;
      sum += ratio;
      ++n;
    }
    if (n == 0) continue;
    grid.rank_ratio[r] = sum / n;
    if (grid.slowest_rank < 0 || grid.rank_ratio[r] > grid.slowest_ratio) {
      grid.slowest_rank = r;
      grid.slowest_ratio = grid.rank_ratio[r];
    }
  }
  return grid;
}

StragglerVerdict stragglerVerdict(const std::vector<const metrics::Series*>& step_time_by_rank,
                                  metrics::Axis axis, double x0, double x1, int columns) {
  StragglerVerdict verdict;
  if (badRange(x0, x1, columns)) return verdict;
  const int ranks = static_cast<int>(step_time_by_rank.size());
  std::vector<double> ratio =
      columnMeans(step_time_by_rank, axis, x0, x1, columns, /*drop_slowest=*/true);
  divideByColumnMedian(ratio, ranks, columns);
  std::vector<double> mine;
  for (int r = 0; r < ranks; ++r) {
    mine.clear();
    for (int c = 0; c < columns; ++c) {
      const double v = ratio[static_cast<size_t>(r) * columns + c];
      if (!std::isnan(v)) mine.push_back(v);
    }
    if (mine.empty()) continue;
    const double median = medianOf(mine);
    if (verdict.rank < 0 || median > verdict.ratio) verdict = {r, median};
  }
  return verdict;
}

void stragglerDataRange(const std::vector<const metrics::Series*>& step_time_by_rank,
                        metrics::Axis axis, double* x0, double* x1) {
  bool any = false;
  double lo = 0, hi = 0;
  for (const metrics::Series* series : step_time_by_rank) {
    if (series == nullptr || series->empty()) continue;
    const double a = series->minX(axis), b = series->maxX(axis);
    lo = any ? std::min(lo, a) : a;
    hi = any ? std::max(hi, b) : b;
    any = true;
  }
  *x0 = lo;
  *x1 = hi;
}

}  // namespace ringmaster::gui
