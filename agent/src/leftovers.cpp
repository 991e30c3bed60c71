#include "leftovers.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <thread>
#include <utility>

namespace ringmaster::agent {
namespace {

// The whole of a small /proc file; empty when it cannot be read (gone, or not ours).
std::string readProcFile(const std::string& path) {
  std::string data;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return data;
  char buffer[8192];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) data.append(buffer, n);
  ::close(fd);
  return data;
}

// Whether /proc/PID/environ holds every entry of the filter (NAME=VALUE, NUL-separated).
bool matches(const std::string& pid, const LeftoverFilter& filter) {
  const std::string env = '\0' + readProcFile("/proc/" + pid + "/environ") + '\0';
  auto has = [&env](const std::string& entry) {
    return env.find('\0' + entry + '\0') != std::string::npos;
  };
  return has("RINGMASTER_AGENT_DIR=" + filter.agent_dir) &&
         (!filter.job || has("RINGMASTER_JOB_ID=" + *filter.job)) &&
         (!filter.attempt || has("RINGMASTER_ATTEMPT=" + std::to_string(*filter.attempt)));
}

// The children of every thread of `pid` (empty when it is gone or not ours).
std::vector<std::string> childrenOf(const std::string& pid) {
  std::vector<std::string> children;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + pid + "/task", ec)) {
    const std::string list = readProcFile(task.path().string() + "/children");
    for (size_t at = 0; at < list.size();) {
      const size_t end = std::min(list.find(' ', at), list.size());
      if (end > at) children.push_back(list.substr(at, end - at));
      at = end + 1;
    }
  }
  return children;
}

// This process's descendants where the kernel lists children (CONFIG_PROC_CHILDREN), else
// every process of the host.
std::vector<std::string> candidates(bool descendants_only) {
  const std::string own_children = "/proc/self/task/" + std::to_string(::getpid()) + "/children";
  std::vector<std::string> found;
  if (descendants_only && ::access(own_children.c_str(), R_OK) == 0) {
    found = childrenOf("self");
    for (size_t next = 0; next < found.size(); ++next) {
      const std::vector<std::string> theirs = childrenOf(found[next]);
      found.insert(found.end(), theirs.begin(), theirs.end());
    }
    return found;
  }
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename().string();
    if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos) {
      found.push_back(std::move(name));
    }
  }
  return found;
}

// The root directory `pid` sees, as (device, inode); nullopt when it cannot be read.
std::optional<std::pair<dev_t, ino_t>> rootOf(const std::string& pid) {
  struct stat st {};
  if (::stat(("/proc/" + pid + "/root").c_str(), &st) != 0) return std::nullopt;
  return std::make_pair(st.st_dev, st.st_ino);
}

}  // namespace

std::vector<pid_t> findLeftovers(const LeftoverFilter& filter) {
  std::vector<pid_t> found;
  const pid_t self = ::getpid();
  // A state dir's path is unique only within one root: two agents in two chroots (or containers
  // that share the host's processes) may both be /root/.local/share/ringmaster/local-agent, and
  // an agent starting in one ended the other's running ranks (bundle_minroot_test's demo lost a
  // rank to bundle_bullseye_test's agent starting beside it). Only processes that see this
  // agent's root are its.
  const auto our_root = rootOf("self");
  for (const std::string& name : candidates(filter.descendants_only)) {
    const pid_t pid = static_cast<pid_t>(std::atol(name.c_str()));
    if (pid != self && matches(name, filter) && rootOf(name) == our_root) found.push_back(pid);
  }
  return found;
}

int killLeftovers(const LeftoverFilter& filter, std::chrono::milliseconds wait,
                  std::vector<pid_t>* still_there) {
  std::vector<pid_t> found = findLeftovers(filter);
  for (pid_t pid : found) ::kill(pid, SIGKILL);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::vector<pid_t> left = found;
  while (!left.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    // A killed process reads as gone once its environ is (a zombie has none left).
    left = findLeftovers(filter);
    for (pid_t pid : left) ::kill(pid, SIGKILL);  // started meanwhile by one being killed
  }
  if (still_there) *still_there = left;
  return static_cast<int>(found.size());
}

}  // namespace ringmaster::agent
