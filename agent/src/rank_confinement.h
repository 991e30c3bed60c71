#pragma once
// Who ranks run as, and under which limits. An agent run as root gives its ranks to the user
// named by --run-as (its state dir, keys and journal stay unreadable to them); every rank gets
// PR_SET_NO_NEW_PRIVS (no setuid program raises it), no core dumps (which would hold the job's
// credential), and an open-file limit.

#include <sys/resource.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "ringmaster/util/result.h"

namespace ringmaster::agent {

struct RankConfinement {
  bool switch_user = false;  // else ranks run as the agent's user
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups of the user
  std::string user, home;
  rlim_t open_files = 65536;
  // The ranks' nice value (0..19): on a workstation whose desktop app started this agent, ranks
  // that use every core then still leave the app's GUI thread its turn. A rank starts at it even
  // when the agent itself runs at a lower one (AgentOptions::nice).
  int nice = 0;
  // The processes and threads the ranks' uid may have at once (RLIMIT_NPROC, counted over every
  // process of the uid: a job's own with --job-uids); 0: no limit. A fork bomb in one job then
  // ends in EAGAIN inside that job, not in a host nobody can log in to.
  rlim_t processes = 0;
};

// The confinement for ranks run as `run_as` (empty: as the agent's user), with at most
// `open_files` open files (and no more than the agent may have). An error names an unknown user.
Result<RankConfinement> confinementFor(const std::string& run_as, rlim_t open_files);

// Makes `path` (a directory the agent created for a job) the rank user's, so ranks can write
// their checkpoints and files there. Nothing to do when ranks run as the agent's user.
Status giveToRanks(const RankConfinement& confinement, const std::string& path);

// HOME, USER and LOGNAME of the rank user, replacing the agent's in `env` (KEY=VALUE).
void setUserEnvironment(const RankConfinement& confinement, std::vector<std::string>* env);

// In the child between fork and exec (async-signal-safe): applies the limits, then the user.
// Returns 0, or the errno of the step that failed.
int applyConfinement(const RankConfinement& confinement);

}  // namespace ringmaster::agent
