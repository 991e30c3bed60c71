#include "ringmaster/client/job_progress.h"

namespace ringmaster::client {

void JobProgress::observe(const proto::JournalRecord& record) {
  if (record.job() != job_id_) return;
  // A root cause journaled again (a better one found later) replaces the first.
  if (record.has_job_failure()) failures_[record.attempt()] = record.job_failure();
  if (record.has_job_outcome()) outcome_ = record.job_outcome();
  if (record.attempt() < attempt_) return;
  if (record.attempt() > attempt_) {
    attempt_ = record.attempt();
    exits_.clear();
  }
  if (record.has_job_accepted()) world_size_ = record.job_accepted().world_size();
  if (record.has_rank_exited()) exits_[record.rank_exited().rank()] = record.rank_exited();
}

bool JobProgress::allExited() const {
  return world_size_ > 0 && static_cast<int>(exits_.size()) >= world_size_;
}

}  // namespace ringmaster::client
