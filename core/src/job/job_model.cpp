#include "ringmaster/job/job_model.h"

#include <algorithm>
#include <array>
#include <utility>

namespace ringmaster::job {
namespace {

constexpr std::array<std::pair<JobPhase, const char*>, 8> kJobPhases = {{
    {JobPhase::kSubmitted, "submitted"},
    {JobPhase::kRunning, "running"},
    {JobPhase::kRestarting, "restarting"},
    {JobPhase::kWaiting, "waiting"},
    {JobPhase::kStopping, "stopping"},
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

bool isOver(JobPhase phase) {
  return phase == JobPhase::kSucceeded || phase == JobPhase::kFailed || phase == JobPhase::kStopped;
}

bool isOverState(std::string_view word) {
  const std::optional<JobPhase> phase = jobPhaseNamed(word);
  return phase && isOver(*phase);
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

void JobModel::startAttempt(uint32_t attempt) {
  fold_.set_attempt(attempt);
  fold_.set_any_started(false);
  fold_.clear_decision();
  decided_by_.clear();
  fold_.clear_hang();
  fold_.clear_hang_since();
  // A client may restart a job that was over: the new attempt is not decided.
  fold_.clear_outcome();
  fold_.clear_outcome_time();
  outcome_.reset();
  ranks_.clear();  // its JobAccepted records say which ranks it has
}

void JobModel::apply(const std::string& agent, const proto::JournalRecord& r) {
  if (r.job().empty() || (!job_id_.empty() && r.job() != job_id_)) return;
  // Metrics are data, not lifecycle: the history folds only lifecycle records, and so does this.
  if (r.has_metric() || r.has_health() || r.has_journal_damage()) return;
  // A root cause stands whatever the attempt (journaled again when a better one is found).
  if (r.has_job_failure()) failures_[r.attempt()] = r.job_failure();
  // The newest JobRestart says how many restarts the attempt it starts has left, also when the
  // next attempt's own records came first (from another agent).
  if (r.has_job_restart() && r.job_restart().next_attempt() >= fold_.restart_next_attempt()) {
    fold_.set_restart_next_attempt(r.job_restart().next_attempt());
    fold_.set_restart_restarts_left(r.job_restart().restarts_left());
  }
  if (r.attempt() < fold_.attempt()) return;  // late news of an older attempt: not the job now
  if (r.attempt() > fold_.attempt()) startAttempt(r.attempt());
  switch (r.kind_case()) {
    case proto::JournalRecord::kJobAccepted: {
      const proto::JobAccepted& a = r.job_accepted();
      name_ = a.name();
      launcher_ = a.launcher();
      fold_.set_world_size(a.world_size());
      fold_.set_max_restarts(a.max_restarts());
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
      fold_.set_any_started(true);
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
      // A rank that never got to start (its launch failed) still began the attempt.
      fold_.set_any_started(true);
      break;
    }
    case proto::JournalRecord::kJobDecision: {
      // Each side of a split waits for the other: the smaller side, which waits for more agents,
      // does not speak for the job over the majority (an even split: over the side with the
      // attempt's first agent, which waits for neither that agent nor more agents).
      const proto::JobDecision& decision = r.job_decision();
      const proto::JobDecision& shown = fold_.decision();
      const auto first = ranks_.find(0);
      const auto waitsForFirst = [&](const proto::JobDecision& d) {
        return first != ranks_.end() &&
               std::count(d.waiting_for().begin(), d.waiting_for().end(), first->second.agent);
      };
      const bool both_wait =
          decision.next() == proto::JobDecision::WAIT && shown.next() == proto::JobDecision::WAIT;
      const int more = decision.waiting_for_size() - shown.waiting_for_size();
      if (both_wait && agent != decided_by_ &&
          (more > 0 || (more == 0 && waitsForFirst(decision) && !waitsForFirst(shown)))) {
        break;
      }
      *fold_.mutable_decision() = decision;
      decided_by_ = agent;
      break;
    }
    case proto::JournalRecord::kJobRestart: {
      // The decision carried out (an agent from before JobDecision journals only this).
      proto::JobDecision* decision = fold_.mutable_decision();
      decision->set_next(proto::JobDecision::RESTART);
      decision->set_restarts_left(r.job_restart().restarts_left());
      decision->set_reason(r.job_restart().reason());
      break;
    }
    case proto::JournalRecord::kJobOutcome:
      if (!outcomePhaseOf(r.job_outcome().state())) break;
      // A side cut off from the majority decided alone: the majority's outcome stands.
      if (r.job_outcome().without_majority() && outcome_ && !outcome_->without_majority()) break;
      outcome_ = r.job_outcome();
      fold_.set_outcome(r.job_outcome().state());
      fold_.set_outcome_time(r.time());
      break;
    case proto::JournalRecord::kHangSuspicion:
      if (r.hang_suspicion().stage() == "cleared") {
        fold_.clear_hang();
        fold_.clear_hang_since();
      } else {
        *fold_.mutable_hang() = r.hang_suspicion();
        fold_.set_hang_since(r.time());
      }
      break;
    default:
      break;
  }
}

void JobModel::applyStored(const StoredJob& stored) {
  if (stored.fold.attempt() < fold_.attempt()) return;  // records told of a newer attempt
  if (stored.fold.attempt() > fold_.attempt()) ranks_.clear();
  // Records applied before the history came are as new as it or newer: what they decided stays.
  proto::JobFold merged = stored.fold;
  if (fold_.attempt() == merged.attempt()) {
    if (fold_.any_started()) merged.set_any_started(true);
    if (fold_.has_decision()) *merged.mutable_decision() = fold_.decision();
    if (decided()) {
      merged.set_outcome(fold_.outcome());
      merged.set_outcome_time(fold_.outcome_time());
    }
    if (fold_.has_hang()) {
      *merged.mutable_hang() = fold_.hang();
      merged.set_hang_since(fold_.hang_since());
    }
    if (fold_.world_size() > 0) merged.set_world_size(fold_.world_size());
  }
  if (fold_.restart_next_attempt() > merged.restart_next_attempt()) {
    merged.set_restart_next_attempt(fold_.restart_next_attempt());
    merged.set_restart_restarts_left(fold_.restart_restarts_left());
  }
  fold_ = std::move(merged);
  for (const RankState& s : stored.ranks) {
    // A record of the rank (applied before the history came) is newer than the row.
    auto [it, inserted] = ranks_.emplace(s.rank, s);
    if (!inserted && it->second.status == RankStatus::kPending) it->second = s;
  }
}

void JobModel::endedByScheduler(JobPhase phase, double time) {
  if (decided()) return;
  fold_.set_outcome(phase == JobPhase::kStopped ? proto::STOPPED : proto::FAILED);
  fold_.set_outcome_time(time);
  for (auto& [number, s] : ranks_) {
    if (!s.going()) continue;
    s.status = phase == JobPhase::kStopped ? RankStatus::kStopped : RankStatus::kFailed;
    s.finished = time;
  }
}

JobPhase JobModel::phase() const {
  if (decided()) return *outcomePhaseOf(fold_.outcome());
  switch (fold_.decision().next()) {
    case proto::JobDecision::RESTART:
      return JobPhase::kRestarting;
    case proto::JobDecision::WAIT:
      return JobPhase::kWaiting;
    case proto::JobDecision::FAIL:
      return JobPhase::kFailed;
    case proto::JobDecision::STOP:
      // Stopped once every rank has ended: until then the job still holds its slots.
      return finished() ? JobPhase::kStopped : JobPhase::kStopping;
    default:
      break;
  }
  // A later attempt whose ranks have not started yet: the job is being restarted.
  if (!fold_.any_started())
    return fold_.attempt() > 1 ? JobPhase::kRestarting : JobPhase::kSubmitted;
  return JobPhase::kRunning;
}

uint32_t JobModel::restartsLeft() const {
  if (decided()) return 0;
  if (fold_.decision().next() == proto::JobDecision::RESTART ||
      fold_.decision().next() == proto::JobDecision::WAIT) {
    return fold_.decision().restarts_left();
  }
  if (fold_.decision().next() != proto::JobDecision::NEXT_UNSPECIFIED) return 0;
  if (fold_.restart_next_attempt() == fold_.attempt() && fold_.attempt() > 0) {
    return fold_.restart_restarts_left();
  }
  return fold_.max_restarts();  // the first attempt, or one a client started after the end
}

std::optional<HangWatch> JobModel::hang() const {
  if (!fold_.has_hang() || finished()) return std::nullopt;
  const proto::HangSuspicion& h = fold_.hang();
  return HangWatch{h.stage(), h.rank(), h.agent(), h.cause(), fold_.hang_since()};
}

bool JobModel::finished() const {
  if (decided()) return true;
  const proto::JobDecision::Next next = fold_.decision().next();
  if (next != proto::JobDecision::FAIL && next != proto::JobDecision::STOP) return false;
  return !ranks_.empty() && std::none_of(ranks_.begin(), ranks_.end(),
                                         [](const auto& entry) { return entry.second.going(); });
}

bool JobModel::allExited() const {
  int exited = 0;
  for (const auto& [number, s] : ranks_) exited += !s.going();
  return fold_.world_size() > 0 && exited >= fold_.world_size();
}

double JobModel::endTime() const {
  if (!finished()) return 0;
  double end = fold_.outcome_time();
  for (const auto& [number, s] : ranks_) end = std::max(end, s.finished);
  return end;
}

}  // namespace ringmaster::job
