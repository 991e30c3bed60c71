#include "dashboard/job_data.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <tuple>
#include <utility>

#include "ringmaster/client/slurm_sync.h"
#include "ringmaster/job/spec.h"
#include "ringmaster/metrics/straggler.h"

namespace ringmaster::gui {
namespace {

constexpr size_t kMaxPendingTotals = 4096;

std::string eventKey(const std::string& source, uint64_t seq, uint32_t attempt) {
  return source + "#" + std::to_string(seq) + "#" + std::to_string(attempt);
}

}  // namespace

JobData::JobData(std::string job_id) : job_id_(std::move(job_id)), model_(job_id_) {}

void JobData::ingest(const std::string& agent, const proto::JournalRecord& r) {
  // The lifecycle is the model's; this adds what a dashboard draws (metrics, events, health).
  const uint32_t attempt_before = model_.attempt();
  model_.apply(agent, r);
  // A new attempt: its ranks start from scratch, perhaps fewer of them on fewer hosts (their
  // series go on, from the checkpoint's step).
  if (model_.attempt() > attempt_before) ranks_.clear();
  const double time = r.time();
  if (start_time_ == 0 || time < start_time_) start_time_ = time;
  // Records of an older attempt that arrive late (from another agent) are events and metrics,
  // not the state of the ranks now.
  const bool current = r.attempt() == model_.attempt();
  switch (r.kind_case()) {
    case proto::JournalRecord::kJobAccepted:
      if (!current) break;
      name_ = r.job_accepted().name();
      launcher_ = store::launcherNameOf(r.job_accepted().launcher());
      readDescription(r.job_accepted().spec_yaml());
      for (const auto& assignment : r.job_accepted().ranks()) copyRank(assignment.rank());
      break;
    case proto::JournalRecord::kRankStarted:
      if (!current) break;
      copyRank(r.rank_started().rank());
      ranks_[r.rank_started().rank()].last_update = time;
      break;
    case proto::JournalRecord::kRankExited:
      if (!current) break;
      copyRank(r.rank_exited().rank());
      ranks_[r.rank_exited().rank()].last_update = time;
      break;
    case proto::JournalRecord::kMetric: {
      const auto& m = r.metric();
      noteAttemptPoint(r.attempt(), time);
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
        if (v.name() == metrics::kCheckpointMetric) {
          addCheckpoint(step, time, r.attempt());
          continue;
        }
        if (v.name() == metrics::kCheckpointSecondsMetric) {
          addCheckpoint(step, time, r.attempt(), v.value());
          continue;
        }
        addPoint(v.name(), m.rank(), step, time, v.value());
      }
      if (timing == 3) addPoint(kBusyTime, m.rank(), step, time, step_time - comm_wait);
      max_step_ = std::max(max_step_, m.step());
      break;
    }
    default:
      break;
  }
  if (store::EventRow row = store::eventOf(agent, r); !row.kind.empty()) {
    row.time = time;
    addEvent(eventKey(r.source(), r.seq(), r.attempt()), eventFrom(row));
  }
  ++version_;
}

void JobData::copyRank(int rank) {
  auto found = model_.ranks().find(rank);
  if (found == model_.ranks().end()) return;
  const job::RankState& s = found->second;
  RankInfo& info = ranks_[rank];
  info.rank = s.rank;
  info.local_rank = s.local_rank;
  info.agent = s.agent;
  info.device = s.device;
  info.pid = s.pid;
  info.state = job::statusName(s.status);
  info.exit_code = s.exit_code;
  info.signal = s.signal;
  info.error = s.error;
  info.log_tail = s.log_tail;
  info.started = s.started;
  info.finished = s.finished;
}

void JobData::ingestHealth(const std::string& agent, const proto::JournalRecord& r) {
  if (!r.has_health()) return;
  addHealth(agent, r.time(), r.health());
  ++version_;
}

void JobData::setSlurm(const store::SlurmJobRow& row) {
  slurm_ = row;
  // Slurm ended the job: its agents may not have lived to say so (the history does the same).
  if (auto ended = client::endedBySlurm(slurm::phaseOf(row.state))) {
    model_.endedByScheduler(*ended, row.updated_at);
  }
  ++version_;
}

