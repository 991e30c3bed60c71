#pragma once
// Follows one job through journal records as they arrive (from any of its agents): how the ranks
// of its newest attempt exited, its failures, and whether the job is over (its leader journals a
// JobOutcome once no further attempt will start).

#include <map>
#include <optional>
#include <string>

#include "ringmaster/protocol/ringmaster.pb.h"

namespace ringmaster::client {

class JobProgress {
 public:
  explicit JobProgress(std::string job_id) : job_id_(std::move(job_id)) {}

  void observe(const proto::JournalRecord& record);

  // The job is over: no rank runs and no further attempt will start.
  bool finished() const { return outcome_.has_value(); }
  // Every rank of the newest attempt has exited (its records may trail the outcome).
  bool allExited() const;
  bool succeeded() const { return outcome_ && outcome_->state() == proto::SUCCEEDED; }
  const std::optional<proto::JobOutcome>& outcome() const { return outcome_; }
  // The root cause of each failed attempt, by attempt.
  const std::map<uint32_t, proto::JobFailure>& failures() const { return failures_; }
  int worldSize() const { return world_size_; }
  uint32_t attempt() const { return attempt_; }
  const std::map<int, proto::RankExited>& exits() const { return exits_; }

 private:
  std::string job_id_;
  uint32_t attempt_ = 0;
  int world_size_ = 0;
  std::map<int, proto::RankExited> exits_;  // of the newest attempt
  std::map<uint32_t, proto::JobFailure> failures_;
  std::optional<proto::JobOutcome> outcome_;
};

}  // namespace ringmaster::client
