#pragma once
// ringmaster-agent's server: one thread owns the CURVE ROUTER socket, the journal, the host
// sampler and the job supervisor, and multiplexes them with zmq_poll (the socket, a signalfd for
// SIGCHLD/SIGTERM/SIGINT, and every rank's output pipe). The ZAP handler runs on its own thread.
//
// REQUIRES: SIGCHLD, SIGTERM, SIGINT and SIGHUP are blocked in every thread before create() is
// called (blockAgentSignals() does it), so that they arrive through the signalfd.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/protocol/ringmaster.pb.h"
#include "ringmaster/util/result.h"

namespace ringmaster::agent {

struct AgentOptions {
  std::string listen = "tcp://127.0.0.1:7070";  // tcp://HOST:PORT (port 0: pick one)
  std::string state_dir;
  std::string name;  // default: the host name
  int slots = 0;     // default: the number of GPUs, or of CPUs on a host without GPUs
  // The GPUs ranks may use (indices or UUIDs, "0,2"); default: the CUDA_VISIBLE_DEVICES the agent
  // was started with, else every GPU NVML finds.
  std::optional<std::string> gpus;
  int health_interval_ms = 1000;
  // The user ranks run as (an agent run as root should name one); empty: the agent's user.
  std::string run_as;
  // "FIRST-LAST": each job's ranks run as a uid of their own from this range (job_identity.h);
  // needs root. Empty: every job's ranks run as run_as (or the agent's user).
  std::string job_uids;
  uint64_t rank_open_files = 65536;  // ranks' open-file limit
  // With job_uids: the processes and threads a job's uid may have at once (RLIMIT_NPROC).
  uint64_t job_processes = 4096;
  bool allow_loader_env = false;   // jobs may set LD_PRELOAD, LD_AUDIT, LD_LIBRARY_PATH
  double rank_metric_rate = 1000;  // metric records a rank may journal a second
  uint64_t rank_memory = 0;        // each rank's memory limit in bytes (cgroup v2); 0: none
  int rank_nice = 0;               // the ranks' nice value (see RankConfinement::nice)
  // The agent's own nice value, taken by takeAgentNice() where the agent may (root or
  // CAP_SYS_NICE): its clients' requests then wait for a core behind neither its ranks nor
  // other processes of the host. Its ranks start at rank_nice all the same.
  int nice = -10;
  bool quiet = false;  // no log lines on stderr
  // Serve only the jobs launched through launch() and exit once they are over (the per-job
  // agents of a Slurm allocation, agent/src/slurm_node.h).
  bool exit_when_done = false;
};

void blockAgentSignals();
// Sets the calling thread's nice value to `nice` if it may; call it before any thread exists,
// since each thread keeps its own and a new one inherits its creator's. AgentServer logs what
// it got.
void takeAgentNice(int nice);

class AgentServer {
 public:
  static Result<std::unique_ptr<AgentServer>> create(AgentOptions options);
  ~AgentServer();

  const std::string& name() const;
  const std::string& endpoint() const;  // the bound endpoint (actual port)
  const std::string& publicKey() const;

  // Serves until SIGTERM/SIGINT (or, with exit_when_done, until its jobs are over). On the way
  // out every rank is stopped and recorded.
  Status run();
  // After run(): whether a SIGTERM, SIGINT or SIGHUP ended it (rather than its jobs being over).
  bool stoppedBySignal() const;

  // What a client's PrepareJob and LaunchJob do, for an agent that launches a job it read from
  // elsewhere (a Slurm job directory) before it serves. launch() keeps launch.owner as given.
  Result<uint32_t> prepare(const proto::JobLaunch& launch, bool reserve_master_port);
  Result<std::vector<int>> launch(const proto::JobLaunch& launch);

 private:
  struct Impl;
  explicit AgentServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Paths inside a state dir.
std::string agentKeyPath(const std::string& state_dir);
std::string authorizedKeysPath(const std::string& state_dir);

}  // namespace ringmaster::agent
