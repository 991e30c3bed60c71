#include "rank_cgroups.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ringmaster::agent {
namespace {

std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Status writeText(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  const bool ok =
      fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int error = errno;
  if (fd >= 0) ::close(fd);
  if (!ok) return ioError("cannot write '" + text + "' to " + path + ": " + std::strerror(error));
  return Status::ok();
}

}  // namespace

std::optional<std::string> cgroup2MountPoint(const std::string& mountinfo) {
  // "36 25 0:31 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate"
  std::istringstream lines(mountinfo);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
    std::istringstream fields(line.substr(0, dash));
    std::string field, mount_point;
    for (int i = 0; i < 5 && fields >> field; ++i) mount_point = field;
    if (!mount_point.empty()) return mount_point;
  }
  return std::nullopt;
}

std::optional<std::string> unifiedCgroupPath(const std::string& proc_cgroup) {
  std::istringstream lines(proc_cgroup);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return std::nullopt;
}

Result<RankCgroups> RankCgroups::prepare(uint64_t memory_max) {
  const std::string why = "--rank-memory needs cgroup v2 with the memory controller: ";
  auto mount = cgroup2MountPoint(readText("/proc/self/mountinfo"));
  if (!mount) return unavailable(why + "no cgroup v2 hierarchy is mounted");
  auto path = unifiedCgroupPath(readText("/proc/self/cgroup"));
  if (!path) return unavailable(why + "this process is in no cgroup v2 (/proc/self/cgroup)");
  RankCgroups cgroups;
  cgroups.base_ = *mount + (*path == "/" ? "" : *path);
  cgroups.memory_max_ = memory_max;
  const std::string controllers = readText(cgroups.base_ + "/cgroup.controllers");
  if ((" " + controllers).find(" memory") == std::string::npos) {
    return unavailable(why + cgroups.base_ + " offers none (the host gives it to cgroup v1, or " +
                       "the agent's service lacks Delegate=yes)");
  }
  const std::string own = cgroups.base_ + "/agent";
  if (::mkdir(own.c_str(), 0755) != 0 && errno != EEXIST) {
    return ioError(why + "cannot create " + own + ": " + std::strerror(errno));
  }
  RM_RETURN_IF_ERROR(writeText(own + "/cgroup.procs", std::to_string(::getpid())));
  RM_RETURN_IF_ERROR(writeText(cgroups.base_ + "/cgroup.subtree_control", "+memory"));
  return cgroups;
}

Result<int> RankCgroups::create(const std::string& name) {
  const std::string dir = dirOf(name);
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return ioError("cannot create cgroup " + dir + ": " + std::strerror(errno));
  }
  RM_RETURN_IF_ERROR(writeText(dir + "/memory.max", std::to_string(memory_max_)));
  (void)writeText(dir + "/memory.swap.max", "0");  // absent without swap accounting
  const int fd = ::open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return ioError("cannot open " + dir + "/cgroup.procs: " + std::strerror(errno));
  return fd;
}

bool RankCgroups::killedForMemory(const std::string& name) const {
  std::istringstream events(readText(dirOf(name) + "/memory.events"));
  std::string key;
  uint64_t count = 0;
  while (events >> key >> count) {
    if (key == "oom_kill" && count > 0) return true;
  }
  return false;
}

void RankCgroups::remove(const std::string& name) const { ::rmdir(dirOf(name).c_str()); }

}  // namespace ringmaster::agent