void JobData::readDescription(const std::string& spec_yaml) {
  if (spec_yaml.empty() || description_read_) return;  // every agent journals the same spec
  description_read_ = true;
  const job::SpecParseResult spec = job::parseJobSpec(spec_yaml, "the job's spec");
  if (spec.ok()) description_ = spec.spec->description;
}

void JobData::ingestSnapshot(const client::JobSnapshot& s) {
  beginSnapshot(s);
  for (const auto& row : s.metrics) ingestStoredMetric(row);
  endSnapshot(s);
}

Result<std::unique_ptr<JobData>> JobData::fromHistory(store::Reader& history,
                                                      const std::string& job_id,
                                                      client::SnapshotOptions options) {
  options.metrics = false;
  RM_ASSIGN_OR_RETURN(const client::JobSnapshot snapshot,
                      client::loadJobSnapshot(history, job_id, options));
  auto data = std::make_unique<JobData>(snapshot.job.job_id);
  data->beginSnapshot(snapshot);
  RM_ASSIGN_OR_RETURN(const std::vector<store::SeriesRow> series,
                      history.jobSeries(snapshot.job.job_id));
  std::vector<metrics::Series::Point> scratch;
  for (const store::SeriesRow& row : series) {
    RM_RETURN_IF_ERROR(data->readSeries(history, row, &scratch));
  }
  data->endSnapshot(snapshot);
  return data;
}

Status JobData::readSeries(store::Reader& history, const store::SeriesRow& row,
                           std::vector<metrics::Series::Point>* scratch) {
  const bool seconds = row.name == metrics::kCheckpointSecondsMetric;
  if (seconds || row.name == metrics::kCheckpointMetric) {
    return history.forEachPoint(row.id, [&](int64_t step, double value, double time) {
      addCheckpoint(static_cast<double>(step), time, row.attempt, seconds ? value : 0);
    });
  }
  scratch->clear();
  RM_RETURN_IF_ERROR(history.forEachPoint(row.id, [&](int64_t step, double value, double time) {
    scratch->push_back({static_cast<double>(step), time, value});
  }));
  if (!scratch->empty()) noteAttemptPoint(row.attempt, scratch->front().time);
  metrics::Series& series = seriesOf(row.name, row.rank);
  const size_t before = series.size();
  series.reserve(before + scratch->size());
  for (const metrics::Series::Point& p : *scratch) appendNew(series, p.step, p.time, p.value);
  series.shrinkToFit();  // complete: its pyramid's spare room would grow a long run's memory
  if (series.size() > before) {
    const metrics::Series::Point& last = series.back();
    noteStoredPoint(row.attempt, row.rank, row.name, static_cast<int64_t>(last.step), last.time,
                    last.value);
  }
  return Status::ok();
}

void JobData::beginSnapshot(const client::JobSnapshot& s) {
  in_snapshot_ = true;
  if (s.slurm) slurm_ = s.slurm;
  host_records_ = s.host_records;
  name_ = s.job.name;
  launcher_ = s.job.launcher;
  readDescription(s.job.spec_yaml);
  if (start_time_ == 0 || (s.job.submitted_at > 0 && s.job.submitted_at < start_time_)) {
    start_time_ = s.job.submitted_at;
  }
  const job::StoredJob stored = store::storedJobOf(s.job, s.ranks);
  const uint32_t attempt_before = model_.attempt();
  model_.applyStored(stored);
  if (s.slurm) setSlurm(*s.slurm);
  if (model_.attempt() > attempt_before) ranks_.clear();
  for (const auto& row : s.ranks) {
    copyRank(row.rank);
    ranks_[row.rank].step = std::max(ranks_[row.rank].step, row.last_step);
  }
  for (const auto& row : s.events) {
    addEvent(eventKey(row.source, row.seq, row.attempt), eventFrom(row));
  }
  std::sort(events_.begin(), events_.end(),
            [](const JobEvent& a, const JobEvent& b) { return a.time < b.time; });
}

