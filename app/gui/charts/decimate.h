#pragma once
// What a chart line hands to Qt Charts for one view, computed from a metrics::Series without Qt:
// per pixel column the min and max (so every spike stays visible) when the view holds more than
// about two points per column, otherwise the exact points.

#include <vector>

#include "ringmaster/metrics/series.h"

namespace ringmaster::gui {

struct ViewPoint {
  double x = 0;
  double y = 0;
};

struct ViewRequest {
  metrics::Axis axis = metrics::Axis::kStep;
  double x0 = 0, x1 = 0;  // the visible x range, in the series' units (steps or unix seconds)
  int columns = 800;      // pixel columns of the plot area
  double smoothing = 0;   // EMA weight in [0, 1); 0 leaves `smoothed` empty
};

// A NaN or infinite value: not a point on the line, but never hidden either.
struct NonFinitePoint {
  double x = 0;
  double value = 0;  // NaN, +inf or -inf
};

struct LineView {
  // Decimated: per non-empty column, its min and max (one point when they are equal) at the
  // column's first and last x, ordered so the line runs from the column's first value to its last.
  // Exact: every point in the range plus one neighbour each side. Non-finite values are left out.
  std::vector<ViewPoint> raw;
  // EMA (debiased, as TensorBoard does) over column means, or over the exact points.
  std::vector<ViewPoint> smoothed;
  // Where the series holds NaN or ±Inf inside [x0, x1] (one per column and kind when
  // decimated): drawn as markers at the plot's edge, left out of the y range.
  std::vector<NonFinitePoint> non_finite;
  bool exact = false;
  // min/max of the finite values drawn inside [x0, x1] (raw and smoothed); has_values false when
  // there are none.
  bool has_values = false;
  double y_min = 0, y_max = 0;
};

// Decimated when more than 2 * columns points lie in the view; O(columns log n) then.
LineView decimateForView(const metrics::Series& series, const ViewRequest& request);

}  // namespace ringmaster::gui
