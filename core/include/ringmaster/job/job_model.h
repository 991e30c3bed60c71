#pragma once
// The one model of a job's lifecycle: its journal records (from any of its agents, in any order
// between agents) folded into a typed state: the job's phase, its newest attempt's ranks with how
// each ended, the root cause of each failed attempt, the restarts left, the hang watch, and the
// leader's final word. The agents decide; this records what they decided and never predicts it.
// It is the only fold: the history persists its output (JobFold) rather than folding again, and
// `ringmasterctl`, the dashboards and the Slurm follower read it. Records of an older attempt
// that arrive late are kept as failures, never as the state of the ranks now.
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
  // An attempt failed and its leader waits for lost agents that may answer again before it
  // decides (its side of a split holds no majority, or the job cannot go on without them).
  kWaiting,
  kStopping,  // the agents decided to stop it; its ranks are still ending (and hold their slots)
  kSucceeded,
  kFailed,
  kStopped,
};

enum class RankStatus { kPending, kRunning, kSucceeded, kFailed, kStopped };

// The words of the history and of `status`: "submitted", "running", "restarting", "waiting",
// "stopping",
// "succeeded", "failed", "stopped"; for ranks "pending", "running", "succeeded", "failed",
// "stopped".
const char* phaseName(JobPhase phase);
const char* statusName(RankStatus status);
// The reverse, for rows of the history; nullopt for a word that is not a phase.
std::optional<JobPhase> jobPhaseNamed(std::string_view name);
// Over: succeeded, failed or stopped (its ranks have ended, or will not start again). The word
// form is every front end's test of the history's state; "unknown" and any word that is not a
// phase are not over.
bool isOver(JobPhase phase);
bool isOverState(std::string_view word);
std::optional<RankStatus> rankStatusNamed(std::string_view name);

// How a rank ended, as its agent said (judged by the exit status when it did not).
RankStatus exitStatusOf(const proto::RankExited& exited);
// A job's final phase from the leader's JobOutcome; nullopt for a state that is not final.
std::optional<JobPhase> outcomePhaseOf(proto::RankState state);

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

// What the history knew of a job: the fold it persisted (JobRow::fold) and its newest
// attempt's ranks, for a model built when the records themselves are not at hand.
struct StoredJob {
  proto::JobFold fold;
  std::vector<RankState> ranks;
};

// The hang watch of the newest attempt (HangSuspicion), while one is raised.
struct HangWatch {
  std::string stage;  // suspected | hung
  int rank = -1;      // the culprit
  std::string agent;
  std::string cause;
  double since = 0;  // unix seconds of the record that raised this stage
};

class JobModel {
 public:
  // `job_id` empty: every record applied is taken as this job's.
  explicit JobModel(std::string job_id = "");

  // A journal record; records of other jobs and host records are ignored.
  void apply(const std::string& agent, const proto::JournalRecord& record);
  // The history's fold, overlaid by any record applied before or after it: the records of a
  // newer attempt win, and a rank's own record wins over its row.
  void applyStored(const StoredJob& stored);
  // A scheduler ended the job while its agents could not say so (they were killed with it):
  // `phase` (failed or stopped) is the outcome, at `time`, unless the leader already decided.
  void endedByScheduler(JobPhase phase, double time);
  // The fold as the history persists it (StoredJob::fold).
  const proto::JobFold& fold() const { return fold_; }

  // Decided by the agents, never predicted: succeeded, failed or stopped only once the leader
  // said so (JobOutcome), or failed/stopped/restarting the moment it decided (JobDecision,
  // JobRestart). A rank that failed before the leader's decision leaves the job running.
  JobPhase phase() const;
  // The leader said the job is over (JobOutcome, or the history's record of it).
  bool decided() const { return fold_.outcome() != proto::RANK_STATE_UNSPECIFIED; }
  // No rank runs and no further attempt will start: decided, or decided to fail or stop with
  // every rank of the attempt exited.
  bool finished() const;
  // Every rank of the newest attempt has exited (their records may trail the outcome).
  bool allExited() const;
  bool succeeded() const { return decided() && phase() == JobPhase::kSucceeded; }
  // The restart policy's restarts left, as the leader counts them (a client's restart uses
  // none); 0 once the job is over.
  uint32_t restartsLeft() const;
  // The leader's decision on the newest attempt, when it made one (next is set).
  const proto::JobDecision& decision() const { return fold_.decision(); }
  std::optional<HangWatch> hang() const;

  const std::string& name() const { return name_; }
  proto::Launcher launcher() const { return launcher_; }
  int worldSize() const { return fold_.world_size(); }
  uint32_t attempt() const { return fold_.attempt(); }
  int maxRestarts() const { return static_cast<int>(fold_.max_restarts()); }
  const std::map<int, RankState>& ranks() const { return ranks_; }
  // The leader's final word, when it came as a record.
  const std::optional<proto::JobOutcome>& outcome() const { return outcome_; }
  // The root cause of each failed attempt, by attempt (a better one found later replaces it).
  const std::map<uint32_t, proto::JobFailure>& failures() const { return failures_; }
  // When the job ended (the leader's outcome, or the newest rank's exit); 0 until finished.
  double endTime() const;

 private:
  RankState& rank(int number, const std::string& agent);
  // A record of a newer attempt: its ranks start from scratch, perhaps fewer on fewer hosts.
  void startAttempt(uint32_t attempt);

  std::string job_id_;
  std::string name_;
  proto::Launcher launcher_ = proto::LAUNCHER_UNSPECIFIED;
  proto::JobFold fold_;  // what decides the phase; the history persists it whole
  std::optional<proto::JobOutcome> outcome_;
  std::map<int, RankState> ranks_;
  std::map<uint32_t, proto::JobFailure> failures_;
  // Who journaled the current attempt's decision: in a network split both sides journal that
  // they wait, and the side with the majority (which waits for fewer agents) is the one shown.
  std::string decided_by_;
};

}  // namespace ringmaster::job
