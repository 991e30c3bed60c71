#include "harness.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <thread>

extern char** environ;

namespace ringmaster::testing {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<char*> cStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

std::vector<std::string> mergedEnv(const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> all;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    size_t eq = entry.find('=');
    if (eq != std::string::npos) all[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [k, v] : extra) all[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : all) out.push_back(k + "=" + v);
  return out;
}

}  // namespace

TempDir::TempDir() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "ringmaster-test-XXXXXX").string();
  path_ = ::mkdtemp(pattern.data());
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

// The build's folders, unless the environment moves them: tests/gpu/run.sh runs the tests from a
// relocated bundle (installer/make-bundle.sh) beside a copy of the source tree.
std::string dirFromEnv(const char* name, const char* built_in) {
  const char* value = std::getenv(name);
  return value && *value ? value : built_in;
}
std::string binPath(const std::string& name) {
  return dirFromEnv("RINGMASTER_TEST_BIN_DIR", RM_BIN_DIR) + "/" + name;
}
std::string sourcePath(const std::string& relative) {
  return dirFromEnv("RINGMASTER_TEST_SOURCE_DIR", RM_SOURCE_DIR) + "/" + relative;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string strategySpec(const std::string& name) {
  const std::string written = readFile(sourcePath("resources/jobs/strategies/" + name + ".yaml"));
  std::istringstream lines(written);
  std::string spec;
  const std::regex batch(R"(^  batch_size: (\d+).*)");
  std::smatch match;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  model:", 0) == 0) {
      line = "  model: {kind: mlp, hidden: [128, 64], activation: relu, task: classification}";
    } else if (line.rfind("  dataset:", 0) == 0) {
      line = "  dataset: {kind: digits}";
    } else if (line.rfind("  epochs:", 0) == 0) {
      line = "  epochs: 10";
    } else if (std::regex_match(line, match, batch)) {
      line = "  batch_size: " + std::to_string(std::stoi(match[1]) * 13 / 32);
    } else if (line.rfind("  optimizer:", 0) == 0) {
      line = std::regex_replace(line, std::regex(R"(lr: [0-9.e-]+)"), "lr: 0.05");
      line = std::regex_replace(line, std::regex(R"(warmup_steps: \d+)"), "warmup_steps: 10");
    }
    spec += line + "\n";
  }
  return spec;
}

