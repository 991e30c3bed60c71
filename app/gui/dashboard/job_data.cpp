#include "dashboard/job_data.h"

#include <algorithm>

#include "ringmaster/job/spec.h"

namespace ringmaster::gui {
namespace {

constexpr size_t kMaxPendingTotals = 4096;

std::string eventKey(const std::string& source, uint64_t seq, uint32_t attempt) {
  return source + "#" + std::to_string(seq) + "#" + std::to_string(attempt);
}

}  // namespace

JobData::JobData(std::string job_id) : job_id_(std::move(job_id)) {}

void JobData::ingest(const std::string& agent, const proto::JournalRecord& r) {
  if (r.attempt() > attempt_) {
    // A new attempt: its ranks start from scratch, perhaps fewer of them on fewer hosts (their
    // series go on, from the checkpoint's step).
    attempt_ = r.attempt();
    restarting_ = false;
    outcome_.clear();  // a client may restart a job that was over
    ranks_.clear();    // its JobAccepted records say which ranks it has
  }
  const double time = r.time();
  if (start_time_ == 0 || time < start_time_) start_time_ = time;
  // Records of an older attempt that arrive late (from another agent) are events and metrics,
  // not the state of the ranks now.
  const bool older = r.attempt() < attempt_ && (r.has_job_accepted() || r.has_rank_started() ||
                                                r.has_rank_exited() || r.has_job_restart());
  switch (older ? proto::JournalRecord::KIND_NOT_SET : r.kind_case()) {
    case proto::JournalRecord::kJobAccepted: {
      const auto& a = r.job_accepted();
      name_ = a.name();
      launcher_ = store::launcherNameOf(a.launcher());
      world_size_ = a.world_size();
      if (auto parsed = job::parseJobSpec(a.spec_yaml(), a.name()); parsed.ok()) {
        max_restarts_ = parsed.spec->restart.max_restarts;
      }
      for (const auto& assignment : a.ranks()) {
        RankInfo& info = ranks_[assignment.rank()];
        info.rank = assignment.rank();
        info.local_rank = assignment.local_rank();
        info.agent = agent;
      }
      break;
    }
    case proto::JournalRecord::kRankStarted: {
      const auto& s = r.rank_started();
      RankInfo& info = ranks_[s.rank()];
      info.rank = s.rank();
      info.local_rank = s.local_rank();
      info.agent = agent;
      info.pid = s.pid();
      info.device = s.device();
      info.state = "running";
      info.started = time;
      info.last_update = time;
      break;
    }
    case proto::JournalRecord::kRankExited: {
      const auto& e = r.rank_exited();
      RankInfo& info = ranks_[e.rank()];
      info.rank = e.rank();
      if (info.agent.empty()) info.agent = agent;
      info.state = store::rankExitStateOf(e);
      info.exit_code = e.exit_code();
      info.signal = e.signal();
      info.error = e.error();
      info.finished = time;
      info.last_update = time;
      break;
    }
    case proto::JournalRecord::kMetric: {
      const auto& m = r.metric();
      RankInfo& info = ranks_[m.rank()];
      info.rank = m.rank();
      if (info.agent.empty()) info.agent = agent;
      info.step = std::max(info.step, m.step());
      info.last_update = time;
      const double step = static_cast<double>(m.step());
      double step_time = 0, comm_wait = 0;
      int timing = 0;
      for (const auto& v : m.values()) {
        if (v.name() == "samples_per_sec") info.samples_per_sec = v.value();
        if (v.name() == "step_time") step_time = v.value(), timing |= 1;
        if (v.name() == "comm_wait") comm_wait = v.value(), timing |= 2;
        addPoint(v.name(), m.rank(), step, time, v.value());
      }
      if (timing == 3) addPoint(kBusyTime, m.rank(), step, time, step_time - comm_wait);
      max_step_ = std::max(max_step_, m.step());
      break;
    }
    case proto::JournalRecord::kJobRestart:
      if (r.attempt() == attempt_) restarting_ = true;
      break;
    case proto::JournalRecord::kJobOutcome:
      outcome_ = store::jobStateNameOf(r.job_outcome().state());
      break;
    default:
      break;
  }
  if (store::EventRow row = store::eventOf(agent, r); !row.kind.empty()) {
    row.time = time;
    addEvent(eventKey(r.source(), r.seq(), r.attempt()), eventFrom(row));
  }
  ++version_;
}

void JobData::ingestHealth(const std::string& agent, const proto::JournalRecord& r) {
  if (!r.has_health()) return;
  addHealth(agent, r.time(), r.health());
  ++version_;
}

void JobData::setSlurm(const store::SlurmJobRow& row) {
  slurm_ = row;
  ++version_;
}

void JobData::ingestSnapshot(const client::JobSnapshot& s) {
  if (s.slurm) slurm_ = s.slurm;
  name_ = s.job.name;
  launcher_ = s.job.launcher;
  world_size_ = s.job.world_size;
  attempt_ = std::max(attempt_, s.job.attempt);
  stored_state_ = s.job.state;
  if (start_time_ == 0 || (s.job.submitted_at > 0 && s.job.submitted_at < start_time_)) {
    start_time_ = s.job.submitted_at;
  }
  stored_end_time_ = s.job.finished_at;
  for (const auto& row : s.ranks) {
    RankInfo& info = ranks_[row.rank];
    info.rank = row.rank;
    info.local_rank = row.local_rank;
    info.agent = row.agent;
    info.device = row.device;
    info.pid = row.pid;
    info.state = row.state;
    info.exit_code = row.exit_code;
    info.signal = row.signal;
    info.error = row.error;
    info.step = std::max(info.step, row.last_step);
    info.started = row.started_at;
    info.finished = row.finished_at;
  }
  for (const auto& row : s.events) {
    if (row.kind == "job_outcome") outcome_ = s.job.state;
    addEvent(eventKey(row.source, row.seq, row.attempt), eventFrom(row));
  }
  std::sort(events_.begin(), events_.end(),
            [](const JobEvent& a, const JobEvent& b) { return a.time < b.time; });
  for (const auto& row : s.metrics) {
    addPoint(row.name, row.rank, static_cast<double>(row.step), row.time, row.value);
    // An earlier attempt's ranks may be gone or numbered otherwise now: lines, not rank rows.
    if (row.attempt < attempt_) continue;
    RankInfo& info = ranks_[row.rank];
    info.rank = row.rank;
    info.step = std::max(info.step, row.step);
    info.last_update = std::max(info.last_update, row.time);
    if (row.name == "samples_per_sec") info.samples_per_sec = row.value;
    max_step_ = std::max(max_step_, row.step);
  }
  deriveBusyTime();
  deriveJobTotal();
  for (const auto& row : s.health) addHealth(row.agent, row.time, row.sample);
  ++version_;
}

void JobData::addPoint(const std::string& name, int rank, double step, double time, double value) {
  auto found = metrics_.find(name);
  if (found == metrics_.end()) {
    metric_names_.push_back(name);
    found = metrics_.emplace(name, std::map<int, metrics::Series>{}).first;
  }
  metrics::Series& series = found->second[rank];
  // Replays (a snapshot overlapping live records) add nothing; a restart from a checkpoint
  // (a step going back with a newer attempt) is kept.
  if (!series.empty() && step <= series.back().step && time <= series.back().time) return;
  series.append(step, time, value);
  ++points_;
  if (name != "samples_per_sec" || rank < 0 || world_size_ <= 0) return;
  auto& [sum, count] = pending_totals_[static_cast<int64_t>(step)];
  sum += value;
  if (++count >= world_size_) {
    metrics::Series& total = found->second[kJobTotal];
    if (total.empty() || step > total.back().step) total.append(step, time, sum);
    pending_totals_.erase(static_cast<int64_t>(step));
  }
  while (pending_totals_.size() > kMaxPendingTotals) pending_totals_.erase(pending_totals_.begin());
}

void JobData::deriveBusyTime() {
  const auto* step_time = metric("step_time");
  const auto* comm_wait = metric("comm_wait");
  if (!step_time || !comm_wait) return;
  for (const auto& [rank, total] : *step_time) {
    auto wait = comm_wait->find(rank);
    if (wait == comm_wait->end()) continue;
    // Both series hold one point per step, in step order: walk them together.
    size_t j = 0;
    for (size_t i = 0; i < total.size(); ++i) {
      const auto& p = total.at(i);
      while (j < wait->second.size() && wait->second.at(j).step < p.step) ++j;
      if (j < wait->second.size() && wait->second.at(j).step == p.step) {
        addPoint(kBusyTime, rank, p.step, p.time, p.value - wait->second.at(j).value);
      }
    }
  }
}

// The snapshot's points come rank by rank, so the live path's per-step sums (bounded) never
// complete: the job total is rebuilt from every rank's series, one point per step all ranks
// reported, in step order.
void JobData::deriveJobTotal() {
  auto found = metrics_.find("samples_per_sec");
  if (found == metrics_.end() || world_size_ <= 0) return;
  struct StepSum {
    double sum = 0, time = 0;
    int ranks = 0;
  };
  std::map<int64_t, StepSum> steps;
  for (const auto& [rank, series] : found->second) {
    if (rank < 0) continue;
    for (size_t i = 0; i < series.size(); ++i) {
      const auto& p = series.at(i);
      StepSum& s = steps[static_cast<int64_t>(p.step)];
      s.sum += p.value;
      s.time = std::max(s.time, p.time);
      ++s.ranks;
    }
  }
  metrics::Series total;
  for (const auto& [step, s] : steps) {
    if (s.ranks >= world_size_) total.append(static_cast<double>(step), s.time, s.sum);
  }
  if (total.empty()) return;
  found->second[kJobTotal] = std::move(total);
  pending_totals_.clear();
}

// The history's event, with the rank it is about and its agent (a failure's culprit's).
JobEvent JobData::eventFrom(const store::EventRow& row) {
  JobEvent event;
  event.time = row.time;
  event.kind = row.kind;
  event.agent = row.rank_agent.empty() ? row.agent : row.rank_agent;
  event.detail = row.detail;
  event.attempt = row.attempt;
  event.rank = row.rank;
  event.problem = row.problem;
  return event;
}

void JobData::addEvent(const std::string& key, JobEvent event) {
  if (!event_keys_.insert(key).second) return;
  events_.push_back(std::move(event));
}

void JobData::addHealth(const std::string& agent, double time, const proto::HealthSample& h) {
  auto& series = health_[agent];
  auto add = [&](const std::string& key, double value) {
    metrics::Series& s = series[key];
    if (!s.empty() && time <= s.back().time) return;
    s.append(time, time, value);
  };
  add("cpu %", h.cpu_percent());
  if (h.memory_total_bytes() > 0) {
    add("memory %", 100.0 * static_cast<double>(h.memory_used_bytes()) /
                        static_cast<double>(h.memory_total_bytes()));
  }
  add("net rx MB/s", h.net_rx_bytes_per_s() / 1e6);
  add("net tx MB/s", h.net_tx_bytes_per_s() / 1e6);
  for (const auto& gpu : h.gpus()) {
    const std::string prefix = "gpu" + std::to_string(gpu.index()) + " ";
    add(prefix + "util %", gpu.utilization_percent());
    if (gpu.memory_total_bytes() > 0) {
      add(prefix + "memory %", 100.0 * static_cast<double>(gpu.memory_used_bytes()) /
                                   static_cast<double>(gpu.memory_total_bytes()));
    }
    add(prefix + "°C", gpu.temperature_c());
    add(prefix + "W", gpu.power_w());
  }
}

double JobData::endTime() const {
  if (!finished()) return 0;
  double end = stored_end_time_;
  for (const auto& [rank, info] : ranks_) end = std::max(end, info.finished);
  return end;
}

std::string JobData::state() const {
  if (!outcome_.empty()) return outcome_;
  if (restarting_) return "restarting";
  int failed = 0, stopped = 0, succeeded = 0, known = 0;
  for (const auto& [rank, info] : ranks_) {
    if (info.state == "pending" && info.pid == 0) continue;
    ++known;
    failed += info.state == "failed";
    stopped += info.state == "stopped";
    succeeded += info.state == "succeeded";
  }
  if (known == 0) return stored_state_.empty() ? "submitted" : stored_state_;
  // With restarts left the agents start the next attempt: until their JobRestart the job is on
  // its way there, not failed (no failure notification for a job that recovers).
  if (failed > 0) return attempt_ <= static_cast<uint32_t>(max_restarts_) ? "restarting" : "failed";
  if (stopped > 0) return "stopped";
  const int world = world_size_ > 0 ? world_size_ : static_cast<int>(ranks_.size());
  if (world > 0 && succeeded >= world) return "succeeded";
  return "running";
}

bool JobData::finished() const {
  if (!outcome_.empty()) return true;
  if (ranks_.empty()) return stored_state_ == "succeeded" || stored_state_ == "failed";
  for (const auto& [rank, info] : ranks_) {
    if (info.state == "pending" || info.state == "running") return false;
  }
  return true;
}

std::optional<JobEvent> JobData::firstProblem() const {
  // The agents' verdict on the newest failed attempt names the root cause better than any exit.
  for (auto it = events_.rbegin(); it != events_.rend(); ++it) {
    if (it->kind == "job_failure" && it->problem) return *it;
  }
  for (const auto& event : events_) {
    if (event.problem && !isHangWatch(event)) return event;
  }
  return std::nullopt;
}

bool JobData::isHangWatch(const JobEvent& event) { return event.kind.starts_with("hang_"); }

std::optional<JobEvent> JobData::hangWatch() const {
  for (auto it = events_.rbegin(); it != events_.rend(); ++it) {
    if (!isHangWatch(*it)) continue;
    if (it->attempt != attempt_ || it->kind == "hang_cleared" || finished()) return std::nullopt;
    return *it;
  }
  return std::nullopt;
}

std::vector<std::string> JobData::agents() const {
  std::vector<std::string> out;
  for (const auto& [rank, info] : ranks_) {
    if (!info.agent.empty() && std::find(out.begin(), out.end(), info.agent) == out.end()) {
      out.push_back(info.agent);
    }
  }
  return out;
}

std::optional<double> JobData::stepAt(double time) const {
  std::optional<double> reached;
  for (const auto& [name, by_rank] : metrics_) {
    for (const auto& [rank, series] : by_rank) {
      if (auto step = series.stepAt(time)) reached = std::max(reached.value_or(*step), *step);
    }
  }
  return reached;
}

const std::map<int, metrics::Series>* JobData::metric(const std::string& name) const {
  auto found = metrics_.find(name);
  return found == metrics_.end() ? nullptr : &found->second;
}

}  // namespace ringmaster::gui
