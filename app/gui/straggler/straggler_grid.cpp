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

}  // namespace

StragglerGrid computeStragglerGrid(const std::vector<const metrics::Series*>& step_time_by_rank,
                                   metrics::Axis axis, double x0, double x1, int columns) {
  StragglerGrid grid;
  grid.ranks = static_cast<int>(step_time_by_rank.size());
  grid.x0 = x0;
  grid.x1 = x1;
  if (columns < 1 || !std::isfinite(x0) || !std::isfinite(x1) || x1 < x0) return grid;
  grid.columns = columns;
  const size_t cells = static_cast<size_t>(grid.ranks) * columns;
  grid.mean.assign(cells, kNaN);
  grid.ratio.assign(cells, kNaN);
  grid.median.assign(columns, kNaN);
  grid.rank_ratio.assign(grid.ranks, kNaN);

  for (int r = 0; r < grid.ranks; ++r) {
    const metrics::Series* series = step_time_by_rank[r];
    if (series == nullptr || series->empty()) continue;
    const std::vector<metrics::Series::Column> cols = series->columns(axis, x0, x1, columns);
    for (int c = 0; c < columns && c < static_cast<int>(cols.size()); ++c) {
      if (cols[c].count > 0)
        grid.mean[static_cast<size_t>(r) * columns + c] = cols[c].sum / cols[c].count;
    }
  }

  std::vector<double> present;
  present.reserve(grid.ranks);
  for (int c = 0; c < columns; ++c) {
    present.clear();
    for (int r = 0; r < grid.ranks; ++r) {
      const double m = grid.meanAt(r, c);
      if (std::isfinite(m)) present.push_back(m);
    }
    if (present.empty()) continue;
    const double median = medianOf(present);
    grid.median[c] = median;
    for (int r = 0; r < grid.ranks; ++r) {
      const double m = grid.meanAt(r, c);
      if (!std::isfinite(m)) continue;
      double ratio = kNaN;
      if (median > 0) {
        ratio = m / median;
      } else if (m == median) {
        ratio = 1.0;  // all zero: nobody is slower than anybody
      }
      grid.ratio[static_cast<size_t>(r) * columns + c] = ratio;
    }
  }

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
