#pragma once
// The one model of a job's lifecycle: its journal records (from any of its agents, in any order
// between agents) folded into a typed state: the job's phase, its newest attempt's ranks with how
// each ended, the root cause of each failed attempt, the restarts used and left, and the
// leader's final word. `ringmasterctl submit --wait`, the dashboards and the Slurm follower read
// it; the history's rows say the same in words (phaseName). Records of an older attempt that
// arrive late are kept as failures, never as the state of the ranks now.
//
// Not thread-safe: one owner.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ringmaster/protocol/ringmaster.pb.h"

namespace ringmaster::job {

enum class JobPhase {
  kSubmitted,   // accepted, no rank started yet
  kRunning,     // ranks run
  kRestarting,  // an attempt failed and the agents start the next one
  kSucceeded,
  kFailed,
  kStopped,
};

enum class RankStatus { kPending, kRunning, kSucceeded, kFailed, kStopped };

// The words of the history and of `status`: "submitted", "running", "restarting", "succeeded",
// "failed", "stopped"; for ranks "pending", "running", "succeeded", "failed", "stopped".
const char* phaseName(JobPhase phase);
const char* statusName(RankStatus status);
// The reverse, for rows of the history; nullopt for a word that is not a phase.
std::optional<JobPhase> jobPhaseNamed(std::string_view name);
std::optional<RankStatus> rankStatusNamed(std::string_view name);

// How a rank ended, as its agent said (judged by the exit status when it did not).
RankStatus exitStatusOf(const proto::RankExited& exited);
// A job's final phase from the leader's JobOutcome; nullopt for a state that is not final.
std::optional<JobPhase> outcomePhaseOf(proto::RankState state);

// What the ends of an attempt's ranks make of it, before any restart decision: failed when one
// failed, else stopped when one was stopped, succeeded when `world_size` (or, when 0, all `ranks`)
// succeeded, else running. The history and JobModel both judge attempts by this rule.
struct RankCounts {
  int64_t ranks = 0, failed = 0, stopped = 0, succeeded = 0;
};
JobPhase attemptPhase(const RankCounts& counts, int world_size);

// One rank of the newest attempt.
struct RankState {
  int rank = 0;
  int local_rank = -1;
  std::string agent;
  std::string device;  // what it trains on (RankStarted.device)
  // What ran its .py entry point on its agent (JobAccepted.interpreter); empty: not Python.
  std::string interpreter;
  int pid = 0;
  RankStatus status = RankStatus::kPending;
  int exit_code = 0;
  int signal = 0;
  std::string error;
  double started = 0, finished = 0;  // unix seconds; 0 until it happened
  std::string log_tail;              // the end of its log once it exited (RankExited.tail)

  bool going() const { return status == RankStatus::kPending || status == RankStatus::kRunning; }
};

// What the history knew of a job (its row and its newest attempt's ranks), for a model built
// when the records themselves are not at hand.
struct StoredJob {
  JobPhase phase = JobPhase::kSubmitted;
  bool decided = false;  // the leader's outcome is in the history: the phase is final
  int world_size = 0;
  uint32_t attempt = 0;
  double end_time = 0;
  std::vector<RankState> ranks;
};

class JobModel {
 public:
  // `job_id` empty: every record applied is taken as this job's.
  explicit JobModel(std::string job_id = "");

  // A journal record; records of other jobs and host records are ignored.
  void apply(const std::string& agent, const proto::JournalRecord& record);
  // The history's view, overlaid by any record applied before or after it.
  void applyStored(const StoredJob& stored);

  JobPhase phase() const;
  // The leader said the job is over (JobOutcome, or the history's record of it).
  bool decided() const { return decided_.has_value(); }
  // No rank runs and no further attempt will start (decided, or every rank ended with no
  // restart to come).
  bool finished() const;
  // Every rank of the newest attempt has exited (their records may trail the outcome).
  bool allExited() const;
  bool succeeded() const { return decided() && phase() == JobPhase::kSucceeded; }

  const std::string& name() const { return name_; }
  proto::Launcher launcher() const { return launcher_; }
  int worldSize() const { return world_size_; }
  uint32_t attempt() const { return attempt_; }
  int maxRestarts() const { return max_restarts_; }
  const std::map<int, RankState>& ranks() const { return ranks_; }
  // The leader's final word, when it came as a record.
  const std::optional<proto::JobOutcome>& outcome() const { return outcome_; }
  // The root cause of each failed attempt, by attempt (a better one found later replaces it).
  const std::map<uint32_t, proto::JobFailure>& failures() const { return failures_; }
  // When the newest rank ended, or the history's end; 0 until finished.
  double endTime() const;

 private:
  RankState& rank(int number, const std::string& agent);

  std::string job_id_;
  std::string name_;
  proto::Launcher launcher_ = proto::LAUNCHER_UNSPECIFIED;
  int world_size_ = 0;
  int max_restarts_ = 0;
  uint32_t attempt_ = 0;
  bool restarting_ = false;          // the newest attempt failed and the next one is on its way
  std::optional<JobPhase> decided_;  // the leader's outcome (a record, or the history's)
  std::optional<proto::JobOutcome> outcome_;
  std::optional<JobPhase> stored_phase_;  // the history's, until records say more
  double stored_end_ = 0;
  std::map<int, RankState> ranks_;
  std::map<uint32_t, proto::JobFailure> failures_;
};

}  // namespace ringmaster::job