void JobData::ingestStoredMetric(const store::MetricRow& row) {
  if (row.name == metrics::kCheckpointMetric || row.name == metrics::kCheckpointSecondsMetric) {
    addCheckpoint(static_cast<double>(row.step), row.time, row.attempt,
                  row.name == metrics::kCheckpointSecondsMetric ? row.value : 0);
    return;
  }
  noteAttemptPoint(row.attempt, row.time);  // as readSeries: the steps' series only
  addPoint(row.name, row.rank, static_cast<double>(row.step), row.time, row.value);
  noteStoredPoint(row.attempt, row.rank, row.name, row.step, row.time, row.value);
}

void JobData::noteStoredPoint(uint32_t attempt, int rank, const std::string& name, int64_t step,
                              double time, double value) {
  // An earlier attempt's ranks may be gone or numbered otherwise now: lines, not rank rows.
  if (attempt < model_.attempt()) return;
  RankInfo& info = ranks_[rank];
  info.rank = rank;
  info.step = std::max(info.step, step);
  info.last_update = std::max(info.last_update, time);
  if (name == "samples_per_sec") info.samples_per_sec = value;
  max_step_ = std::max(max_step_, step);
}

void JobData::endSnapshot(const client::JobSnapshot& s) {
  deriveBusyTime();
  in_snapshot_ = false;
  deriveJobTotal();
  deriveSpreads();
  for (const auto& row : s.health) addHealth(row.agent, row.time, row.sample);
  ++version_;
}

metrics::Series& JobData::seriesOf(const std::string& name, int rank) {
  auto found = metrics_.find(name);
  if (found == metrics_.end()) {
    metric_names_.push_back(name);
    found = metrics_.emplace(name, std::map<int, metrics::Series>{}).first;
  }
  return found->second[rank];
}

bool JobData::appendNew(metrics::Series& series, double step, double time, double value) {
  // Replays (a snapshot overlapping live records) add nothing; a restart from a checkpoint
  // (a step going back with a newer attempt) is kept.
  if (!series.empty() && step <= series.back().step && time <= series.back().time) return false;
  series.append(step, time, value);
  ++points_;
  return true;
}

void JobData::addPoint(const std::string& name, int rank, double step, double time, double value) {
  if (!appendNew(seriesOf(name, rank), step, time, value) || in_snapshot_) return;
  const int world_size = model_.worldSize();
  if (rank >= 0 && world_size > 1) addToSpread(name, step, time, value);
  if (name != "samples_per_sec" || rank < 0 || world_size <= 0) return;
  auto& [sum, count] = pending_totals_[static_cast<int64_t>(step)];
  sum += value;
  if (++count >= world_size) {
    metrics::Series& total = seriesOf(name, kJobTotal);
    if (total.empty() || step > total.back().step) total.append(step, time, sum);
    pending_totals_.erase(static_cast<int64_t>(step));
  }
  while (pending_totals_.size() > kMaxPendingTotals) pending_totals_.erase(pending_totals_.begin());
}

double meanRate(const metrics::Series& series, double from_time) {
  double inverse_sum = 0;
  size_t count = 0;
  for (size_t i = series.size(); i-- > 0;) {
    const metrics::Series::Point& p = series.at(i);
    if (p.time < from_time) break;
    if (p.value > 0 && std::isfinite(p.value)) {
      inverse_sum += 1 / p.value;
      ++count;
    }
  }
  return count > 0 ? static_cast<double>(count) / inverse_sum
                   : std::numeric_limits<double>::quiet_NaN();
}

