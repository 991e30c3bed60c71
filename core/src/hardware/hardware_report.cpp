#include "ringmaster/hardware/hardware_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "ringmaster/hardware/straggler_history.h"

namespace ringmaster::hardware {
namespace {

constexpr double kOutlierPValue = 0.01;
constexpr int kOutlierMinFailed = 2;
constexpr int kOutlierMinHeldBack = 2;

// log C(n, k)
double logChoose(int n, int k) {
  return std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0);
}

// P(X >= k) for X the failed runs among `n` drawn from `total` runs of which `failed` failed
// (hypergeometric): how likely an entity in n runs is in k or more failed ones by chance.
double upperTail(int total, int failed, int n, int k) {
  double p = 0;
  const double all = logChoose(total, n);
  for (int i = k; i <= std::min(n, failed); ++i) {
    if (n - i > total - failed) continue;
    p += std::exp(logChoose(failed, i) + logChoose(total - failed, n - i) - all);
  }
  return std::min(p, 1.0);
}

// P(X >= k) for X the number of successes of independent trials with these chances
// (Poisson binomial): how likely an entity is to be the first to fail (or the one that held the
// others back) k times by chance, when in each such run its ranks were that share of the run's.
double byChanceTail(const std::vector<double>& shares, int k) {
  std::vector<double> p(shares.size() + 1, 0.0);  // p[j]: chance of j successes so far
  p[0] = 1;
  for (size_t t = 0; t < shares.size(); ++t) {
    for (size_t j = t + 1; j > 0; --j) p[j] = p[j] * (1 - shares[t]) + p[j - 1] * shares[t];
    p[0] *= 1 - shares[t];
  }
  double tail = 0;
  for (size_t j = static_cast<size_t>(std::max(k, 0)); j < p.size(); ++j) tail += p[j];
  return std::min(tail, 1.0);
}

std::string gpuTitle(const HardwareEntity& e) {
  std::string out = "GPU " + shortGpuUuid(e.id);
  if (e.gpu_index >= 0 || !e.gpu_name.empty()) {
    out += " (";
    if (e.gpu_index >= 0) out += "GPU " + std::to_string(e.gpu_index);
    if (!e.gpu_name.empty()) out += (e.gpu_index >= 0 ? ", " : "") + e.gpu_name;
    out += ")";
  }
  return out + " on " + e.host;
}

std::string outlierText(const HardwareEntity& e, const HardwareReport& report) {
  std::string out = e.kind == "gpu" ? gpuTitle(e) : "host " + e.id;
  if (namedAsSlow(e)) {
    char ratio[16];
    std::snprintf(ratio, sizeof ratio, "%.2f", e.held_back_ratio);
    return out + " held the others back in " + std::to_string(e.held_back) + " of its " +
           std::to_string(e.runs) + (e.runs == 1 ? " run" : " runs") + " (up to " + ratio +
           "x the median rank's busy time): it is slow, not failing";
  }
  if (e.failed > 0) {
    out += " was in " + std::to_string(e.failed) + " of the " + std::to_string(report.failed) +
           " failed runs and in " + std::to_string(e.succeeded) + " of " +
           std::to_string(report.succeeded) + " succeeded runs";
  } else {
    out += " was in " + std::to_string(e.runs) + (e.runs == 1 ? " run" : " runs") + ", none failed";
  }
  if (e.failed_first > 0) {
    out += std::string("; its rank failed first in ") +
           (e.failed_first == e.failed && e.failed > 1 ? "all " : "") +
           std::to_string(e.failed_first);
  }
  if (e.hangs > 0) out += "; " + std::to_string(e.hangs) + " of those runs hung";
  if (e.held_back > 0) {
    out += "; it held the others back in " + std::to_string(e.held_back) + " of its runs";
  }
  if (e.critical_faults > 0) {
    out += "; " + std::to_string(e.critical_faults) + " critical GPU fault" +
           (e.critical_faults == 1 ? "" : "s") + " under its ranks, the last: " + e.last_fault;
  }
  return out;
}

}  // namespace

bool namedAsSlow(const HardwareEntity& e) {
  return e.held_back >= kOutlierMinHeldBack && e.failed < kOutlierMinFailed &&
         e.critical_faults == 0;
}

std::string shortGpuUuid(const std::string& uuid) {
  constexpr size_t kShown = 12;  // "GPU-" and 8 hex digits
  return uuid.size() <= kShown + 1 ? uuid : uuid.substr(0, kShown) + "\u2026";
}

std::string entityLabel(const HardwareEntity& e) {
  if (e.kind == "host") return e.id;
  std::string label = "GPU " + std::to_string(e.gpu_index);
  if (!e.gpu_name.empty()) label += " " + e.gpu_name;
  if (!e.id.starts_with(e.host + "/")) label += " " + shortGpuUuid(e.id);
  return label;
}

