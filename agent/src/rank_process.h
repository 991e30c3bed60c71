#pragma once
// Starting one rank: fork + exec of an argv vector (no shell), in its own process group, with
// stdout and stderr on a pipe each that the agent reads, stdin from /dev/null, and PR_SET_PDEATHSIG
// so the rank dies with the agent. An exec failure is reported synchronously, with errno's text.

#include <sys/types.h>

#include <string>
#include <vector>

#include "rank_confinement.h"
#include "ringmaster/util/result.h"

namespace ringmaster::agent {

struct SpawnRequest {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // KEY=VALUE
  std::string workdir;
  const RankConfinement* confinement = nullptr;  // the user and limits to run as; none: as is
  int cgroup_procs_fd = -1;  // a cgroup's cgroup.procs for the rank to join first (RankCgroups)
};

struct SpawnedProcess {
  pid_t pid = -1;      // also the process group id
  int output_fd = -1;  // read end of the stdout pipe, non-blocking, close-on-exec
  int stderr_fd = -1;  // read end of the stderr pipe, the same
};

Result<SpawnedProcess> spawnProcess(const SpawnRequest& request);

// Finds `program` on PATH (from `env`, else the agent's) as execvp would in `workdir`, where the
// rank runs: a relative path (or PATH entry) is taken from there, not from the agent's own
// directory. The result is absolute when `workdir` is; empty when not found or not executable.
std::string resolveProgram(const std::string& program, const std::vector<std::string>& env,
                           const std::string& workdir);

}  // namespace ringmaster::agent
