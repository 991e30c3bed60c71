#pragma once
// Real processes for integration tests: temporary directories, ringmaster-agent processes on
// loopback with their own state dirs, and ringmasterctl runs with an isolated config, cluster
// file and history DB.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ringmaster/util/wall_clock.h"

namespace ringmaster::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct CommandResult {
  int exit_code = -1;  // 128 + signal when killed
  std::string out;
  std::string err;
  bool timed_out = false;
  std::string firstLine() const { return out.substr(0, out.find('\n')); }
};

// Runs argv (no shell) with `env` added to this process's environment; kills it after timeout.
CommandResult runCommand(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env = {},
                         int timeout_ms = 60000);

std::string binPath(const std::string& name);  // build/bin/<name>
// Polls `done` every 100 ms until it holds or `timeout` passes; returns its last value.
bool waitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout);
// The newest `"step": N` of the JSON metric lines in a rank's log; -1 before the first.
int64_t newestMetricStep(const std::string& log);
// A 4-rank native job on agents a1 and a2 (2 ranks each), long enough to be interrupted (about
// 1,900 steps of a few ms), with checkpoints every 20 steps and the given `restart:` mapping.
std::string interruptibleNativeSpec(const std::string& name, const std::string& restart);
// A native job named `name` with `ranks` ranks on each of agents a1..a`agents`, a small model
// (steps of a few milliseconds) for minutes, a checkpoint every 40 steps, the given `restart:`.
std::string longNativeSpec(const std::string& name, int agents, int ranks,
                           const std::string& restart);
// Processes started by the ranks of the agent with state dir `agent_dir` (of `job` only, when
// given), found by their environment as the agent finds what ranks leave behind.
int processesOf(const std::string& agent_dir, const std::string& job = "");
std::string sourcePath(const std::string& relative);
std::string readFile(const std::string& path);
// resources/jobs/strategies/<name>.yaml as the test suite trains it: on the 8x8 digits in seconds
// rather than on Fashion-MNIST in minutes (bench_strategies runs the specs as written). The model
// becomes 64-128-64-10, 10 epochs, lr 0.05 with 10 warm-up steps, every batch size 13/32 of the
// spec's (64 per rank -> 26: 16 steps an epoch on 4 ranks). "" when there is no such spec.
std::string strategySpec(const std::string& name);
void writeFile(const std::string& path, const std::string& text);

// Where an agent listens: loopback, or an address of a network namespace (`ip netns add NAME`)
// that the agent enters before it starts (root only).
struct AgentNetwork {
  std::string netns;
  std::string address = "127.0.0.1";
  int port = 0;  // 0: a free port
};

class AgentProcess {
 public:
  AgentProcess() = default;
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess(AgentProcess&& other) noexcept;
  AgentProcess& operator=(AgentProcess&& other) noexcept;
  ~AgentProcess();

  // Starts ringmaster-agent on tcp://ADDRESS:0 and waits for its banner. Returns false (with
  // the reason in *error) when it does not come up.
  bool start(const std::string& name, const std::string& state_dir, int slots, std::string* error,
             const std::vector<std::string>& extra_args = {}, const AgentNetwork& network = {});
  void stop();  // SIGTERM and wait
  void kill();  // SIGKILL and wait: a crash
  bool alive() const;

  const std::string& name() const { return name_; }
  const std::string& endpoint() const { return endpoint_; }
  const std::string& publicKey() const { return public_key_; }
  const std::string& stateDir() const { return state_dir_; }
  pid_t pid() const { return pid_; }
  int slots() const { return slots_; }
  const std::vector<std::string>& extraArgs() const { return extra_args_; }
  const AgentNetwork& network() const { return network_; }
  std::string stderrText() const;

 private:
  pid_t pid_ = -1;
  std::string name_, endpoint_, public_key_, state_dir_, stderr_path_;
  int slots_ = 0;
  std::vector<std::string> extra_args_;
  AgentNetwork network_;
};

// A client config dir, cluster file and history DB in a temp dir, and agents that authorize it.
class Cluster {
 public:
  Cluster();
  // Starts an agent that authorizes this cluster's client key; adds it to the cluster file.
  // extra_args go to ringmaster-agent (e.g. {"--gpus", "0,1"}).
  bool addAgent(const std::string& name, int slots, std::string* error,
                const std::vector<std::string>& extra_args = {}, const AgentNetwork& network = {});
  AgentProcess& agent(const std::string& name);
  // SIGKILLs the agent (a crash) and starts it again on the same state dir and arguments (a new
  // port).
  bool crashAndRestartAgent(const std::string& name, std::string* error);
  // Ends the agent with `signal` (SIGTERM: a clean shutdown, waited for; SIGKILL: a crash) and,
  // after `down_for`, starts it again on the same state dir, arguments and port, as systemd
  // restarts a host's agent. Its earlier stderr is kept in NAME.stderr.before-restart.
  bool restartAgent(const std::string& name, int signal, std::chrono::milliseconds down_for,
                    std::string* error);
  // ringmasterctl with this cluster's environment.
  CommandResult ctl(const std::vector<std::string>& args, int timeout_ms = 60000);
  std::string writeSpec(const std::string& file_name, const std::string& yaml);

  const std::string& dir() const { return dir_.path(); }
  std::string dbPath() const { return dir_.path() + "/history.db"; }
  std::string clusterPath() const { return dir_.path() + "/cluster.yaml"; }
  std::string configDir() const { return dir_.path() + "/config"; }
  const std::string& clientKey() const { return client_key_; }
  std::map<std::string, std::string> env() const;
  void writeClusterFile();

 private:
  TempDir dir_;
  std::string client_key_;
  std::vector<AgentProcess> agents_;
};

}  // namespace ringmaster::testing
