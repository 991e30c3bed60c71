#include "ringmaster/client/job_liveness.h"

#include <algorithm>

#include "ringmaster/client/agent_status.h"
#include "ringmaster/job/job_model.h"

namespace ringmaster::client {

bool noteAgentStatus(const AgentStatus& status, std::map<std::string, double>* silent) {
  const bool answers =
      status.state == AgentState::kOnline || status.state == AgentState::kConnecting;
  return answers ? silent->erase(status.name) > 0
                 : silent->insert_or_assign(status.name, status.answered_at).second;
}

JobLiveness judgeLiveness(const std::vector<RankLastKnown>& ranks,
                          const std::map<std::string, double>& silent_since) {
  JobLiveness out;
  size_t going = 0;
  for (const RankLastKnown& r : ranks) {
    if (!r.going) continue;
    ++going;
    auto silent = silent_since.find(r.agent);
    if (silent == silent_since.end()) continue;
    out.unknown_ranks.push_back(r.rank);
    out.silent.emplace(r.agent, silent->second);
  }
  std::sort(out.unknown_ranks.begin(), out.unknown_ranks.end());
  out.job_unknown = going > 0 && out.unknown_ranks.size() == going;
  for (const auto& [agent, since] : out.silent) {
    if (since <= 0) continue;  // no time known
    out.evidence_until = out.evidence_until == 0 ? since : std::min(out.evidence_until, since);
  }
  return out;
}

ShownJob showJob(const std::string& state, double finished_at,
                 const std::vector<RankLastKnown>& ranks,
                 const std::map<std::string, double>& silent_since, bool reports_steps) {
  ShownJob shown{state, finished_at, {}};
  if (finished_at > 0 || job::isOverState(state)) return shown;
  if (!silent_since.empty()) {
    shown.liveness = judgeLiveness(ranks, silent_since);
    if (shown.liveness.job_unknown) {
      shown.state = "unknown";
      shown.clock_stop = shown.liveness.evidence_until;
      return shown;
    }
  }
  if (state == "running" && reports_steps) {
    bool going = false, stepped = false;
    for (const RankLastKnown& r : ranks) {
      going = going || r.going;
      stepped = stepped || r.last_step >= 0;
    }
    if (going && !stepped) shown.state = "starting";
  }
  return shown;
}

bool launcherReportsSteps(const std::string& launcher) { return launcher == "native"; }

std::string showRankState(const std::string& state, int64_t last_step, bool reports_steps) {
  return state == "running" && last_step < 0 && reports_steps ? "starting" : state;
}

std::string JobLiveness::describe() const {
  if (silent.empty()) return "";
  std::string text;
  for (const auto& [agent, since] : silent) {
    text += text.empty() ? "agent " : ", agent ";
    text += agent + " not answering";
    if (since > 0) text += " since " + clockTime(since);
  }
  const size_t n = unknown_ranks.size();
  text += " \u2014 state of " + std::to_string(n) + (n == 1 ? " rank" : " ranks") + " unknown";
  return text;
}

}  // namespace ringmaster::client
