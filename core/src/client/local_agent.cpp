#include "ringmaster/client/local_agent.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

extern char** environ;

namespace ringmaster::client {
namespace {

using Clock = std::chrono::steady_clock;

std::string infoPath(const std::string& state_dir) { return state_dir + "/local-agent.info"; }

// "endpoint X" / "public-key Y" lines of the agent's banner; empty when not (yet) there.
std::string bannerField(const std::string& text, const std::string& key) {
  size_t at = text.find(key + " ");
  if (at == std::string::npos) return {};
  at += key.size() + 1;
  const size_t end = text.find('\n', at);
  if (end == std::string::npos) return {};  // the line is not complete yet
  return text.substr(at, end - at);
}

bool running(pid_t pid) {
  if (pid <= 0) return false;
  // A zombie child of ours counts as gone.
  int status;
  if (::waitpid(pid, &status, WNOHANG) == pid) return false;
  return ::kill(pid, 0) == 0;
}

}  // namespace

std::string executableDir() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "." : self.parent_path().string();
}

std::string resourcesDir(const std::string& source_tree_resources) {
  if (const char* env = std::getenv("RINGMASTER_RESOURCES"); env && *env) return env;
  const std::filesystem::path installed =
      std::filesystem::path(executableDir()).parent_path() / "share" / "ringmaster";
  std::error_code ec;
  if (std::filesystem::is_directory(installed / "jobs", ec)) return installed.string();
  return source_tree_resources;
}

Result<LocalAgent> startLocalAgent(const LocalAgentOptions& options) {
  std::error_code ec;
  std::filesystem::create_directories(options.state_dir, ec);
  if (ec) return ioError("cannot create " + options.state_dir + ": " + ec.message());
  // One slot per CPU, GPUs or not: on a workstation CPU jobs are as common as GPU ones, and the
  // device plan (job/device_plan.h) still gives a GPU only to a rank that can have one of its
  // own. (A GPU host's agent defaults to one slot per GPU, which is what spreads jobs over hosts.)
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  // Ranks at nice 10: on the user's own desktop, ranks using every core must not starve the app's
  // GUI thread (on 2 cores, 8 ranks made its longest stall 50-107 ms; at nice 10, 42-49 ms).
  std::vector<std::string> args = {
      options.program,      "--listen",    options.listen, "--state-dir",
      options.state_dir,    "--name",      options.name,   "--slots",
      std::to_string(cpus), "--rank-nice", "10",           "--quiet"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  // Attached: the banner comes through a pipe. Detached: through agent.log, which outlives us.
  const std::string log_path = options.state_dir + "/agent.log";
  int out[2] = {-1, -1};
  int log_fd = -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (options.detach) {
    log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (log_fd < 0) return ioError("cannot write " + log_path + ": " + std::strerror(errno));
    posix_spawn_file_actions_adddup2(&actions, log_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, log_fd, 2);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  } else {
    if (::pipe2(out, O_CLOEXEC) != 0) return ioError("pipe failed");
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  }
  LocalAgent agent;
  const int rc =
      posix_spawn(&agent.pid, options.program.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (log_fd >= 0) ::close(log_fd);
  if (out[1] >= 0) ::close(out[1]);
  if (rc != 0) {
    if (out[0] >= 0) ::close(out[0]);
    return ioError("cannot start " + options.program + ": " + std::strerror(rc));
  }

  std::string text;
  const auto deadline = Clock::now() + std::chrono::milliseconds(options.start_timeout_ms);
  while (Clock::now() < deadline && running(agent.pid)) {
    if (options.detach) {
      std::ifstream in(log_path);
      std::stringstream buffer;
      buffer << in.rdbuf();
      text = buffer.str();
    } else {
      pollfd p{out[0], POLLIN, 0};
      if (::poll(&p, 1, 100) > 0) {
        char chunk[512];
        const ssize_t n = ::read(out[0], chunk, sizeof chunk);
        if (n <= 0) break;
        text.append(chunk, static_cast<size_t>(n));
      }
    }
    agent.endpoint = bannerField(text, "endpoint");
    agent.public_key = bannerField(text, "public-key");
    if (!agent.endpoint.empty() && !agent.public_key.empty()) break;
    if (options.detach) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (out[0] >= 0) ::close(out[0]);
  if (agent.endpoint.empty() || agent.public_key.empty()) {
    ::kill(agent.pid, SIGKILL);
    ::waitpid(agent.pid, nullptr, 0);
    return unavailable("the local agent did not start (run " + options.program + " --state-dir " +
                       options.state_dir + " to see why" +
                       (options.detach ? "; its output is in " + log_path : std::string()) + ")");
  }
  if (options.detach) {
    std::ofstream info(infoPath(options.state_dir), std::ios::trunc);
    info << "pid " << agent.pid << "\nendpoint " << agent.endpoint << "\npublic-key "
         << agent.public_key << "\n";
  }
  return agent;
}

std::optional<LocalAgent> findLocalAgent(const std::string& state_dir) {
  std::ifstream in(infoPath(state_dir));
  if (!in) return std::nullopt;
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  LocalAgent agent;
  agent.pid = static_cast<pid_t>(std::atol(bannerField(text, "pid").c_str()));
  agent.endpoint = bannerField(text, "endpoint");
  agent.public_key = bannerField(text, "public-key");
  if (!running(agent.pid) || agent.endpoint.empty()) return std::nullopt;
  // The pid may have been reused by another program since: it must be an agent.
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/" + std::to_string(agent.pid) + "/exe", ec);
  if (ec || exe.filename() != "ringmaster-agent") return std::nullopt;
  return agent;
}

void stopLocalAgent(const LocalAgent& agent, int timeout_ms) {
  if (agent.pid <= 0) return;
  ::kill(agent.pid, SIGTERM);
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (Clock::now() < deadline) {
    int status;
    const pid_t done = ::waitpid(agent.pid, &status, WNOHANG);
    if (done == agent.pid || (done < 0 && ::kill(agent.pid, 0) != 0)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(agent.pid, SIGKILL);
  ::waitpid(agent.pid, nullptr, 0);
}

}  // namespace ringmaster::client
