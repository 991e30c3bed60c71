#pragma once
// What the agent can tell about one rank from outside it: how it failed (one line and the end of
// its log) and what it is doing right now (from /proc), for failure events and hang verdicts.

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ringmaster/protocol/ringmaster.pb.h"

namespace ringmaster::agent {

// The last `count` lines of the file at `path` (at most its last 16 KB), oldest first.
std::vector<std::string> lastLines(const std::string& path, size_t count);

// The failure of rank `exited.rank()` on `agent` as a JobFailure: kind, cause line, its newest
// step and the end of its log.
proto::JobFailure describeRankFailure(const proto::RankExited& exited, const std::string& agent,
                                      int64_t step, const std::string& log_path);

// CPU time and scheduler state of a process, from /proc/<pid>/stat.
struct ProcSample {
  bool valid = false;
  char state = '?';        // R running, S sleeping, D disk, T/t stopped, Z zombie
  uint64_t cpu_ticks = 0;  // user + system, in clock ticks
};
ProcSample sampleProc(pid_t pid);

// "stopped (SIGSTOP or a debugger)", "computing" (busy at least half of `seconds`), "waiting".
std::string activityOf(const ProcSample& now, uint64_t previous_ticks, double seconds);

}  // namespace ringmaster::agent