void JobData::deriveBusyTime() {
  const auto* step_time = metric("step_time");
  const auto* comm_wait = metric("comm_wait");
  if (!step_time || !comm_wait) return;
  for (const auto& [rank, total] : *step_time) {
    auto wait = comm_wait->find(rank);
    if (wait == comm_wait->end()) continue;
    // Both series hold one point per step, in step order: walk them together.
    metrics::Series& busy = seriesOf(kBusyTime, rank);
    busy.reserve(busy.size() + total.size());
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
  const int world_size = model_.worldSize();
  if (found == metrics_.end() || world_size <= 0) return;
  metrics::Series total;
  forEachStep(found->second, [&](int64_t step, const StepValues& v) {
    if (v.count >= world_size) total.append(static_cast<double>(step), v.time, v.sum);
  });
  if (total.empty()) return;
  total.shrinkToFit();
  found->second[kJobTotal] = std::move(total);
  pending_totals_.clear();
}

void JobData::forEachStep(const std::map<int, metrics::Series>& by_rank,
                          const std::function<void(int64_t, const StepValues&)>& visit) {
  std::vector<const metrics::Series*> ranks;
  bool in_order = true;
  for (const auto& [rank, series] : by_rank) {
    if (rank < 0 || series.empty()) continue;
    ranks.push_back(&series);
    in_order = in_order && series.monotonic(metrics::Axis::kStep);
  }
  if (!in_order) {
    // A restart from a checkpoint replays steps: gather them all, whatever their order.
    std::map<int64_t, StepValues> steps;
    for (const metrics::Series* series : ranks) {
      for (size_t i = 0; i < series->size(); ++i) {
        const auto& p = series->at(i);
        steps[static_cast<int64_t>(p.step)].add(p.value, p.time);
      }
    }
    for (const auto& [step, values] : steps) visit(step, values);
    return;
  }
  // Every rank's steps only go up: walk them together, the lowest step first.
  std::vector<size_t> next(ranks.size(), 0);
  for (;;) {
    bool any = false;
    int64_t step = 0;
    for (size_t r = 0; r < ranks.size(); ++r) {
      if (next[r] == ranks[r]->size()) continue;
      const auto at = static_cast<int64_t>(ranks[r]->at(next[r]).step);
      step = any ? std::min(step, at) : at;
      any = true;
    }
    if (!any) return;
    StepValues values;
    for (size_t r = 0; r < ranks.size(); ++r) {
      // A rank may report one step more than once (steps are whole numbers; their x need not be).
      while (next[r] < ranks[r]->size() &&
             static_cast<int64_t>(ranks[r]->at(next[r]).step) == step) {
        const auto& p = ranks[r]->at(next[r]++);
        values.add(p.value, p.time);
      }
    }
    visit(step, values);
  }
}

void JobData::StepValues::add(double value, double at) {
  min = count == 0 ? value : std::min(min, value);
  max = count == 0 ? value : std::max(max, value);
  sum += value;
  time = std::max(time, at);
  ++count;
}

void JobData::StepValues::appendTo(RankSpread* spread, double step) const {
  spread->mean.append(step, time, sum / count);
  spread->min.append(step, time, min);
  spread->max.append(step, time, max);
}

void JobData::addToSpread(const std::string& name, double step, double time, double value) {
  auto& pending = pending_spreads_[name];
  StepValues& v = pending[static_cast<int64_t>(step)];
  v.add(value, time);
  if (v.count >= model_.worldSize()) {
    RankSpread& spread = spreads_[name];
    if (spread.mean.empty() || step > spread.mean.back().step) v.appendTo(&spread, step);
    pending.erase(static_cast<int64_t>(step));
  }
  while (pending.size() > kMaxPendingTotals) pending.erase(pending.begin());
}

// As deriveJobTotal(): the snapshot's points come one rank at a time.
void JobData::deriveSpreads() {
  const int world_size = model_.worldSize();
  if (world_size <= 1) return;
  pending_spreads_.clear();  // spreads_ keeps its entries: charts hold pointers to them
  for (const auto& [name, by_rank] : metrics_) {
    RankSpread spread;
    forEachStep(by_rank, [&](int64_t step, const StepValues& v) {
      if (v.count >= world_size) v.appendTo(&spread, static_cast<double>(step));
    });
    for (metrics::Series* series : {&spread.mean, &spread.min, &spread.max}) series->shrinkToFit();
    if (!spread.mean.empty() || spreads_.count(name)) spreads_[name] = std::move(spread);
  }
}

const RankSpread* JobData::spread(const std::string& name) const {
  auto found = spreads_.find(name);
  return found == spreads_.end() ? nullptr : &found->second;
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

// Every rank saves its own checkpoint of the same step: one event for them all, at the first, and
// one mark with the longest write (the job waits for the slowest rank).
void JobData::addCheckpoint(double step, double time, uint32_t attempt, double seconds) {
  const CheckpointMark mark{attempt, static_cast<int64_t>(step), time, seconds};
  const auto before = [](const CheckpointMark& a, const CheckpointMark& b) {
    return std::tie(a.attempt, a.step) < std::tie(b.attempt, b.step);
  };
  auto at = std::lower_bound(checkpoints_.begin(), checkpoints_.end(), mark, before);
  if (at != checkpoints_.end() && !before(mark, *at)) {
    at->time = std::min(at->time, time);
    at->seconds = std::max(at->seconds, std::isfinite(seconds) ? seconds : 0);
  } else {
    checkpoints_.insert(at, mark);
  }
  const std::string key =
      "checkpoint#" + std::to_string(attempt) + "#" + std::to_string(static_cast<int64_t>(step));
  JobEvent event;
  event.time = time;
  event.kind = "checkpoint";
  event.detail = "step " + std::to_string(static_cast<int64_t>(step)) + " saved";
  event.attempt = attempt;
  addEvent(key, std::move(event));
}

void JobData::noteAttemptPoint(uint32_t attempt, double time) {
  auto [it, added] = first_point_time_.try_emplace(attempt, time);
  if (!added && time < it->second) it->second = time;
}

double JobData::restartSeconds() const {
  std::map<uint32_t, double> failed_at;  // attempt -> its first failure heard of
  for (const JobEvent& event : events_) {
    if (event.kind != "job_failure") continue;
    auto [it, added] = failed_at.try_emplace(event.attempt, event.time);
    if (!added) it->second = std::min(it->second, event.time);
  }
  std::vector<double> restarts;
  for (const auto& [attempt, first_point] : first_point_time_) {
    const auto failed = failed_at.find(attempt - 1);
    if (failed != failed_at.end() && first_point > failed->second) {
      restarts.push_back(first_point - failed->second);
    }
  }
  return restarts.empty() ? 0 : metrics::medianOf(restarts);
}

hardware::CheckpointInputs JobData::checkpointInputs(double now) const {
  hardware::CheckpointInputs in;
  in.now = now;
  std::vector<std::string> hosts;  // one per rank of the running attempt
  for (const auto& [rank, info] : ranks_) {
    hosts.push_back(info.agent);
    in.on_gpus = in.on_gpus && info.device.starts_with("GPU");
    if (info.started > 0 && (in.started == 0 || info.started < in.started)) {
      in.started = info.started;
    }
  }
  if (in.started == 0) in.started = start_time_;
  in.devices = static_cast<int>(hosts.size());
  in.failures_per_hour = hardware::jobFailuresPerHour(hosts, host_records_);
  in.restart_seconds = restartSeconds();
  std::vector<double> costs;
  const CheckpointMark* last = nullptr;  // the running attempt's newest, and the one before
  const CheckpointMark* previous = nullptr;
  for (const CheckpointMark& mark : checkpoints_) {
    if (mark.seconds > 0) costs.push_back(mark.seconds);
    if (mark.attempt != model_.attempt()) continue;
    previous = last;
    last = &mark;
  }
  if (!costs.empty()) {
    std::nth_element(costs.begin(), costs.begin() + costs.size() / 2, costs.end());
    in.checkpoint_seconds = costs[costs.size() / 2];
  }
  if (last) in.last_checkpoint = last->time;
  if (last && previous && last->step > previous->step && last->time > previous->time) {
    in.interval_seconds = last->time - previous->time;
    in.seconds_per_step = in.interval_seconds / static_cast<double>(last->step - previous->step);
  }
  return in;
}

void JobData::addClientEvent(JobEvent event) {
  const std::string key = event.kind + "#" + event.agent + "#" + std::to_string(event.time);
  addEvent(key, std::move(event));
  ++version_;
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

double JobData::endTime() const { return model_.endTime(); }

std::string JobData::state() const { return job::phaseName(model_.phase()); }

bool JobData::finished() const { return model_.finished(); }

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
  // The model's typed watch (the one fold), as an event the problem line can open the log of.
  const std::optional<job::HangWatch> hang = model_.hang();
  if (!hang) return std::nullopt;
  JobEvent event;
  event.time = hang->since;
  event.kind = "hang_" + hang->stage;
  event.agent = hang->agent;
  event.detail = hang->cause;
  event.attempt = model_.attempt();
  event.rank = hang->rank;
  event.problem = true;
  return event;
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
