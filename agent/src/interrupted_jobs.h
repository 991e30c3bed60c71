#pragma once
// Crash recovery at agent start: ranks that were running when a previous agent process died
// are gone with it. Each is journaled as failed, and its attempt as finished, so that no client
// waits for them forever. A job whose gang this agent takes up again (gang_ledger.h) gets no
// outcome here: its gang decides whether it goes on.

#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ringmaster/protocol/ringmaster.pb.h"

namespace ringmaster::agent {

class Journal;

// What the journal says of the jobs an earlier agent process ran here.
struct EarlierRun {
  using Attempt = std::pair<std::string, uint32_t>;  // job, attempt
  // Every attempt whose ranks here ended, with their state here; those still running when the
  // earlier process died are in `interrupted` too, journaled as failed now.
  std::map<Attempt, proto::RankState> ended_here;
  std::set<Attempt> interrupted;
  // The jobs whose outcome a gang here decided: the last attempt and its state, oldest first.
  struct Outcome {
    std::string job_id;
    uint32_t attempt = 0;
    proto::RankState state = proto::RANK_STATE_UNSPECIFIED;
  };
  std::vector<Outcome> outcomes;
  const Outcome* outcomeOf(const std::string& job_id) const;
};

EarlierRun recordInterruptedJobs(Journal& journal, const std::string& agent_name,
                                 const std::set<std::string>& resumed_jobs,
                                 const std::function<void(const std::string&)>& log);

}  // namespace ringmaster::agent