HardwareRun::Place placeOf(const std::string& host, const std::string& device) {
  HardwareRun::Place place;
  place.host = host;
  if (!device.starts_with("GPU ")) return place;
  size_t at = 4;
  int index = 0;
  bool digits = false;
  while (at < device.size() && std::isdigit(static_cast<unsigned char>(device[at]))) {
    index = index * 10 + (device[at++] - '0');
    digits = true;
  }
  if (!digits) return place;
  place.gpu_index = index;
  std::string rest = device.substr(at);
  if (rest.starts_with(" ")) rest.erase(0, 1);
  const size_t open = rest.rfind('(');
  if (open != std::string::npos && rest.ends_with(")")) {
    place.gpu_uuid = rest.substr(open + 1, rest.size() - open - 2);
    rest.erase(open);
    while (rest.ends_with(" ")) rest.pop_back();
  }
  place.gpu_name = rest;
  return place;
}

Result<std::vector<HardwareRun>> hardwareRuns(store::Reader& history, double since) {
  RM_ASSIGN_OR_RETURN(auto jobs, history.jobs());
  std::vector<HardwareRun> runs;
  for (const store::JobRow& job : jobs) {
    // A preflight's link tests are seconds-long checks, not training runs: counted, they would
    // make every host look well proven (a 64-agent check ran 2,016 of them).
    if (job.submitted_at < since || store::isPreflightJob(job.name)) continue;
    RM_ASSIGN_OR_RETURN(auto events, history.events(job.job_id));
    std::optional<std::vector<store::SeriesRow>> series;  // read once, for the first run of 2+
    for (uint32_t attempt = 0; attempt <= job.attempt; ++attempt) {
      RM_ASSIGN_OR_RETURN(auto ranks, history.ranks(job.job_id, attempt));
      if (ranks.empty()) continue;
      HardwareRun run;
      run.job_id = job.job_id;
      run.job_name = job.name;
      run.attempt = attempt;
      run.time = job.submitted_at;
      std::map<int, int> place_of_rank;
      for (const store::RankRow& rank : ranks) {
        place_of_rank[rank.rank] = static_cast<int>(run.places.size());
        run.places.push_back(placeOf(rank.agent, rank.device));
      }
      auto placeOfRank = [&](int rank) {
        const auto it = place_of_rank.find(rank);
        return it == place_of_rank.end() ? -1 : it->second;
      };
      for (const store::EventRow& event : events) {
        if (event.attempt != attempt) continue;
        if (event.kind == "job_failure" && event.problem && run.outcome.empty()) {
          // A crash drill (ringmasterctl kill) ends the attempt as someone asked: not the
          // hardware's failure.
          if (event.cause_kind == "drill") {
            run.outcome = "stopped";
            continue;
          }
          run.outcome = "failed";
          run.failure = event.cause_kind;
          run.culprit = placeOfRank(event.rank);
        } else if (event.kind == "gpu_fault") {
          run.faults.push_back(
              {placeOfRank(event.rank), event.cause_kind, event.problem, event.detail});
        }
      }
      if (run.outcome.empty()) {
        if (attempt < job.attempt) {
          run.outcome = "stopped";  // replaced without a failure: a restart someone asked for
        } else if (job.state == "succeeded" || job.state == "failed" || job.state == "stopped") {
          run.outcome = job.state;
        } else {
          run.outcome = "running";
        }
      }
      if (run.places.size() >= 2) {
        if (!series) {
          RM_ASSIGN_OR_RETURN(series, history.jobSeries(job.job_id));
        }
        int64_t last_step = -1;
        for (const store::RankRow& rank : ranks) last_step = std::max(last_step, rank.last_step);
        RM_ASSIGN_OR_RETURN(const metrics::StragglerVerdict slowest,
                            attemptStraggler(history, *series, attempt, last_step));
        if (slowest.rank >= 0 && slowest.ratio >= kHeldBackRatio) {
          run.straggler = placeOfRank(slowest.rank);
          run.straggler_ratio = slowest.ratio;
        }
      }
      runs.push_back(std::move(run));
    }
  }
  return runs;
}