void writeFile(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

CommandResult runCommand(const std::vector<std::string>& argv_in,
                         const std::map<std::string, std::string>& env, int timeout_ms) {
  CommandResult result;
  std::vector<std::string> argv_strings = argv_in;
  std::vector<std::string> env_strings = mergedEnv(env);
  auto argv = cStrings(argv_strings);
  auto envp = cStrings(env_strings);
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) return result;
  // posix_spawn (vfork-like), not fork(): a test with many threads starting commands from each
  // (bench_fair_service's 32 followers) would copy its page tables for every one, and stall its
  // other threads, the ones measuring, on the memory map's lock meanwhile.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  pid_t pid = -1;
  const int spawned = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  ::close(err[1]);
  if (spawned != 0) {
    ::close(out[0]);
    ::close(err[0]);
    result.exit_code = 127;
    result.err = "cannot start " + argv_strings[0] + ": " + std::strerror(spawned);
    return result;
  }
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open = 2;
  char buffer[65536];
  while (open > 0) {
    int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    if (left <= 0) {
      result.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    if (::poll(fds, 2, left) < 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
        continue;
      }
      (i == 0 ? result.out : result.err).append(buffer, static_cast<size_t>(n));
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) ::close(f.fd);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

AgentProcess::AgentProcess(AgentProcess&& other) noexcept
    : pid_(other.pid_),
      name_(std::move(other.name_)),
      endpoint_(std::move(other.endpoint_)),
      public_key_(std::move(other.public_key_)),
      state_dir_(std::move(other.state_dir_)),
      stderr_path_(std::move(other.stderr_path_)),
      slots_(other.slots_),
      extra_args_(std::move(other.extra_args_)),
      network_(std::move(other.network_)) {
  other.pid_ = -1;
}

AgentProcess& AgentProcess::operator=(AgentProcess&& other) noexcept {
  if (this != &other) {
    stop();
    pid_ = other.pid_;
    name_ = std::move(other.name_);
    endpoint_ = std::move(other.endpoint_);
    public_key_ = std::move(other.public_key_);
    state_dir_ = std::move(other.state_dir_);
    stderr_path_ = std::move(other.stderr_path_);
    slots_ = other.slots_;
    extra_args_ = std::move(other.extra_args_);
    network_ = std::move(other.network_);
    other.pid_ = -1;
  }
  return *this;
}

AgentProcess::~AgentProcess() { stop(); }

bool AgentProcess::start(const std::string& name, const std::string& state_dir, int slots,
                         std::string* error, const std::vector<std::string>& extra_args,
                         const AgentNetwork& network) {
  name_ = name;
  state_dir_ = state_dir;
  slots_ = slots;
  extra_args_ = extra_args;
  network_ = network;
  std::filesystem::create_directories(state_dir);
  stderr_path_ = state_dir + "/../" + name + ".stderr";
  std::vector<std::string> args = {binPath("ringmaster-agent"),
                                   "--listen",
                                   "tcp://" + network.address + ":" + std::to_string(network.port),
                                   "--state-dir",
                                   state_dir,
                                   "--name",
                                   name,
                                   "--slots",
                                   std::to_string(slots)};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  auto argv = cStrings(args);
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return false;
  const int netns_fd =
      network.netns.empty() ? -1 : ::open(("/run/netns/" + network.netns).c_str(), O_RDONLY);
  if (!network.netns.empty() && netns_fd < 0) {
    if (error) *error = "no network namespace " + network.netns;
    return false;
  }
  pid_ = ::fork();
  if (pid_ == 0) {
    if (netns_fd >= 0 && ::setns(netns_fd, CLONE_NEWNET) != 0) ::_exit(126);
    ::dup2(out[1], 1);
    int err_fd = ::open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err_fd >= 0) ::dup2(err_fd, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  if (netns_fd >= 0) ::close(netns_fd);
  std::string text;
  char buffer[1024];
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < deadline) {
    pollfd p{out[0], POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    ssize_t n = ::read(out[0], buffer, sizeof buffer);
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
    size_t key = text.find("public-key ");
    if (key != std::string::npos && text.find('\n', key) != std::string::npos) break;
  }
  ::close(out[0]);
  auto field = [&](const std::string& label) {
    size_t at = text.find(label + " ");
    if (at == std::string::npos) return std::string();
    at += label.size() + 1;
    return text.substr(at, text.find('\n', at) - at);
  };
  endpoint_ = field("endpoint");
  public_key_ = field("public-key");
  if (endpoint_.empty() || public_key_.empty()) {
    if (error) *error = "agent " + name + " did not start: " + text + stderrText();
    stop();
    return false;
  }
  return true;
}

void AgentProcess::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int status;
  for (int i = 0; i < 200; ++i) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

void AgentProcess::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

bool AgentProcess::alive() const {
  return pid_ > 0 && ::kill(pid_, 0) == 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0;
}

std::string AgentProcess::stderrText() const { return readFile(stderr_path_); }

Cluster::Cluster() {
  auto keys = runCommand({binPath("ringmasterctl"), "keys"}, env());
  client_key_ = keys.firstLine();
  if (client_key_.empty()) {
    std::fprintf(stderr, "ringmasterctl keys failed (exit %d): %s\n", keys.exit_code,
                 keys.err.c_str());
  }
  writeClusterFile();
}

std::map<std::string, std::string> Cluster::env() const {
  return {{"RINGMASTER_CONFIG_DIR", configDir()},
          {"RINGMASTER_CLUSTER", clusterPath()},
          {"RINGMASTER_DB", dbPath()}};
}

bool Cluster::addAgent(const std::string& name, int slots, std::string* error,
                       const std::vector<std::string>& extra_args, const AgentNetwork& network) {
  const std::string state_dir = dir() + "/agents/" + name;
  auto authorized =
      // "--": a Z85 key may begin with '-', which would read as an option.
      runCommand(
          {binPath("ringmaster-agent"), "authorize", "--state-dir", state_dir, "--", client_key_});
  if (authorized.exit_code != 0) {
    if (error) *error = "authorize failed: " + authorized.err;
    return false;
  }
  AgentProcess agent;
  if (!agent.start(name, state_dir, slots, error, extra_args, network)) return false;
  agents_.push_back(std::move(agent));
  writeClusterFile();
  return true;
}

AgentProcess& Cluster::agent(const std::string& name) {
  for (auto& a : agents_) {
    if (a.name() == name) return a;
  }
  std::abort();
}

bool Cluster::crashAndRestartAgent(const std::string& name, std::string* error) {
  AgentProcess& old = agent(name);
  const int slots = old.slots();
  const std::string state_dir = old.stateDir();
  const AgentNetwork network = old.network();
  const std::vector<std::string> extra_args = old.extraArgs();
  old.kill();
  AgentProcess restarted;
  if (!restarted.start(name, state_dir, slots, error, extra_args, network)) return false;
  old = std::move(restarted);
  writeClusterFile();
  return true;
}

bool Cluster::restartAgent(const std::string& name, int signal, std::chrono::milliseconds down_for,
                           std::string* error) {
  AgentProcess& old = agent(name);
  const int slots = old.slots();
  const std::string state_dir = old.stateDir();
  AgentNetwork network = old.network();
  const std::string& endpoint = old.endpoint();
  network.port = std::atoi(endpoint.substr(endpoint.rfind(':') + 1).c_str());
  const std::vector<std::string> extra_args = old.extraArgs();
  if (signal == SIGKILL) {
    old.kill();
  } else {
    old.stop();
  }
  std::error_code ec;
  std::filesystem::rename(state_dir + "/../" + name + ".stderr",
                          state_dir + "/../" + name + ".stderr.before-restart", ec);
  std::this_thread::sleep_for(down_for);
  AgentProcess restarted;
  if (!restarted.start(name, state_dir, slots, error, extra_args, network)) return false;
  old = std::move(restarted);
  return true;
}

void Cluster::writeClusterFile() {
  std::string text = "agents:\n";
  for (const auto& a : agents_) {
    text += "  - {name: " + a.name() + ", endpoint: \"" + a.endpoint() + "\", server_key: \"" +
            a.publicKey() + "\"}\n";
  }
  if (agents_.empty()) text = "agents: []\n";
  writeFile(clusterPath(), text);
}

CommandResult Cluster::ctl(const std::vector<std::string>& args, int timeout_ms) {
  std::vector<std::string> argv = {binPath("ringmasterctl")};
  argv.insert(argv.end(), args.begin(), args.end());
  return runCommand(argv, env(), timeout_ms);
}

std::string Cluster::writeSpec(const std::string& file_name, const std::string& yaml) {
  std::string path = dir() + "/" + file_name;
  writeFile(path, yaml);
  return path;
}

bool waitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return done();
}

int64_t newestMetricStep(const std::string& log) {
  static const std::regex step("\"step\": ?([0-9]+)");
  int64_t newest = -1;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), step); it != std::sregex_iterator();
       ++it) {
    newest = std::max<int64_t>(newest, std::stoll((*it)[1]));
  }
  return newest;
}

