#pragma once
// What a client may say about a job whose agents do not answer. A rank last heard running on an
// agent that has gone silent is not "running": its state is unknown since the agent's last
// answer, and so is the job's when every rank still going is on a silent agent. The agent's
// journal replaces this as soon as it answers again.
//
// Thread-safe: pure functions.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ringmaster/client/agent_status.h"

namespace ringmaster::client {

// A rank as last recorded: where it runs, whether it was still going (pending or running), and
// the highest step it reported in this attempt (-1: none yet).
struct RankLastKnown {
  int rank = 0;
  std::string agent;
  bool going = false;
  int64_t last_step = -1;
};

struct JobLiveness {
  // The job's agents with a going rank that do not answer, each with the unix time of its last
  // answer (the newest evidence of its ranks; 0 when not known), by name.
  std::map<std::string, double> silent;
  std::vector<int> unknown_ranks;  // going ranks on silent agents, ascending
  bool job_unknown = false;        // every going rank is on a silent agent
  double evidence_until = 0;       // the oldest known last answer among `silent`; 0 when none

  bool anyUnknown() const { return !unknown_ranks.empty(); }
  // "agent a1 not answering since 14:02:11 — state of 4 ranks unknown"; empty when all answer.
  std::string describe() const;
};

// Keeps `silent` (agent -> unix time of its last answer, 0 when none came since the session
// started) up to date with one status: an agent that answers, or is still connecting, leaves it.
// Returns whether an agent went silent or answered again.
bool noteAgentStatus(const AgentStatus& status, std::map<std::string, double>* silent);

// `silent_since`: every agent that does not answer now, with the unix time of its last answer.
JobLiveness judgeLiveness(const std::vector<RankLastKnown>& ranks,
                          const std::map<std::string, double>& silent_since);

// A job as every front end shows it (status, the History, the dashboard's header): one rule, so
// that they never disagree. A job that is over (`finished_at` set, or a final state) is what it
// was; one that is not, with every going rank on a silent agent, is "unknown", its clock stopped
// at their last answer. A running job whose launcher reports steps (launcherReportsSteps) and
// none of whose ranks has reported one yet is "starting": its ranks are loading data, meeting
// each other, or restoring a checkpoint.
struct ShownJob {
  std::string state;      // the fold's word, or "unknown"
  double clock_stop = 0;  // where its elapsed time ends: finished_at, the last answer, 0 = now
  JobLiveness liveness;   // empty for a job that is over
  bool unknown() const { return liveness.job_unknown; }
};
ShownJob showJob(const std::string& state, double finished_at,
                 const std::vector<RankLastKnown>& ranks,
                 const std::map<std::string, double>& silent_since, bool reports_steps = false);

// A rank as the front ends show it, by the same rule: a running rank of a launcher that reports
// steps is "starting" until it reports one (last_step -1); otherwise its state.
std::string showRankState(const std::string& state, int64_t last_step, bool reports_steps);

// Whether every rank of a job with this launcher ("native", "command", ...) reports its steps:
// only Ringmaster's own trainer does for sure; a command or torchrun script may print none, and
// would otherwise read "starting" to its end.
bool launcherReportsSteps(const std::string& launcher);

}  // namespace ringmaster::client
