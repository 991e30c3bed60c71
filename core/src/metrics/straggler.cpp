#include "ringmaster/metrics/straggler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ringmaster::metrics {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

double medianOf(std::vector<double>& values) {
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower =
      *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

std::vector<double> divideByColumnMedian(std::vector<double>& values, int ranks, int n_columns) {
  std::vector<double> medians(static_cast<size_t>(std::max(n_columns, 0)), kNaN);
  std::vector<double> present;
  present.reserve(static_cast<size_t>(std::max(ranks, 0)));
  auto at = [&](int r, int c) -> double& {
    return values[static_cast<size_t>(r) * static_cast<size_t>(n_columns) + static_cast<size_t>(c)];
  };
  for (int c = 0; c < n_columns; ++c) {
    present.clear();
    for (int r = 0; r < ranks; ++r) {
      if (std::isfinite(at(r, c))) present.push_back(at(r, c));
    }
    if (present.empty()) continue;
    const double median = medianOf(present);
    medians[static_cast<size_t>(c)] = median;
    for (int r = 0; r < ranks; ++r) {
      double& v = at(r, c);
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

StragglerVerdict stragglerVerdictOf(const std::vector<StepColumn>& columns, int ranks,
                                    int n_columns) {
  StragglerVerdict verdict;
  if (ranks < 1 || n_columns < 1 ||
      columns.size() != static_cast<size_t>(ranks) * static_cast<size_t>(n_columns)) {
    return verdict;
  }
  std::vector<double> ratio(columns.size(), kNaN);
  for (size_t i = 0; i < columns.size(); ++i) {
    const StepColumn& col = columns[i];
    if (col.count == 0) continue;
    const bool drop = col.count >= 3;  // its one slowest step left out
    ratio[i] = drop ? (col.sum - col.max) / static_cast<double>(col.count - 1)
                    : col.sum / static_cast<double>(col.count);
  }
  divideByColumnMedian(ratio, ranks, n_columns);
  std::vector<double> mine;
  for (int r = 0; r < ranks; ++r) {
    mine.clear();
    for (int c = 0; c < n_columns; ++c) {
      const double v =
          ratio[static_cast<size_t>(r) * static_cast<size_t>(n_columns) + static_cast<size_t>(c)];
      if (!std::isnan(v)) mine.push_back(v);
    }
    if (mine.empty()) continue;
    const double median = medianOf(mine);
    if (verdict.rank < 0 || median > verdict.ratio) verdict = {r, median};
  }
  return verdict;
}

}  // namespace ringmaster::metrics
