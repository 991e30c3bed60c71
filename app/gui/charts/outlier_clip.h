#pragma once
// A y range that leaves out the few extreme values of a chart (a loss spike of 10⁶ that flattens
// every curve to a line at zero) but never a whole line: each line's median stays in range, so a
// rank that diverges for good is still drawn, just not its spikes.
//
// Thread-safe: a pure function.

#include <cstddef>
#include <vector>

namespace ringmaster::gui {

struct ClippedRange {
  double lo = 0, hi = 0;
  size_t outside = 0;  // values of `lines` outside [lo, hi]
};

// The `tail` and 1 - `tail` quantiles of all finite values together, each moved out by their
// distance (never past the data), then widened to every line's median. Lines with no finite value
// are ignored; has no range (lo > hi) when none has one.
ClippedRange clipOutliers(const std::vector<std::vector<double>>& lines, double tail = 0.01);

}  // namespace ringmaster::gui
