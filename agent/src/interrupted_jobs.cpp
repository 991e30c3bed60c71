#include "interrupted_jobs.h"

#include <algorithm>

#include "journal.h"

namespace ringmaster::agent {

const EarlierRun::Outcome* EarlierRun::outcomeOf(const std::string& job_id) const {
  for (auto it = outcomes.rbegin(); it != outcomes.rend(); ++it) {
    if (it->job_id == job_id) return &*it;
  }
  return nullptr;
}

EarlierRun recordInterruptedJobs(Journal& journal, const std::string& agent_name,
                                 const std::set<std::string>& resumed_jobs,
                                 const std::function<void(const std::string&)>& log) {
  EarlierRun run;
  std::map<EarlierRun::Attempt, std::set<int>> open_ranks;
  std::set<EarlierRun::Attempt> open_jobs;
  // Jobs whose ranks all ran here: no other agent is left to end them with a JobOutcome.
  std::set<EarlierRun::Attempt> whole_jobs_here;
  forEachRecord(journal, [&](const proto::JournalRecord& record) {
    auto key = std::make_pair(record.job(), record.attempt());
    switch (record.kind_case()) {
      case proto::JournalRecord::kJobAccepted:
        open_jobs.insert(key);
        for (const auto& r : record.job_accepted().ranks()) open_ranks[key].insert(r.rank());
        if (record.job_accepted().ranks_size() == record.job_accepted().world_size()) {
          whole_jobs_here.insert(key);
        }
        break;
      case proto::JournalRecord::kRankExited:
        open_ranks[key].erase(record.rank_exited().rank());
        break;
      case proto::JournalRecord::kJobFinished:
        open_jobs.erase(key);
        run.ended_here[key] = record.job_finished().state();
        break;
      case proto::JournalRecord::kJobOutcome:
        std::erase_if(run.outcomes, [&](const auto& o) { return o.job_id == record.job(); });
        run.outcomes.push_back({record.job(), record.attempt(), record.job_outcome().state()});
        break;
      default:
        break;
    }
  });
  for (const auto& key : open_jobs) {
    for (int rank : open_ranks[key]) {
      proto::JournalRecord exited;
      exited.set_job(key.first);
      exited.set_attempt(key.second);
      exited.set_source("rank:" + std::to_string(rank));
      exited.mutable_rank_exited()->set_rank(rank);
      exited.mutable_rank_exited()->set_state(proto::FAILED);
      exited.mutable_rank_exited()->set_exit_code(-1);
      exited.mutable_rank_exited()->set_error("the agent restarted while the rank was running");
      (void)journal.append(exited);  // kept pending on a write failure; flushed below
    }
    proto::JournalRecord finished;
    finished.set_job(key.first);
    finished.set_attempt(key.second);
    finished.set_source("agent:" + agent_name);
    finished.mutable_job_finished()->set_state(proto::FAILED);
    finished.mutable_job_finished()->set_agent(agent_name);
    (void)journal.append(finished);
    run.ended_here[key] = proto::FAILED;
    run.interrupted.insert(key);
    const bool resumed = resumed_jobs.count(key.first) > 0;
    if (whole_jobs_here.count(key) && !resumed) {
      proto::JournalRecord outcome;
      outcome.set_job(key.first);
      outcome.set_attempt(key.second);
      outcome.set_source("agent:" + agent_name);
      outcome.mutable_job_outcome()->set_state(proto::FAILED);
      outcome.mutable_job_outcome()->set_cause("agent " + agent_name +
                                               " restarted while the job was running");
      outcome.mutable_job_outcome()->set_attempts(key.second);
      (void)journal.append(outcome);
      run.outcomes.push_back({key.first, key.second, proto::FAILED});
    }
    log("job " + key.first + " attempt " + std::to_string(key.second) +
        " was interrupted by an agent restart: recorded as failed" +
        (resumed ? "; its gang decides whether it goes on" : ""));
  }
  if (Status flushed = journal.flush(); !flushed.isOk()) {
    log("cannot record the interrupted jobs yet: " + flushed.message());
  }
  return run;
}

}  // namespace ringmaster::agent
