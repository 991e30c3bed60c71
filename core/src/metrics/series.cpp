#include "ringmaster/metrics/series.h"

#include <algorithm>
#include <cmath>

namespace ringmaster::metrics {
namespace {

int axisIndex(Axis axis) { return axis == Axis::kStep ? 0 : 1; }

double rawX(const Series::Point& p, Axis axis) { return axis == Axis::kStep ? p.step : p.time; }

}  // namespace

void Series::append(double step, double time, double value) {
  points_.push_back({step, time, value});
  trackX(Axis::kStep, step);
  trackX(Axis::kTime, time);

  // A leaf completes every kLeaf points; a block of level k completes when its level reaches an
  // even count, and may complete its parent, so the carry walks up like a binary counter.
  const size_t n = points_.size();
  if (n % kLeaf != 0) return;
  if (levels_.empty()) levels_.emplace_back();
  levels_[0].push_back(scan(n - kLeaf, n));
  for (size_t k = 0; levels_[k].size() % 2 == 0; ++k) {
    const Block& l = levels_[k][levels_[k].size() - 2];
    const Block& r = levels_[k].back();
    const Block parent{std::fmin(l.min, r.min), std::fmax(l.max, r.max), l.sum + r.sum};
    if (levels_.size() == k + 1) levels_.emplace_back();
    levels_[k + 1].push_back(parent);
  }
}

void Series::reserve(size_t points) {
  points_.reserve(points);
  for (AxisState& axis : axes_) {
    if (axis.clamped) axis.sorted.reserve(points);
  }
}

void Series::shrinkToFit() {
  points_.shrink_to_fit();
  for (AxisState& axis : axes_) axis.sorted.shrink_to_fit();
  for (auto& level : levels_) level.shrink_to_fit();
}

void Series::trackX(Axis axis, double x) {
  AxisState& s = axes_[axisIndex(axis)];
  const bool first = points_.size() == 1;
  if (std::isfinite(x)) {
    s.min = first ? x : std::min(s.min, x);
    s.max = first ? x : std::max(s.max, x);
  }
  const double sorted =
      std::isfinite(x) ? (first ? x : std::max(s.last_sorted, x)) : (first ? 0.0 : s.last_sorted);
  if (!s.clamped && sorted != x) {
    // First time x goes backwards: from now on queries read the materialized running maximum.
    s.clamped = true;
    s.sorted.reserve(points_.capacity());
    for (size_t i = 0; i + 1 < points_.size(); ++i) s.sorted.push_back(rawX(points_[i], axis));
  }
  if (s.clamped) s.sorted.push_back(sorted);
  s.last_sorted = sorted;
}

double Series::x(size_t i, Axis axis) const { return rawX(points_[i], axis); }

double Series::sortedX(size_t i, Axis axis) const {
  const AxisState& s = axes_[axisIndex(axis)];
  return s.clamped ? s.sorted[i] : rawX(points_[i], axis);
}

size_t Series::lowerBound(Axis axis, double x) const {
  const AxisState& s = axes_[axisIndex(axis)];
  if (s.clamped) return std::lower_bound(s.sorted.begin(), s.sorted.end(), x) - s.sorted.begin();
  auto it = std::partition_point(points_.begin(), points_.end(),
                                 [&](const Point& p) { return rawX(p, axis) < x; });
  return it - points_.begin();
}

size_t Series::upperBound(Axis axis, double x) const {
  const AxisState& s = axes_[axisIndex(axis)];
  if (s.clamped) return std::upper_bound(s.sorted.begin(), s.sorted.end(), x) - s.sorted.begin();
  auto it = std::partition_point(points_.begin(), points_.end(),
                                 [&](const Point& p) { return rawX(p, axis) <= x; });
  return it - points_.begin();
}

std::optional<double> Series::stepAt(double time) const {
  const size_t after = upperBound(Axis::kTime, time);
  if (after == 0) return std::nullopt;
  return sortedX(after - 1, Axis::kStep);
}

double Series::minX(Axis axis) const { return empty() ? 0 : axes_[axisIndex(axis)].min; }

double Series::maxX(Axis axis) const { return empty() ? 0 : axes_[axisIndex(axis)].max; }

Series::Block Series::scan(size_t begin, size_t end) const {
  // NaN seeds min/max so that fmin/fmax take the first real value.
  Block acc{NAN, NAN, 0};
  for (size_t i = begin; i < end; ++i) {
    const double v = points_[i].value;
    acc.min = std::fmin(acc.min, v);
    acc.max = std::fmax(acc.max, v);
    acc.sum += v;
  }
  return acc;
}

Series::Block Series::blockOfRange(size_t begin, size_t end) const {
  // The points outside whole leaves one by one, then bottom-up over aligned blocks: at each level
  // take the odd block at either edge, then halve.
  size_t a = (begin + kLeaf - 1) / kLeaf, b = end / kLeaf;  // whole leaves [a, b)
  if (a >= b) return scan(begin, end);
  Block acc = scan(begin, a * kLeaf);
  auto add = [&acc](const Block& blk) {
    acc.min = std::fmin(acc.min, blk.min);
    acc.max = std::fmax(acc.max, blk.max);
    acc.sum += blk.sum;
  };
  add(scan(b * kLeaf, end));
  for (size_t k = 0; a < b; ++k, a >>= 1, b >>= 1) {
    if (a & 1) add(levels_[k][a++]);
    if (b & 1) add(levels_[k][--b]);
  }
  return acc;
}

void Series::valueStats(size_t begin, size_t end, double* min, double* max, double* sum) const {
  const Block b = blockOfRange(begin, end);
  *min = b.min;
  *max = b.max;
  *sum = b.sum;
}

bool Series::valueRange(Axis axis, double x0, double x1, double* lo, double* hi) const {
  if (!(x0 <= x1)) return false;
  const size_t a = lowerBound(axis, x0), b = upperBound(axis, x1);
  if (a >= b) return false;
  const Block blk = blockOfRange(a, b);
  *lo = blk.min;
  *hi = blk.max;
  return true;
}

std::vector<Series::Column> Series::columns(Axis axis, double x0, double x1, int columns) const {
  std::vector<Column> out;
  if (columns <= 0 || !(x0 <= x1)) return out;
  out.resize(columns);
  const double span = x1 - x0;
  for (int c = 0; c < columns; ++c) out[c].x_begin = x0 + span * (static_cast<double>(c) / columns);
  for (int c = 0; c + 1 < columns; ++c) out[c].x_end = out[c + 1].x_begin;
  out.back().x_end = x1;

  size_t a = lowerBound(axis, x0);
  for (int c = 0; c < columns; ++c) {
    Column& col = out[c];
    const size_t b = c + 1 < columns ? lowerBound(axis, col.x_end) : upperBound(axis, x1);
    if (b > a) {
      const Block blk = blockOfRange(a, b);
      col.count = b - a;
      col.min = blk.min;
      col.max = blk.max;
      col.sum = blk.sum;
      col.first = points_[a].value;
      col.last = points_[b - 1].value;
      col.first_x = sortedX(a, axis);
      col.last_x = sortedX(b - 1, axis);
    }
    a = std::max(a, b);
  }
  return out;
}

void Series::indexRange(Axis axis, double x0, double x1, size_t* begin, size_t* end) const {
  if (empty() || !(x0 <= x1)) {
    *begin = *end = 0;
    return;
  }
  size_t a = lowerBound(axis, x0), b = upperBound(axis, x1);
  if (a > 0) --a;
  if (b < size()) ++b;
  *begin = a;
  *end = b;
}

}  // namespace ringmaster::metrics