std::string interruptibleNativeSpec(const std::string& name, const std::string& restart) {
  return "name: " + name + R"(
launcher: native
placement: [{agent: a1, ranks: 2}, {agent: a2, ranks: 2}]
restart: )" +
         restart + R"(
native:
  model: {kind: mlp, hidden: [256, 256], activation: relu, task: classification}
  dataset: {kind: synthetic, samples: 12000, features: 16, classes: 4, seed: 3}
  batch_size: 16
  epochs: 10
  optimizer: {name: sgd, lr: 0.05, momentum: 0.9}
  checkpoint: {every_steps: 20}
  seed: 1
)";
}

std::string longNativeSpec(const std::string& name, int agents, int ranks,
                           const std::string& restart) {
  std::string placement;
  for (int i = 1; i <= agents; ++i) {
    placement += std::string(i > 1 ? ", " : "") + "{agent: a" + std::to_string(i) +
                 ", ranks: " + std::to_string(ranks) + "}";
  }
  return "name: " + name + "\nlauncher: native\nplacement: [" + placement +
         "]\nrestart: " + restart + R"(
native:
  model: {kind: mlp, hidden: [64], activation: relu, task: classification}
  dataset: {kind: synthetic, samples: 4000, features: 16, classes: 4, seed: 3}
  batch_size: 16
  epochs: 1000
  optimizer: {name: sgd, lr: 0.05, momentum: 0.9}
  checkpoint: {every_steps: 40}
  seed: 1
)";
}

int processesOf(const std::string& agent_dir, const std::string& job) {
  int count = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string env = readFile(entry.path().string() + "/environ");
    const bool of_job =
        job.empty() || env.find("RINGMASTER_JOB_ID=" + job + '\0') != std::string::npos;
    if (of_job && env.find("RINGMASTER_AGENT_DIR=" + agent_dir + '\0') != std::string::npos) {
      ++count;
    }
  }
  return count;
}

}  // namespace ringmaster::testing
