#pragma once
// Checkpoint economics of a running job: what a failure now would cost (the GPU-hours since the
// last checkpoint), what a checkpoint costs, what a restart costs, how often the job's hosts fail
// (their history), and the interval that loses least. Daly's model (2006, "A higher order
// estimate of the optimum checkpoint interval for restart dumps"): with checkpoints every tau
// seconds that take C, a restart that takes R and failures every M on average, work of T_s takes
//   T_w = M e^(R/M) (e^((tau + C)/M) - 1) T_s / tau,
// so a fraction 1 - T_s / T_w of the devices' time is lost to writing, restarting and redoing;
// it is least near Daly's tau = sqrt(2 C M) (1 + sqrt(C / 2M) / 3 + (C / 2M) / 9) - C (C < 2M;
// M otherwise), whose first term is Young's sqrt(2 C M). For C and R much smaller than M the
// loss is Young's C / tau + tau / 2M, plus R / M.

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
  double checkpoint_seconds = 0;  // how long one stops training (measured); 0: not measured
  double interval_seconds = 0;    // between the job's checkpoints now; 0: unknown
  // What a restart of this job took: from a failure to the next attempt's first step (the
  // median of its restarts); 0: it has not restarted.
  double restart_seconds = 0;
  double seconds_per_step = 0;  // 0: unknown
  // The job's expected failures per hour, from its hosts' history (jobFailuresPerHour); 0 when
  // the history has no failure of them.
  double failures_per_hour = 0;
};

struct CheckpointEconomics {
  double hours_at_risk = 0;          // device-hours since the newest checkpoint (or the start)
  double seconds_since = 0;          // since the newest checkpoint (or the start)
  std::optional<double> mtbf_hours;  // of the job
  std::optional<double> optimal_interval_seconds;  // Daly's
  std::optional<double> waste_per_day_now;         // device-hours a day at today's interval
  std::optional<double> waste_per_day_optimal;     // at Daly's
  std::optional<int64_t> optimal_every_steps;      // Daly's interval in steps
  std::string unit;                                // "GPU-hours" | "rank-hours"
  // "your interval (every 4.0 min) wastes about 0.90 GPU-hours a day; every 530 steps (7.1 min)
  // would waste 0.64", or that it is about the best already; or why there is no suggestion yet.
  std::string advice;
};

CheckpointEconomics checkpointEconomics(const CheckpointInputs& in);

// Daly's optimum interval for checkpoints that take `cost` seconds and failures every `mtbf`.
double dalyInterval(double cost, double mtbf);
// The fraction of the devices' time lost at checkpoints every `interval` (Daly's model).
double lostFraction(double interval, double cost, double restart, double mtbf);

// One line for the dashboard: "1.33 GPU-hours at risk (10.0 min since the last checkpoint, 8
// GPUs); a checkpoint stops training for 30 s, a restart 2.0 min; these hosts fail once every 125 h
// of this job; <advice>".
std::string checkpointSummary(const CheckpointInputs& in, const CheckpointEconomics& e);

// The job's expected failures per hour: each rank contributes its host's failures per
// rank-hour (HostRecord), hosts the history does not know contribute nothing. `rank_hosts`: the
// agent of each of the job's ranks.
double jobFailuresPerHour(const std::vector<std::string>& rank_hosts,
                          const std::vector<store::HostRecord>& records);

}  // namespace ringmaster::hardware
