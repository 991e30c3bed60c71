#include "charts/outlier_clip.h"

#include <algorithm>
#include <cmath>

namespace ringmaster::gui {
namespace {

std::vector<double> finite(const std::vector<double>& values) {
  std::vector<double> out;
  out.reserve(values.size());
  for (double v : values) {
    if (std::isfinite(v)) out.push_back(v);
  }
  return out;
}

// The value at quantile q (0..1) of `values`, partly sorted in place.
double quantile(std::vector<double>& values, double q) {
  const auto k = static_cast<size_t>(std::llround(q * static_cast<double>(values.size() - 1)));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

}  // namespace

ClippedRange clipOutliers(const std::vector<std::vector<double>>& lines, double tail) {
  ClippedRange range{1, 0, 0};
  std::vector<double> all;
  std::vector<double> medians;
  for (const auto& line : lines) {
    std::vector<double> values = finite(line);
    if (values.empty()) continue;
    all.insert(all.end(), values.begin(), values.end());
    medians.push_back(quantile(values, 0.5));
  }
  if (all.empty()) return range;
  // Fences one inter-quantile spread beyond the quantiles: a curve's own values are never cut
  // (a falling loss spans its whole range), a spike far outside it is.
  const double q_lo = quantile(all, tail), q_hi = quantile(all, 1 - tail);
  const double spread = q_hi - q_lo;
  const auto [min, max] = std::minmax_element(all.begin(), all.end());
  range.lo = std::max(*min, q_lo - spread);
  range.hi = std::min(*max, q_hi + spread);
  for (double median : medians) {
    range.lo = std::min(range.lo, median);
    range.hi = std::max(range.hi, median);
  }
  for (double v : all) range.outside += (v < range.lo || v > range.hi) ? 1 : 0;
  return range;
}

}  // namespace ringmaster::gui
