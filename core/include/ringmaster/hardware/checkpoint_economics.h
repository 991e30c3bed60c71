#pragma once
// Checkpoint economics of a running job: what a failure now would cost (the GPU-hours since the
// last checkpoint), what a checkpoint costs, how often the job's hosts fail (their history), and
// the interval that loses least — Young's first-order optimum, interval = sqrt(2 · cost · MTBF),
// with the loss per unit of time W(interval) = cost / interval + interval / (2 · MTBF): the time
// spent writing plus, on average, half an interval of work redone at each failure.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/store/rows.h"

namespace ringmaster::hardware {

struct CheckpointInputs {
  int devices = 0;                // the job's ranks (GPUs, or CPU ranks)
  bool on_gpus = true;            // "GPU-hours" or "rank-hours"
  double now = 0;                 // unix seconds
  double last_checkpoint = 0;     // unix seconds of the newest checkpoint; 0: none yet
  double started = 0;             // unix seconds the attempt started (work at risk before any save)
  double checkpoint_seconds = 0;  // the measured cost of writing one; 0: not measured
  double interval_seconds = 0;    // between the job's checkpoints now; 0: unknown
  double seconds_per_step = 0;    // 0: unknown
  // The job's expected failures per hour, from its hosts' history (jobFailuresPerHour); 0 when
  // the history has no failure of them.
  double failures_per_hour = 0;
};

struct CheckpointEconomics {
  double hours_at_risk = 0;          // device-hours since the newest checkpoint (or the start)
  double seconds_since = 0;          // since the newest checkpoint (or the start)
  std::optional<double> mtbf_hours;  // of the job
  std::optional<double> optimal_interval_seconds;  // Young's
  std::optional<double> waste_per_day_now;         // device-hours a day at today's interval
  std::optional<double> waste_per_day_optimal;     // at Young's
  std::optional<int64_t> optimal_every_steps;      // Young's interval in steps
  std::string unit;                                // "GPU-hours" | "rank-hours"
  // "your interval (every 4.0 min) wastes about 0.90 GPU-hours a day; every 530 steps (7.1 min)
  // would waste 0.64", or that it is about the best already; or why there is no suggestion yet.
  std::string advice;
};

CheckpointEconomics checkpointEconomics(const CheckpointInputs& in);

// One line for the dashboard: "1.33 GPU-hours at risk (10.0 min since the last checkpoint, 8
// GPUs); a checkpoint takes 30 s; these hosts fail once every 125 h of this job; <advice>".
std::string checkpointSummary(const CheckpointInputs& in, const CheckpointEconomics& e);

// The job's expected failures per hour: each rank contributes its host's failures per
// rank-hour (HostRecord), hosts the history does not know contribute nothing. `rank_hosts`: the
// agent of each of the job's ranks.
double jobFailuresPerHour(const std::vector<std::string>& rank_hosts,
                          const std::vector<store::HostRecord>& records);

}  // namespace ringmaster::hardware
