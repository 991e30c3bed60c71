#include "ringmaster/store/rows.h"

#include <cstdio>
#include <optional>
#include <string>

#include "ringmaster/job/job_model.h"
#include "store/database.h"

namespace ringmaster::store {
namespace {

const char* launcherName(proto::Launcher launcher) {
  switch (launcher) {
    case proto::NATIVE:
      return "native";
    case proto::TORCHRUN:
      return "torchrun";
    case proto::COMMAND:
      return "command";
    case proto::TENSORFLOW:
      return "tensorflow";
    case proto::DEEPSPEED:
      return "deepspeed";
    default:
      return "";
  }
}

const char* jobStateName(proto::RankState state) {
  const std::optional<job::JobPhase> phase = job::outcomePhaseOf(state);
  return phase ? job::phaseName(*phase) : "unknown";
}
std::string decisionText(uint32_t attempt, const proto::JobDecision& decision) {
  const std::string what = "attempt " + std::to_string(attempt);
  switch (decision.next()) {
    case proto::JobDecision::RESTART:
      return what + " failed: the agents restart the job (" +
             std::to_string(decision.restarts_left()) + " restart(s) left after this one)" +
             (decision.reason().empty() ? "" : ": " + decision.reason());
    case proto::JobDecision::WAIT:
      return what + " failed: the agents wait before they decide, " + decision.reason();
    case proto::JobDecision::FAIL:
      return what + " failed: the job fails" +
             (decision.reason().empty() ? "" : ": " + decision.reason());
    case proto::JobDecision::STOP:
      return what + " stopped: the job stops" +
             (decision.reason().empty() ? "" : ": " + decision.reason());
    default:
      return what + ": the leader's decision is of a kind this build does not know";
  }
}

// A lifecycle record in words, for the history's events.
std::string summarize(const std::string& agent, const proto::JournalRecord& r) {
  switch (r.kind_case()) {
    case proto::JournalRecord::kJobAccepted: {
      const auto& a = r.job_accepted();
      std::string ranks;
      for (const auto& assignment : a.ranks()) {
        if (!ranks.empty()) ranks += ',';
        ranks += std::to_string(assignment.rank());
      }
      return "accepted by " + agent + ": ranks " + (ranks.empty() ? "none" : ranks) + " of " +
             std::to_string(a.world_size()) +
             (a.interpreter().empty() ? "" : "; python: " + a.interpreter());
    }
    case proto::JournalRecord::kRankStarted: {
      const auto& s = r.rank_started();
      return "rank " + std::to_string(s.rank()) + " started on " + agent + " (pid " +
             std::to_string(s.pid()) + ", local rank " + std::to_string(s.local_rank()) + ")" +
             (s.device().empty() ? "" : ", " + s.device());
    }
    case proto::JournalRecord::kRankExited: {
      const auto& e = r.rank_exited();
      std::string detail = "rank " + std::to_string(e.rank()) + " " + rankStateName(e) + ": ";
      detail += e.signal() != 0 ? "signal " + std::to_string(e.signal())
                                : "exit code " + std::to_string(e.exit_code());
      if (!e.error().empty()) detail += ": " + e.error();
      return detail;
    }
    case proto::JournalRecord::kJobFinished: {
      const auto& f = r.job_finished();
      std::string detail =
          agent + " finished " + std::to_string(f.ranks()) + " ranks: " + jobStateName(f.state());
      if (f.leftovers_killed() > 0) {
        detail += "; ended " + std::to_string(f.leftovers_killed()) +
                  " process(es) the ranks had left running";
      }
      if (f.leftovers_stuck() > 0) {
        detail += ", " + std::to_string(f.leftovers_stuck()) + " of them still there";
      }
      return detail;
    }
    case proto::JournalRecord::kJobFailure:
      return "attempt " + std::to_string(r.attempt()) +
             (r.job_failure().kind() == "client_restart" ? " ended: " : " failed: ") +
             r.job_failure().cause();
    case proto::JournalRecord::kJobRestart: {
      const auto& restart = r.job_restart();
      std::string agents;
      for (const auto& name : restart.agents()) agents += (agents.empty() ? "" : ", ") + name;
      std::string detail = "attempt " + std::to_string(restart.next_attempt()) + " starts";
      if (restart.backoff_seconds() > 0) {
        char wait[32];
        std::snprintf(wait, sizeof wait, " in %g s", restart.backoff_seconds());
        detail += wait;
      }
      detail += " on " + agents + " (" + std::to_string(restart.world_size()) + " ranks)";
      if (!restart.left_out().empty()) {
        std::string out;
        for (const auto& name : restart.left_out()) out += (out.empty() ? "" : ", ") + name;
        detail += " without " + out;
      }
      return detail;
    }
    case proto::JournalRecord::kJobOutcome: {
      const auto& outcome = r.job_outcome();
      std::string detail = std::string("job ") + jobStateName(outcome.state()) + " after " +
                           std::to_string(outcome.attempts()) + " attempt(s)";
      if (!outcome.cause().empty()) detail += ": " + outcome.cause();
      return detail;
    }
    case proto::JournalRecord::kHangSuspicion:
      return r.hang_suspicion().cause();
    case proto::JournalRecord::kJobDecision:
      return decisionText(r.attempt(), r.job_decision());
    case proto::JournalRecord::kGpuFault: {
      const auto& f = r.gpu_fault();
      std::string ranks;
      for (int rank : f.ranks()) ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
      return "GPU " + std::to_string(f.gpu_index()) + " on " + agent +
             (f.gpu_uuid().empty() ? "" : " (" + f.gpu_uuid() + ")") + " under rank" +
             (f.ranks_size() == 1 ? " " : "s ") + ranks + ": " + f.text();
    }
    default:
      return {};
  }
}

// A hang watch record's kind says its stage: hang_suspected, hang_hung (on_hang: warn) or
// hang_cleared.
std::string eventKind(const proto::JournalRecord& r) {
  if (r.has_hang_suspicion()) return "hang_" + r.hang_suspicion().stage();
  switch (r.kind_case()) {
    case proto::JournalRecord::kJobAccepted:
      return "job_accepted";
    case proto::JournalRecord::kRankStarted:
      return "rank_started";
    case proto::JournalRecord::kRankExited:
      return "rank_exited";
    case proto::JournalRecord::kJobFinished:
      return "job_finished";
    case proto::JournalRecord::kJobFailure:
      return "job_failure";
    case proto::JournalRecord::kJobRestart:
      return "job_restart";
    case proto::JournalRecord::kJobOutcome:
      return "job_outcome";
    case proto::JournalRecord::kJobDecision:
      return "job_decision";
    case proto::JournalRecord::kGpuFault:
      return "gpu_fault";
    default:
      return "";
  }
}

}  // namespace

proto::JobFold legacyFold(const JobRow& row) {
  proto::JobFold fold;
  fold.set_attempt(row.attempt);
  fold.set_world_size(row.world_size);
  const job::JobPhase phase = job::jobPhaseNamed(row.state).value_or(job::JobPhase::kSubmitted);
  fold.set_any_started(phase != job::JobPhase::kSubmitted);
  switch (phase) {
    case job::JobPhase::kSucceeded:
      fold.set_outcome(proto::SUCCEEDED);
      break;
    case job::JobPhase::kFailed:
      fold.set_outcome(proto::FAILED);
      break;
    case job::JobPhase::kStopped:
      fold.set_outcome(proto::STOPPED);
      break;
    case job::JobPhase::kRestarting:
      fold.mutable_decision()->set_next(proto::JobDecision::RESTART);
      break;
    case job::JobPhase::kWaiting:
      fold.mutable_decision()->set_next(proto::JobDecision::WAIT);
      break;
    default:
      break;
  }
  if (fold.outcome() != proto::RANK_STATE_UNSPECIFIED) fold.set_outcome_time(row.finished_at);
  return fold;
}

const char* launcherNameOf(proto::Launcher launcher) { return launcherName(launcher); }

job::StoredJob storedJobOf(const JobRow& job, const std::vector<RankRow>& ranks) {
  job::StoredJob stored;
  // A row without a fold (made by hand, or older than the fold): the fold its words describe.
  stored.fold = job.fold.attempt() == 0 && job.attempt > 0 ? legacyFold(job) : job.fold;
  for (const RankRow& row : ranks) {
    if (row.attempt != stored.fold.attempt()) continue;
    job::RankState rank;
    rank.rank = row.rank;
    rank.local_rank = row.local_rank;
    rank.agent = row.agent;
    rank.device = row.device;
    rank.pid = row.pid;
    rank.status = job::rankStatusNamed(row.state).value_or(job::RankStatus::kPending);
    rank.exit_code = row.exit_code;
    rank.signal = row.signal;
    rank.error = row.error;
    rank.log_tail = row.log_tail;
    rank.started = row.started_at;
    rank.finished = row.finished_at;
    stored.ranks.push_back(std::move(rank));
  }
  return stored;
}

EventRow eventOf(const std::string& agent, const proto::JournalRecord& r) {
  EventRow e;
  e.job_id = r.job();
  e.attempt = r.attempt();
  e.source = r.source();
  e.seq = r.seq();
  e.agent = agent;
  e.time = r.time();
  e.kind = eventKind(r);
  e.detail = summarize(agent, r);
  if (r.has_rank_started()) {
    e.rank = r.rank_started().rank();
    e.rank_agent = agent;
  } else if (r.has_rank_exited()) {
    const proto::RankExited& x = r.rank_exited();
    e.rank = x.rank();
    e.rank_agent = agent;
    e.problem = x.state() == proto::FAILED;
    e.exit_code = x.exit_code();
    e.signal = x.signal();
  } else if (r.has_job_failure()) {
    const proto::JobFailure& f = r.job_failure();
    e.rank = f.rank();
    e.rank_agent = f.agent();
    e.problem = f.kind() != "client_restart";
    e.exit_code = f.exit_code();
    e.signal = f.signal();
    e.cause_kind = f.kind();
  } else if (r.has_hang_suspicion()) {
    const proto::HangSuspicion& h = r.hang_suspicion();
    e.rank = h.rank();
    e.rank_agent = h.agent();
    e.problem = h.stage() != "cleared";
    e.cause_kind = h.stage();
  } else if (r.has_gpu_fault()) {
    const proto::GpuFaultSeen& f = r.gpu_fault();
    e.rank = f.ranks().empty() ? -1 : f.ranks(0);
    e.rank_agent = agent;
    e.problem = f.severity() == "critical";  // a warning slows the job; it is not its failure
    e.cause_kind = f.kind();
  }
  return e;
}

}  // namespace ringmaster::store
