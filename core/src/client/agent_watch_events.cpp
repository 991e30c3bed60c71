#include "client/agent_watch_events.h"

#include <cmath>

namespace ringmaster::client {
namespace {

store::EventRow watchEvent(const AgentStatus& status, const std::string& job, uint32_t attempt,
                           const std::string& kind, std::string detail) {
  store::EventRow e;
  e.job_id = job;
  e.attempt = attempt;
  e.source = "watch";
  // Unique per client and moment (a job's events are keyed by job, attempt, source and seq).
  e.seq = static_cast<uint64_t>(std::llround(status.time * 1e6));
  e.agent = status.name;
  e.time = status.time;
  e.kind = kind;
  e.detail = std::move(detail);
  return e;  // not a problem: what the agent's ranks did meanwhile has events of its own
}

}  // namespace

std::vector<store::EventRow> watchEvents(AgentState before, const AgentStatus& now,
                                         std::map<std::string, uint32_t>* lost_jobs) {
  std::vector<store::EventRow> events;
  // kError is an agent that answers with something wrong (a damaged journal record): not silent.
  const bool silent = now.state == AgentState::kUnreachable ||
                      now.state == AgentState::kKeyRejected ||
                      now.state == AgentState::kServerKeyMismatch;
  if (before == AgentState::kOnline && silent) {
    lost_jobs->clear();
    if (now.inventory) {
      for (const auto& rank : now.inventory->running_ranks()) {
        (*lost_jobs)[rank.job()] = rank.attempt();
      }
    }
    std::string detail = now.name + " not answering";
    if (!now.reason.empty()) detail += ": " + now.reason;
    for (const auto& [job, attempt] : *lost_jobs) {
      events.push_back(watchEvent(now, job, attempt, "agent_silent", detail));
    }
  } else if (now.state == AgentState::kOnline && !lost_jobs->empty()) {
    for (const auto& [job, attempt] : *lost_jobs) {
      events.push_back(watchEvent(now, job, attempt, "agent_back", now.name + " answers again"));
    }
    lost_jobs->clear();
  }
  return events;
}

}  // namespace ringmaster::client
