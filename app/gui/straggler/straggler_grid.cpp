#include "straggler/straggler_grid.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ringmaster::gui {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ranks*columns, rank-major: each rank's steps in each column of [x0, x1].
std::vector<metrics::StepColumn> stepColumns(
    const std::vector<const metrics::Series*>& step_time_by_rank, metrics::Axis axis, double x0,
    double x1, int columns) {
  std::vector<metrics::StepColumn> out(step_time_by_rank.size() * columns);
  for (size_t r = 0; r < step_time_by_rank.size(); ++r) {
    const metrics::Series* series = step_time_by_rank[r];
    if (series == nullptr || series->empty()) continue;
    const std::vector<metrics::Series::Column> cols = series->columns(axis, x0, x1, columns);
    for (int c = 0; c < columns && c < static_cast<int>(cols.size()); ++c) {
      out[r * columns + c] = {cols[c].count, cols[c].sum, cols[c].max};
    }
  }
  return out;
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
  // The cells show plain means: a hiccup is visible where it happened.
  const std::vector<metrics::StepColumn> steps =
      stepColumns(step_time_by_rank, axis, x0, x1, columns);
  grid.mean.assign(steps.size(), kNaN);
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].count > 0) grid.mean[i] = steps[i].sum / static_cast<double>(steps[i].count);
  }
  grid.ratio = grid.mean;
  grid.median = metrics::divideByColumnMedian(grid.ratio, grid.ranks, columns);
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
  if (badRange(x0, x1, columns)) return {};
  return metrics::stragglerVerdictOf(stepColumns(step_time_by_rank, axis, x0, x1, columns),
                                     static_cast<int>(step_time_by_rank.size()), columns);
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
