#pragma once
// Round tick spacing for chart axes, so labels read 0.25, 0.50, 0.75 rather than 0.2371, 0.4742.

#include <string>
#include <vector>

namespace ringmaster::gui {

// The 1, 2 or 5 times a power of ten closest above span / target_ticks. 1 for a bad span.
double niceTickInterval(double span, int target_ticks);

// niceTickInterval(hi - lo, target_ticks), made smaller (down the 1, 2, 5 ladder) until at least
// `min_ticks` of its multiples lie in [lo, hi]: a short chart asked for 2 ticks over 0.983..1.004
// got 0.05 apart and showed a single label.
double niceTickIntervalWithin(double lo, double hi, int target_ticks, int min_ticks);

// Ticks for a log axis over [lo, hi] (log10 of the values), as the log10 of round values, at
// most `max_ticks` of them and at least 2 when the range allows: 1-9 x 10^k when few decades are
// shown, then 1, 2, 5 x 10^k, then 1, 3 x 10^k, then every decade, every 2nd, 5th, 10th...
// decade; within a factor too small for two of those, round linear steps of the values (0.96,
// 0.98, 1, 1.02). A loss from 2.3 to 0.3 on 300 px reads 0.3, 0.5, 1, 2 rather than 0.1, 1, 10.
std::vector<double> logTicks(double lo, double hi, int max_ticks);

// Round spacing for a wall-clock axis, in seconds: 1, 2, 5, 10, 15, 30 s, 1, 2, 5, 10, 15, 30 min,
// 1, 2, 3, 6, 12 h, 1, 2, 7 days (sub-second spans fall back to niceTickInterval).
double niceTimeInterval(double span_s, int target_ticks);

// The multiples of `interval` (shifted by `offset`: ticks sit at offset + k * interval) inside
// [lo, hi], at most 1000 of them.
std::vector<double> tickValues(double lo, double hi, double interval, double offset = 0);

// A printf format that shows every tick at `interval` apart without noise digits: "%.0f" for
// whole numbers, "%.2f" for 0.05 steps, "%.Ng" beyond 1e7 or below 1e-4 with N (3 or more) the
// significant digits that tell neighbouring ticks apart.
std::string tickLabelFormat(double interval, double max_abs);

// Elapsed time for a relative time axis: "0:05:00", "27:30:00" (hours go on past a day),
// "-0:00:05"; with milliseconds ("0:00:01.250") when ticks are under a second apart.
std::string formatElapsed(double seconds, double interval);

}  // namespace ringmaster::gui
