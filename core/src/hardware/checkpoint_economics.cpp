#include "ringmaster/hardware/checkpoint_economics.h"

#include <cmath>
#include <cstdio>
#include <map>

namespace ringmaster::hardware {
namespace {

constexpr double kHoursPerDay = 24;

std::string minutesText(double seconds) {
  char out[32];
  if (seconds < 90) {
    std::snprintf(out, sizeof out, "%.0f s", seconds);
  } else if (seconds < 90 * 60) {
    std::snprintf(out, sizeof out, "%.1f min", seconds / 60);
  } else {
    std::snprintf(out, sizeof out, "%.1f h", seconds / 3600);
  }
  return out;
}

std::string hoursText(double hours) {
  char out[32];
  std::snprintf(out, sizeof out, hours < 10 ? "%.2f" : "%.0f", hours);
  return out;
}

double wastePerDay(double interval, const CheckpointInputs& in, double mtbf_seconds) {
  return in.devices * kHoursPerDay *
         lostFraction(interval, in.checkpoint_seconds, in.restart_seconds, mtbf_seconds);
}

}  // namespace

double dalyInterval(double cost, double mtbf) {
  if (cost >= 2 * mtbf) return mtbf;
  const double x = cost / (2 * mtbf);
  return std::sqrt(2 * cost * mtbf) * (1 + std::sqrt(x) / 3 + x / 9) - cost;
}

double lostFraction(double interval, double cost, double restart, double mtbf) {
  return 1 - interval * std::exp(-restart / mtbf) / (mtbf * std::expm1((interval + cost) / mtbf));
}

CheckpointEconomics checkpointEconomics(const CheckpointInputs& in) {
  CheckpointEconomics out;
  out.unit = in.on_gpus ? "GPU-hours" : "rank-hours";
  const double since = in.last_checkpoint > 0 ? in.last_checkpoint : in.started;
  out.seconds_since = since > 0 ? std::max(0.0, in.now - since) : 0;
  out.hours_at_risk = out.seconds_since / 3600 * in.devices;
  if (in.failures_per_hour <= 0) {
    out.advice = "no failure of these hosts in the history yet: no interval to suggest";
    return out;
  }
  out.mtbf_hours = 1 / in.failures_per_hour;
  if (in.checkpoint_seconds <= 0) {
    out.advice = "no checkpoint written yet: its cost is not measured";
    return out;
  }
  const double mtbf_seconds = *out.mtbf_hours * 3600;
  const double optimal = dalyInterval(in.checkpoint_seconds, mtbf_seconds);
  out.optimal_interval_seconds = optimal;
  out.waste_per_day_optimal = wastePerDay(optimal, in, mtbf_seconds);
  std::string suggestion;
  if (in.seconds_per_step > 0) {
    out.optimal_every_steps = std::max<int64_t>(1, std::llround(optimal / in.seconds_per_step));
    suggestion = "every " + std::to_string(*out.optimal_every_steps) + " steps (" +
                 minutesText(optimal) + ")";
  } else {
    suggestion = "every " + minutesText(optimal);
  }
  if (in.interval_seconds <= 0) {
    out.advice = "checkpoints " + suggestion + " would waste about " +
                 hoursText(*out.waste_per_day_optimal) + " " + out.unit + " a day";
    return out;
  }
  out.waste_per_day_now = wastePerDay(in.interval_seconds, in, mtbf_seconds);
  // Within 5% of the least loss, a change is not worth anyone's time.
  if (*out.waste_per_day_now <= 1.05 * *out.waste_per_day_optimal) {
    out.advice = "your interval (every " + minutesText(in.interval_seconds) +
                 ") is about the best (" + suggestion + "): about " +
                 hoursText(*out.waste_per_day_now) + " " + out.unit +
                 " a day go to checkpoints, restarts and redone work";
    return out;
  }
  out.advice = "your interval (every " + minutesText(in.interval_seconds) + ") wastes about " +
               hoursText(*out.waste_per_day_now) + " " + out.unit + " a day; " + suggestion +
               " would waste " + hoursText(*out.waste_per_day_optimal);
  return out;
}

std::string checkpointSummary(const CheckpointInputs& in, const CheckpointEconomics& e) {
  std::string out = hoursText(e.hours_at_risk) + " " + e.unit + " at risk (" +
                    minutesText(e.seconds_since) +
                    (in.last_checkpoint > 0 ? " since the last checkpoint, "
                                            : " since the start, no checkpoint yet, ") +
                    std::to_string(in.devices) + (in.on_gpus ? " GPU" : " rank") +
                    (in.devices == 1 ? "" : "s") + ")";
  if (in.checkpoint_seconds > 0) {
    char cost[32];
    std::snprintf(cost, sizeof cost, in.checkpoint_seconds < 10 ? "%.2g s" : "%.0f s",
                  in.checkpoint_seconds);
    out += std::string("; a checkpoint stops training for ") + cost;
  }
  if (in.restart_seconds > 0) {
    out += (in.checkpoint_seconds > 0 ? ", a restart " : "; a restart takes ") +
           minutesText(in.restart_seconds);
  }
  if (e.mtbf_hours) {
    out += "; these hosts fail once every " + minutesText(*e.mtbf_hours * 3600) + " of this job";
  }
  return out + "; " + e.advice;
}

double jobFailuresPerHour(const std::vector<std::string>& rank_hosts,
                          const std::vector<store::HostRecord>& records) {
  std::map<std::string, const store::HostRecord*> by_host;
  for (const store::HostRecord& record : records) by_host[record.agent] = &record;
  double rate = 0;
  for (const std::string& host : rank_hosts) {
    const auto it = by_host.find(host);
    if (it == by_host.end() || it->second->rank_seconds <= 0) continue;
    rate += it->second->failures / (it->second->rank_seconds / 3600);
  }
  return rate;
}

}  // namespace ringmaster::hardware
