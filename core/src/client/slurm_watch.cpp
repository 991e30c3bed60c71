#include "ringmaster/client/slurm_watch.h"

#include <algorithm>

namespace ringmaster::client {
namespace {

constexpr auto kListEvery = std::chrono::seconds(5);  // jobs submitted elsewhere
constexpr auto kReadEvery = std::chrono::seconds(1);
constexpr auto kStateEvery = std::chrono::seconds(5);

}  // namespace

std::string SlurmWatch::loginOf(const std::string& cluster) const {
  for (const auto& c : clusters_) {
    if (c.name == cluster) return c.login;
  }
  return "";
}

bool SlurmWatch::resting(const std::string& cluster, Clock::time_point now) const {
  auto rest = rests_.find(cluster);
  return rest != rests_.end() && now < rest->second.until;
}

void SlurmWatch::noteAnswer(const std::string& cluster, const Status& status,
                            Clock::time_point now) {
  const bool unanswered =
      status.code() == ErrorCode::kUnavailable || status.code() == ErrorCode::kTimeout;
  if (!unanswered || loginOf(cluster).empty()) {
    rests_.erase(cluster);
    return;
  }
  Rest& rest = rests_[cluster];
  rest.length = std::min<std::chrono::seconds>(std::chrono::seconds(60),
                                               std::max(std::chrono::seconds(5), rest.length * 2));
  rest.until = now + rest.length;
}

bool SlurmWatch::tick(const RecordsFn& records, const ChangedFn& changed) {
  const auto now = Clock::now();
  if (now >= next_list_) {
    next_list_ = now + kListEvery;
    if (auto rows = history_->slurmJobs(); rows.isOk()) {
      for (auto& row : *rows) {
        if (jobs_.count(row.job_id) || forgotten_.count(row.job_id) ||
            slurm::isFinished(slurm::phaseOf(row.state))) {
          continue;
        }
        Followed followed;
        followed.sync = std::make_unique<SlurmJobSync>(
            slurm::JobDir{row.job_dir}, history_, writer_, slurm::Where{loginOf(row.cluster), ""});
        followed.row = std::move(row);
        jobs_.emplace(followed.row.job_id, std::move(followed));
        next_state_ = now;  // a new job's state at once
      }
    }
  }
  bool any_records = false;
  auto read = [&](Followed& job) {
    // Batches by agent, as the session hands out agents' journals.
    std::map<std::string, std::vector<proto::JournalRecord>> by_agent;
    auto polled = job.sync->poll([&](const std::string& agent, const proto::JournalRecord& record) {
      by_agent[agent].push_back(record);
    });
    noteAnswer(job.row.cluster, polled.status(), Clock::now());
    for (auto& [agent, batch] : by_agent) {
      any_records = true;
      records(agent, std::move(batch));
    }
  };
  if (now >= next_read_) {
    next_read_ = now + kReadEvery;
    for (auto& [id, job] : jobs_) {
      if (!resting(job.row.cluster, now)) read(job);
    }
  }
  if (now >= next_state_) {
    next_state_ = now + kStateEvery;
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      Followed& job = it->second;
      if (resting(job.row.cluster, now)) {
        ++it;
        continue;
      }
      const std::string before = job.row.state + "|" + job.row.reason;
      auto state = refreshSlurmState(writer_, {loginOf(job.row.cluster), ""}, &job.row);
      noteAnswer(job.row.cluster, state.status(), Clock::now());
      if (job.row.state + "|" + job.row.reason != before) changed(job.row);
      // Finished, or forgotten by Slurm: what its agents journaled last, then no more.
      const bool forgotten = !state.isOk() && state.status().code() == ErrorCode::kNotFound;
      if (forgotten) forgotten_.insert(it->first);
      if (forgotten || (state.isOk() && slurm::isFinished(state->phase))) {
        read(job);
        it = jobs_.erase(it);
      } else {
        ++it;
      }
    }
  }
  return any_records;
}

}  // namespace ringmaster::client