HardwareReport hardwareReport(const std::vector<HardwareRun>& runs) {
  HardwareReport report;
  // Hosts sort before GPUs ("gpu" > "host" would not): keyed by (0 host | 1 GPU, host, index, id).
  std::map<std::tuple<int, std::string, int, std::string>, HardwareEntity> entities;
  auto hostEntity = [&](const std::string& host) -> HardwareEntity& {
    HardwareEntity& e = entities[{0, host, -1, host}];
    e.kind = "host";
    e.id = e.host = host;
    return e;
  };
  auto gpuEntity = [&](const HardwareRun::Place& place) -> HardwareEntity* {
    if (place.gpu_index < 0) return nullptr;
    // A GPU without a UUID (declared without NVML) is known by its host and index.
    const std::string id = place.gpu_uuid.empty()
                               ? place.host + "/GPU " + std::to_string(place.gpu_index)
                               : place.gpu_uuid;
    HardwareEntity& e = entities[{1, place.host, place.gpu_index, id}];
    e.kind = "gpu";
    e.id = id;
    e.host = place.host;
    e.gpu_index = place.gpu_index;
    if (!place.gpu_name.empty()) e.gpu_name = place.gpu_name;
    return &e;
  };

  // By chance, any rank is as likely to fail first, or to be the slowest: an entity with r of a
  // run's n ranks with chance r/n. Each such run adds that share to `shares`.
  using Shares = std::map<HardwareEntity*, std::vector<double>>;
  auto addShares = [&](const HardwareRun& run, Shares& shares) {
    std::map<HardwareEntity*, int> ranks_on;
    for (const HardwareRun::Place& p : run.places) {
      ranks_on[&hostEntity(p.host)] += 1;
      if (HardwareEntity* gpu = gpuEntity(p)) ranks_on[gpu] += 1;
    }
    for (const auto& [e, count] : ranks_on) {
      shares[e].push_back(static_cast<double>(count) / run.places.size());
    }
  };
  auto addJob = [](std::vector<std::string>& jobs, const std::string& id) {
    if (std::find(jobs.begin(), jobs.end(), id) == jobs.end()) jobs.push_back(id);
  };
  Shares first_shares;  // per failed run it was in
  Shares held_shares;   // per run someone held back
  for (const HardwareRun& run : runs) {
    const bool failed = run.outcome == "failed", succeeded = run.outcome == "succeeded";
    report.runs += 1;
    report.failed += failed;
    report.succeeded += succeeded;
    std::set<HardwareEntity*> in_run;
    for (const HardwareRun::Place& place : run.places) {
      in_run.insert(&hostEntity(place.host));
      if (HardwareEntity* gpu = gpuEntity(place)) in_run.insert(gpu);
    }
    for (HardwareEntity* e : in_run) {
      e->runs += 1;
      e->succeeded += succeeded;
      if (!failed) continue;
      e->failed += 1;
      e->hangs += run.failure == "hung";
      addJob(e->failed_jobs, run.job_id);
    }
    if (failed && run.culprit >= 0) {
      const HardwareRun::Place& place = run.places[static_cast<size_t>(run.culprit)];
      hostEntity(place.host).failed_first += 1;
      if (HardwareEntity* gpu = gpuEntity(place)) gpu->failed_first += 1;
      addShares(run, first_shares);
    }
    if (run.straggler >= 0 && run.straggler < static_cast<int>(run.places.size())) {
      const HardwareRun::Place& place = run.places[static_cast<size_t>(run.straggler)];
      for (HardwareEntity* e : {&hostEntity(place.host), gpuEntity(place)}) {
        if (e == nullptr) continue;
        e->held_back += 1;
        e->held_back_ratio = std::max(e->held_back_ratio, run.straggler_ratio);
        addJob(e->held_back_jobs, run.job_id);
      }
      addShares(run, held_shares);
    }
    for (const HardwareRun::Fault& fault : run.faults) {
      if (fault.place < 0) continue;
      HardwareEntity* gpu = gpuEntity(run.places[static_cast<size_t>(fault.place)]);
      if (gpu == nullptr) continue;
      gpu->critical_faults += fault.critical;
      gpu->xids += fault.kind == "xid";
      gpu->memory_faults +=
          fault.kind == "ecc" || fault.kind == "row_remap" || fault.kind == "retired_pages";
      gpu->last_fault = fault.text;
    }
  }

  const int total = report.failed + report.succeeded;
  std::set<std::string> hosts_explained;  // hosts with an outlier GPU
  for (auto& [key, e] : entities) {
    const int n = e.failed + e.succeeded;
    // Either way of standing out: in more failed runs than chance puts it in, or failing first
    // in more of them than its share of their ranks.
    const double in_failed = total > 0 ? upperTail(total, report.failed, n, e.failed) : 1;
    const double failure_p = std::min(in_failed, byChanceTail(first_shares[&e], e.failed_first));
    const double held_p = byChanceTail(held_shares[&e], e.held_back);
    e.p_value = std::min(failure_p, held_p);
    const bool unlikely = (e.failed >= kOutlierMinFailed && failure_p < kOutlierPValue) ||
                          (e.held_back >= kOutlierMinHeldBack && held_p < kOutlierPValue);
    e.outlier = unlikely || (e.kind == "gpu" && e.critical_faults > 0);
    if (e.kind == "gpu" && e.outlier) hosts_explained.insert(e.host);
  }
  for (auto& [key, e] : entities) {
    if (e.kind == "host" && hosts_explained.contains(e.id)) e.outlier = false;
    report.entities.push_back(e);
  }
  for (size_t i = 0; i < report.entities.size(); ++i) {
    if (report.entities[i].outlier) report.outliers.push_back({"", i});
  }
  std::stable_sort(report.outliers.begin(), report.outliers.end(),
                   [&](const auto& a, const auto& b) {
                     return report.entities[a.entity].p_value < report.entities[b.entity].p_value;
                   });
  for (HardwareOutlier& outlier : report.outliers) {
    outlier.text = outlierText(report.entities[outlier.entity], report);
  }
  return report;
}

}  // namespace ringmaster::hardware
