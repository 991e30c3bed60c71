#pragma once
// An in-memory metric series (one metric of one rank): every point is kept, and a min/max
// pyramid answers "what does column c of a chart W pixels wide hold" in O(log n), so a redraw
// costs O(W log n) however many points the series has. Zoomed in far enough, the exact points
// come back instead of summaries: nothing is ever sampled away, every spike stays visible.
//
// Not thread-safe: one thread (the GUI thread) appends and reads.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace ringmaster::metrics {

// Which x a chart uses: the training step or the wall time (unix seconds) of the record.
enum class Axis { kStep, kTime };

class Series {
 public:
  struct Point {
    double step = 0;
    double time = 0;
    double value = 0;
  };

  // What one chart column holds: the points whose x lies in [x_begin, x_end) (the last column
  // also holds x == x_end). count == 0 for an empty column (the other fields are then 0).
  struct Column {
    double x_begin = 0, x_end = 0;
    size_t count = 0;
    double min = 0, max = 0;         // of the values
    double sum = 0;                  // of the values (mean = sum / count)
    double first = 0, last = 0;      // values of the first and last point in the column
    double first_x = 0, last_x = 0;  // their x
  };

  // Appends a point. Points are expected in increasing x for both axes; a point whose step is
  // lower than the last one (a restart from a checkpoint) is still kept, and column queries then
  // treat x as non-decreasing by clamping (documented in the implementation). Amortized O(1).
  //
  // Clamping: every query sees a point at sortedX(i) = max(x(0..i)), the running maximum, so the
  // points replayed after a restart pile up at the highest x reached before it (drawn as one
  // vertical stroke there) instead of folding the line back. A non-finite x counts as the previous
  // point's sortedX (0 for the first point). Values may be NaN: min and max skip NaN (a block of
  // NaN alone has NaN min/max) and sum becomes NaN.
  void append(double step, double time, double value);
  // Room for `points` in all (a series read whole from the history), and no more than it holds
  // (once complete): neither changes what it holds.
  void reserve(size_t points);
  void shrinkToFit();

  size_t size() const { return points_.size(); }
  bool empty() const { return points_.empty(); }
  const Point& at(size_t i) const { return points_[i]; }
  const Point& back() const { return points_.back(); }
  double x(size_t i, Axis axis) const;
  // x of point i as queries see it (see append): equal to x(i, axis) while x never decreases.
  double sortedX(size_t i, Axis axis) const;
  // Whether x has never gone backwards (nor been non-finite): sortedX(i) == x(i) throughout.
  bool monotonic(Axis axis) const { return !axes_[axis == Axis::kStep ? 0 : 1].clamped; }
  // The first index whose sortedX is >= x (size() when none). O(log n).
  size_t lowerBound(Axis axis, double x) const;
  // The first index whose sortedX is > x (size() when none). O(log n).
  size_t upperBound(Axis axis, double x) const;
  // The step reached by `time` (the sortedX step of the last point at or before it, so a replay
  // after a restart does not count as going back); nullopt when no point is that old. O(log n).
  std::optional<double> stepAt(double time) const;

  // The range of x over all points; {0, 0} when empty.
  double minX(Axis axis) const;
  double maxX(Axis axis) const;
  // min and max value of the points whose x lies in [x0, x1]; false when none does.
  bool valueRange(Axis axis, double x0, double x1, double* lo, double* hi) const;

  // [x0, x1] split into `columns` equal columns, one Column each (empty ones included), in
  // O(columns * log n). Equal to a brute-force scan of the points (sum up to rounding).
  // Column c spans [x0 + (x1 - x0) * c / columns, the next column's x_begin), the last one ends at
  // x1; a point belongs to the column whose span holds its sortedX. Empty when columns <= 0 or
  // when x1 < x0 (or either is NaN).
  std::vector<Column> columns(Axis axis, double x0, double x1, int columns) const;

  // The indices [*begin, *end) of the points with x in [x0, x1], widened by one point on each
  // side when there is one (so a line can be drawn to the edge of the view). O(log n).
  void indexRange(Axis axis, double x0, double x1, size_t* begin, size_t* end) const;

  // min, max and sum of the values of points [begin, end) through the pyramid, O(log n).
  // REQUIRES: begin < end <= size().
  void valueStats(size_t begin, size_t end, double* min, double* max, double* sum) const;

 private:
  std::vector<Point> points_;
  // Per axis: the last sortedX, the true range of x, and, only once x has gone backwards (or was
  // not finite), the materialized sortedX of every point. Monotonic series pay nothing for it.
  struct AxisState {
    double last_sorted = 0;
    double min = 0, max = 0;
    bool clamped = false;
    std::vector<double> sorted;
  };
  AxisState axes_[2];
  // levels_[k][j]: min/max/sum of points [j * kLeaf * 2^k, (j + 1) * kLeaf * 2^k). Leaves of
  // 16 points keep the pyramid at 3 bytes a point (24 with leaves of 2); a query reads at most
  // 15 points at either end one by one.
  static constexpr size_t kLeaf = 16;
  struct Block {
    double min, max, sum;
  };
  std::vector<std::vector<Block>> levels_;

  void trackX(Axis axis, double x);
  Block scan(size_t begin, size_t end) const;  // of points [begin, end), one by one
  Block blockOfRange(size_t begin, size_t end) const;
};

}  // namespace ringmaster::metrics
