#include "leftovers.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <thread>
#include <utility>

namespace ringmaster::agent {
namespace {

// NAME=VALUE entries of /proc/PID/environ; empty when it cannot be read (gone, or not ours).
std::map<std::string, std::string> environmentOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::map<std::string, std::string> env;
  size_t start = 0;
  while (start < data.size()) {
    size_t end = data.find('\0', start);
    if (end == std::string::npos) end = data.size();
    const std::string entry = data.substr(start, end - start);
    const size_t eq = entry.find('=');
    if (eq != std::string::npos && entry.rfind("RINGMASTER_", 0) == 0) {
      env[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
    start = end + 1;
  }
  return env;
}

bool matches(const std::map<std::string, std::string>& env, const LeftoverFilter& filter) {
  auto value = [&](const char* name) -> const std::string* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : &it->second;
  };
  const std::string* agent_dir = value("RINGMASTER_AGENT_DIR");
  if (!agent_dir || *agent_dir != filter.agent_dir) return false;
  if (filter.job) {
    const std::string* job = value("RINGMASTER_JOB_ID");
    if (!job || *job != *filter.job) return false;
  }
  if (filter.attempt) {
    const std::string* attempt = value("RINGMASTER_ATTEMPT");
    if (!attempt || *attempt != std::to_string(*filter.attempt)) return false;
  }
  return true;
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
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::atol(name.c_str()));
    if (pid != self && matches(environmentOf(pid), filter) && rootOf(name) == our_root) {
      found.push_back(pid);
    }
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
