#include "ringmaster/job/job_model.h"

#include <algorithm>
#include <array>
#include <utility>

namespace ringmaster::job {
namespace {

constexpr std::array<std::pair<JobPhase, const char*>, 6> kJobPhases = {{
    {JobPhase::kSubmitted, "submitted"},
    {JobPhase::kRunning, "running"},
    {JobPhase::kRestarting, "restarting"},
    {JobPhase::kSucceeded, "succeeded"},
    {JobPhase::kFailed, "failed"},
    {JobPhase::kStopped, "stopped"},
}};

constexpr std::array<std::pair<RankStatus, const char*>, 5> kRankStatuses = {{
    {RankStatus::kPending, "pending"},
    {RankStatus::kRunning, "running"},
    {RankStatus::kSucceeded, "succeeded"},
    {RankStatus::kFailed, "failed"},
    {RankStatus::kStopped, "stopped"},
}};

}  // namespace

RankStatus exitStatusOf(const proto::RankExited& exited) {
  switch (exited.state()) {
    case proto::SUCCEEDED:
      return RankStatus::kSucceeded;
    case proto::FAILED:
      return RankStatus::kFailed;
    case proto::STOPPED:
      return RankStatus::kStopped;
    default:
      return exited.signal() != 0 || exited.exit_code() != 0 ? RankStatus::kFailed
                                                             : RankStatus::kSucceeded;
  }
}

std::optional<JobPhase> outcomePhaseOf(proto::RankState state) {
  switch (state) {
    case proto::SUCCEEDED:
      return JobPhase::kSucceeded;
    case proto::FAILED:
      return JobPhase::kFailed;
    case proto::STOPPED:
      return JobPhase::kStopped;
    default:
      return std::nullopt;
  }
}

JobPhase attemptPhase(const RankCounts& counts, int world_size) {
  if (counts.failed > 0) return JobPhase::kFailed;
  if (counts.stopped > 0) return JobPhase::kStopped;
  const int64_t world = world_size > 0 ? world_size : counts.ranks;
  if (world > 0 && counts.succeeded >= world) return JobPhase::kSucceeded;
  return JobPhase::kRunning;
}

const char* phaseName(JobPhase phase) {
  for (const auto& [p, name] : kJobPhases) {
    if (p == phase) return name;
  }
  return "unknown";
}

const char* statusName(RankStatus status) {
  for (const auto& [s, name] : kRankStatuses) {
    if (s == status) return name;
  }
  return "unknown";
}

std::optional<JobPhase> jobPhaseNamed(std::string_view name) {
  for (const auto& [phase, word] : kJobPhases) {
    if (name == word) return phase;
  }
  return std::nullopt;
}

std::optional<RankStatus> rankStatusNamed(std::string_view name) {
  for (const auto& [status, word] : kRankStatuses) {
    if (name == word) return status;
  }
  return std::nullopt;
}

JobModel::JobModel(std::string job_id) : job_id_(std::move(job_id)) {}

RankState& JobModel::rank(int number, const std::string& agent) {
  RankState& r = ranks_[number];
  r.rank = number;
  if (r.agent.empty()) r.agent = agent;
  return r;
}

void JobModel::apply(const std::string& agent, const proto::JournalRecord& r) {
  if (r.job().empty() || (!job_id_.empty() && r.job() != job_id_)) return;
  // Verdicts stand whatever the attempt: a root cause (journaled again when a better one is
  // found) and the leader's final word.
  if (r.has_job_failure()) failures_[r.attempt()] = r.job_failure();
  if (r.has_job_outcome()) {
    outcome_ = r.job_outcome();
    decided_ = outcomePhaseOf(r.job_outcome().state());
  }
  if (r.attempt() < attempt_) return;  // late news of an older attempt: not the ranks now
  if (r.attempt() > attempt_) {
    // A new attempt: its ranks start from scratch, perhaps fewer of them on fewer hosts. A
    // client may restart a job that was over.
    attempt_ = r.attempt();
    restarting_ = false;
    if (!r.has_job_outcome()) {
      decided_.reset();
      outcome_.reset();
    }
    ranks_.clear();  // its JobAccepted records say which ranks it has
  }
  switch (r.kind_case()) {
    case proto::JournalRecord::kJobAccepted: {
      const proto::JobAccepted& a = r.job_accepted();
      name_ = a.name();
      launcher_ = a.launcher();
      world_size_ = a.world_size();
      max_restarts_ = static_cast<int>(a.max_restarts());
      for (const auto& assignment : a.ranks()) {
        RankState& s = rank(assignment.rank(), agent);
        s.agent = agent;
        s.local_rank = assignment.local_rank();
        s.interpreter = a.interpreter();
      }
      break;
    }
    case proto::JournalRecord::kRankStarted: {
      const proto::RankStarted& started = r.rank_started();
      RankState& s = rank(started.rank(), agent);
      s.agent = agent;
      s.local_rank = started.local_rank();
      s.pid = started.pid();
      s.device = started.device();
      s.status = RankStatus::kRunning;
      s.started = r.time();
      break;
    }
    case proto::JournalRecord::kRankExited: {
      const proto::RankExited& exited = r.rank_exited();
      RankState& s = rank(exited.rank(), agent);
      s.status = exitStatusOf(exited);
      s.exit_code = exited.exit_code();
      s.signal = exited.signal();
      s.error = exited.error();
      s.finished = r.time();
      s.log_tail.clear();
      for (const std::string& line : exited.tail()) s.log_tail += line + "\n";
      break;
    }
    case proto::JournalRecord::kJobRestart:
      restarting_ = true;
      break;
    default:
      break;
  }
}

void JobModel::applyStored(const StoredJob& stored) {
  stored_phase_ = stored.phase;
  stored_end_ = stored.end_time;
  if (stored.decided && !decided_) decided_ = stored.phase;
  if (world_size_ == 0) world_size_ = stored.world_size;
  if (stored.attempt < attempt_) return;  // records already told of a newer attempt
  if (stored.attempt > attempt_) {
    attempt_ = stored.attempt;
    ranks_.clear();
  }
  for (const RankState& s : stored.ranks) {
    // A record of the rank (applied before the history came) is newer than the row.
    auto [it, inserted] = ranks_.emplace(s.rank, s);
    if (!inserted && it->second.status == RankStatus::kPending) it->second = s;
  }
}

JobPhase JobModel::phase() const {
  if (decided_) return *decided_;
  if (restarting_) return JobPhase::kRestarting;
  RankCounts counts;
  for (const auto& [number, s] : ranks_) {
    if (s.status == RankStatus::kPending && s.pid == 0) continue;  // only assigned so far
    ++counts.ranks;
    counts.failed += s.status == RankStatus::kFailed;
    counts.stopped += s.status == RankStatus::kStopped;
    counts.succeeded += s.status == RankStatus::kSucceeded;
  }
  if (counts.ranks == 0) return stored_phase_.value_or(JobPhase::kSubmitted);
  const int world = world_size_ > 0 ? world_size_ : static_cast<int>(ranks_.size());
  const JobPhase attempt = attemptPhase(counts, world);
  // With restarts left the agents start the next attempt: until their JobRestart the job is on
  // its way there, not failed (no failure notification for a job that recovers).
  if (attempt == JobPhase::kFailed && attempt_ <= static_cast<uint32_t>(max_restarts_)) {
    return JobPhase::kRestarting;
  }
  return attempt;
}

bool JobModel::finished() const {
  if (decided_) return true;
  const JobPhase now = phase();
  const bool over =
      now == JobPhase::kSucceeded || now == JobPhase::kFailed || now == JobPhase::kStopped;
  return over && std::none_of(ranks_.begin(), ranks_.end(),
                              [](const auto& entry) { return entry.second.going(); });
}

bool JobModel::allExited() const {
  int exited = 0;
  for (const auto& [number, s] : ranks_) exited += !s.going();
  return world_size_ > 0 && exited >= world_size_;
}

double JobModel::endTime() const {
  if (!finished()) return 0;
  double end = stored_end_;
  for (const auto& [number, s] : ranks_) end = std::max(end, s.finished);
  return end;
}

}  // namespace ringmaster::job
