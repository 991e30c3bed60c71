#pragma once
// The numbers behind the straggler heatmap, without Qt: for each rank and each time column, the
// rank's mean step time there divided by the median of all ranks' means in that column. A rank
// whose ratio stays well above 1 is a straggler: every collective waits for it.

#include <vector>

#include "ringmaster/metrics/series.h"
#include "ringmaster/metrics/straggler.h"

namespace ringmaster::gui {

struct StragglerGrid {
  int ranks = 0, columns = 0;
  double x0 = 0, x1 = 0;
  // ranks*columns, rank-major: mean step time / median across ranks in that column; NaN where no
  // data (the rank reported nothing there, or the median is not positive).
  std::vector<double> ratio;
  int slowest_rank = -1;     // highest mean ratio over the window (ignoring NaN); -1 when no data
  double slowest_ratio = 0;  // e.g. 1.8 = 80% slower than the median

  std::vector<double> mean;        // ranks*columns, rank-major: mean step time; NaN where none
  std::vector<double> median;      // per column: median of the ranks' means; NaN where none
  std::vector<double> rank_ratio;  // per rank: mean of its ratios; NaN when it has none

  double at(int rank, int column) const {
    return ratio[static_cast<size_t>(rank) * columns + column];
  }
  double meanAt(int rank, int column) const {
    return mean[static_cast<size_t>(rank) * columns + column];
  }
  double columnBegin(int column) const { return x0 + (x1 - x0) * column / columns; }
  double columnEnd(int column) const { return x0 + (x1 - x0) * (column + 1) / columns; }
};

// Who holds the others back over [x0, x1], told apart from a busy host's hiccups: the rule of
// ringmaster/metrics/straggler.h (the hardware history's too) over `columns` columns of x.
using metrics::StragglerVerdict;
StragglerVerdict stragglerVerdict(const std::vector<const metrics::Series*>& step_time_by_rank,
                                  metrics::Axis axis, double x0, double x1, int columns);

// Splits [x0, x1] into `columns` equal columns. A null pointer or an empty series is a rank with
// no data (a NaN row). Bad arguments (columns < 1, x1 < x0, a non-finite bound) give a grid with
// `ranks` set and no columns. Cost O(ranks * columns * log n) (Series::columns).
StragglerGrid computeStragglerGrid(const std::vector<const metrics::Series*>& step_time_by_rank,
                                   metrics::Axis axis, double x0, double x1, int columns);

// The x range that holds every point of every series ({0, 0} when there is none).
void stragglerDataRange(const std::vector<const metrics::Series*>& step_time_by_rank,
                        metrics::Axis axis, double* x0, double* x1);

}  // namespace ringmaster::gui
