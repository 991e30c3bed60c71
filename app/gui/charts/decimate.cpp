#include "charts/decimate.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ringmaster::gui {
namespace {

class Ema {
 public:
  explicit Ema(double weight) : weight_(weight) {}
  // Debiased so that the first values are not pulled towards zero.
  double add(double v) {
    acc_ = acc_ * weight_ + (1 - weight_) * v;
    debias_ *= weight_;
    return acc_ / (1 - debias_);
  }

 private:
  double weight_;
  double acc_ = 0;
  double debias_ = 1;
};

void widenRange(LineView* view, double y) {
  if (!view->has_values) {
    view->y_min = view->y_max = y;
    view->has_values = true;
  } else {
    view->y_min = std::min(view->y_min, y);
    view->y_max = std::max(view->y_max, y);
  }
}

}  // namespace

LineView decimateForView(const metrics::Series& s, const ViewRequest& req) {
  LineView view;
  if (s.empty() || req.columns <= 0 || !(req.x0 <= req.x1)) return view;
  const bool smooth = req.smoothing > 0;
  Ema ema(std::clamp(req.smoothing, 0.0, 0.999));

  size_t begin, end;
  s.indexRange(req.axis, req.x0, req.x1, &begin, &end);
  const size_t inside = s.upperBound(req.axis, req.x1) - s.lowerBound(req.axis, req.x0);
  if (inside <= 2 * static_cast<size_t>(req.columns)) {
    view.exact = true;
    view.raw.reserve(end - begin);
    if (smooth) view.smoothed.reserve(end - begin);
    for (size_t i = begin; i < end; ++i) {
      const double x = s.sortedX(i, req.axis), y = s.at(i).value;
      const bool in_view = x >= req.x0 && x <= req.x1;
      if (!std::isfinite(y)) {
        if (in_view) view.non_finite.push_back({x, y});
        continue;
      }
      view.raw.push_back({x, y});
      if (in_view) widenRange(&view, y);
      if (smooth) {
        const double e = ema.add(y);
        view.smoothed.push_back({x, e});
        if (in_view) widenRange(&view, e);
      }
    }
    return view;
  }

  const auto cols = s.columns(req.axis, req.x0, req.x1, req.columns);
  view.raw.reserve(2 * cols.size());
  if (smooth) view.smoothed.reserve(cols.size());
  for (const auto& c : cols) {
    if (c.count == 0) continue;
    // Min and max skip NaN (fmin/fmax) but keep the infinities; the sum turns NaN with any NaN.
    const double at = (c.first_x + c.last_x) / 2;
    const bool pos_inf = c.max == std::numeric_limits<double>::infinity();
    const bool neg_inf = c.min == -std::numeric_limits<double>::infinity();
    if (pos_inf) view.non_finite.push_back({at, c.max});
    if (neg_inf) view.non_finite.push_back({at, c.min});
    if (std::isnan(c.sum) && !(pos_inf && neg_inf)) {
      view.non_finite.push_back({at, std::numeric_limits<double>::quiet_NaN()});
    }
    const bool rising = !(c.last < c.first);
    double a = rising ? c.min : c.max, b = rising ? c.max : c.min;
    if (std::isfinite(a)) view.raw.push_back({c.first_x, a});
    if (b != a && std::isfinite(b)) view.raw.push_back({c.last_x, b});
    if (std::isfinite(c.min)) widenRange(&view, c.min);
    if (std::isfinite(c.max)) widenRange(&view, c.max);
    if (smooth) {
      const double mean = c.sum / static_cast<double>(c.count);
      if (!std::isfinite(mean)) continue;
      const double e = ema.add(mean);
      view.smoothed.push_back({(c.first_x + c.last_x) / 2, e});
      widenRange(&view, e);
    }
  }
  return view;
}

}  // namespace ringmaster::gui
