#pragma once
// Who holds the others back, told apart from a busy host's hiccups: the one rule behind the
// dashboard's straggler sentence (app/gui/straggler) and the hardware history's straggler
// counts (hardware/straggler_history.h). Each rank's step times (busy time where the workers
// report their communication wait) are cut into columns (of time, or of steps); a rank's value
// in a column is its mean without its one slowest step there (a step descheduled once is not a
// straggler); its ratio there is that value over the column's median across ranks; and its
// verdict ratio is the median of its column ratios (a few bad columns are not one either). A
// rank slowed for good is named once it is slow in half the columns; one slow now and then never.

#include <cstddef>
#include <vector>

namespace ringmaster::metrics {

// One rank's steps in one column.
struct StepColumn {
  size_t count = 0;
  double sum = 0, max = 0;  // of the step times
};

struct StragglerVerdict {
  int rank = -1;     // the rank with the highest ratio; -1 when no rank has data
  double ratio = 0;  // e.g. 1.8 = 80% slower than the median
};

// `columns`: ranks*n_columns, rank-major; a column with no step is no data.
StragglerVerdict stragglerVerdictOf(const std::vector<StepColumn>& columns, int ranks,
                                    int n_columns);

// Divides each column of `values` (ranks*n_columns, rank-major) by the median across ranks of
// its finite values, in place: NaN where that median is not positive, 1 where every rank is at
// zero. Returns the medians (NaN for a column with no value).
std::vector<double> divideByColumnMedian(std::vector<double>& values, int ranks, int n_columns);

// The median of `values` (reordered); REQUIRES !values.empty().
double medianOf(std::vector<double>& values);

}  // namespace ringmaster::metrics
