#pragma once
// Who held a run back, read from the history: the dashboard's straggler rule
// (ringmaster/metrics/straggler.h) over a whole attempt, for the hardware report. A host or GPU
// that is the straggler run after run (a GPU at a low clock, a NIC that negotiated a lower speed)
// never fails a job, so failures alone never name it.
//
// The read is bounded whatever the run's length: kStragglerColumns windows of
// kStragglerWindowSteps steps spread over the attempt, each found by a binary search of index
// seeks (store::Reader::forEachPointFrom). A rank's value is its busy time (step_time minus
// comm_wait, the time the others waited for it) where its workers report both, else step_time.

#include <cstdint>
#include <vector>

#include "ringmaster/metrics/straggler.h"
#include "ringmaster/store/reader.h"
#include "ringmaster/util/result.h"

namespace ringmaster::hardware {

inline constexpr int kStragglerColumns = 8;
inline constexpr int kStragglerWindowSteps = 32;
// A rank whose verdict ratio reaches this held the others back. Lower than the dashboard's
// header (1.5): over a whole run the rule is steadier than over its last 30 s (a busy host's
// verdict stayed under 1.06 in a real 8-rank replay), and a GPU held at 80% of its clock is
// 1.25x.
inline constexpr double kHeldBackRatio = 1.2;

// The verdict over one attempt: the rank (as the history numbers it) and its ratio; rank -1
// when fewer than two ranks reported step times. `series`: the job's (Reader::jobSeries);
// `last_step`: the attempt's highest step over its ranks (RankRow::last_step).
Result<metrics::StragglerVerdict> attemptStraggler(store::Reader& history,
                                                   const std::vector<store::SeriesRow>& series,
                                                   uint32_t attempt, int64_t last_step);

}  // namespace ringmaster::hardware
