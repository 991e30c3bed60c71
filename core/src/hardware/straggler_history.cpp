#include "ringmaster/hardware/straggler_history.h"

#include <algorithm>
#include <map>
#include <vector>

namespace ringmaster::hardware {
namespace {

struct RankSeries {
  int64_t step_time = 0, comm_wait = 0;  // series ids; 0: none
};

// A window's (step -> value) of one series.
Result<std::map<int64_t, double>> window(store::Reader& history, int64_t series, int64_t step) {
  std::map<int64_t, double> points;
  RM_RETURN_IF_ERROR(
      history.forEachPointFrom(series, step, kStragglerWindowSteps,
                               [&](int64_t at, double value, double) { points[at] = value; }));
  return points;
}

}  // namespace

Result<metrics::StragglerVerdict> attemptStraggler(store::Reader& history,
                                                   const std::vector<store::SeriesRow>& series,
                                                   uint32_t attempt, int64_t last_step) {
  std::map<int, RankSeries> by_rank;
  for (const store::SeriesRow& s : series) {
    if (s.attempt != attempt) continue;
    if (s.name == "step_time") by_rank[s.rank].step_time = s.id;
    if (s.name == "comm_wait") by_rank[s.rank].comm_wait = s.id;
  }
  std::erase_if(by_rank, [](const auto& entry) { return entry.second.step_time == 0; });
  if (by_rank.size() < 2 || last_step < 0) return metrics::StragglerVerdict{};
  // The attempt's steps: every rank takes the same ones, so the first rank's first step places
  // the windows for all.
  int64_t first_step = -1;
  RM_RETURN_IF_ERROR(
      history.forEachPointFrom(by_rank.begin()->second.step_time, 0, 1,
                               [&](int64_t step, double, double) { first_step = step; }));
  if (first_step < 0 || first_step > last_step) return metrics::StragglerVerdict{};

  // Busy time only where every rank has it: one rank's step time against the others' busy time
  // would make it the straggler.
  const bool busy_time = std::all_of(by_rank.begin(), by_rank.end(),
                                     [](const auto& entry) { return entry.second.comm_wait != 0; });
  const int n_ranks = static_cast<int>(by_rank.size());
  std::vector<metrics::StepColumn> columns(static_cast<size_t>(n_ranks) * kStragglerColumns);
  std::vector<int> rank_of(static_cast<size_t>(n_ranks));
  const double span = static_cast<double>(last_step - first_step + 1);
  int r = 0;
  for (const auto& [rank, ids] : by_rank) {
    rank_of[static_cast<size_t>(r)] = rank;
    for (int c = 0; c < kStragglerColumns; ++c) {
      // Window c starts c/columns of the way through the attempt.
      const int64_t start = first_step + static_cast<int64_t>(span * c / kStragglerColumns);
      RM_ASSIGN_OR_RETURN(auto steps, window(history, ids.step_time, start));
      std::map<int64_t, double> waits;
      if (busy_time) {
        RM_ASSIGN_OR_RETURN(waits, window(history, ids.comm_wait, start));
      }
      metrics::StepColumn& col = columns[static_cast<size_t>(r) * kStragglerColumns + c];
      for (const auto& [step, value] : steps) {
        auto wait = waits.find(step);
        const double busy = wait == waits.end() ? value : value - wait->second;
        col.sum += busy;
        col.max = col.count == 0 ? busy : std::max(col.max, busy);
        ++col.count;
      }
    }
    ++r;
  }
  metrics::StragglerVerdict verdict =
      metrics::stragglerVerdictOf(columns, n_ranks, kStragglerColumns);
  if (verdict.rank >= 0) verdict.rank = rank_of[static_cast<size_t>(verdict.rank)];
  return verdict;
}

}  // namespace ringmaster::hardware
