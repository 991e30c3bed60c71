#pragma once
// Memory limits for ranks through cgroup v2 (`--rank-memory`). Each rank gets a cgroup of its own
// under the agent's, with memory.max (and no swap); the rank's process joins it between fork and
// exec, so everything it starts is counted. cgroup v2 lets a cgroup either hold processes or
// share its controllers with child cgroups: the agent moves itself into `<its cgroup>/agent` and
// enables the memory controller for its children. The agent's cgroup must offer the controller
// (systemd: a unit with `Delegate=yes`). Used by the agent's loop only.

#include <cstdint>
#include <optional>
#include <string>

#include "ringmaster/util/result.h"

namespace ringmaster::agent {

// The mount point of the cgroup v2 hierarchy in /proc/self/mountinfo text.
std::optional<std::string> cgroup2MountPoint(const std::string& mountinfo);
// The process's cgroup v2 path ("0::PATH") in /proc/self/cgroup text.
std::optional<std::string> unifiedCgroupPath(const std::string& proc_cgroup);

class RankCgroups {
 public:
  // Readies this agent's cgroup for rank cgroups of `memory_max` bytes each; an error says why
  // limits cannot be applied on this host.
  static Result<RankCgroups> prepare(uint64_t memory_max);

  // Creates the cgroup `name` with the limit; returns an open (close-on-exec) descriptor of its
  // cgroup.procs for the rank's process to write "0" into before exec.
  Result<int> create(const std::string& name);
  std::string dirOf(const std::string& name) const { return base_ + "/" + name; }
  // Whether the kernel killed a process of cgroup `name` for going over its limit.
  bool killedForMemory(const std::string& name) const;
  // Removes the cgroup once its processes are gone (left in place while one remains).
  void remove(const std::string& name) const;
  uint64_t memoryMax() const { return memory_max_; }

 private:
  std::string base_;  // the agent's cgroup directory
  uint64_t memory_max_ = 0;
};

}  // namespace ringmaster::agent
