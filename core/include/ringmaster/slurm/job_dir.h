#pragma once
// A Slurm job's directory: on a file system that the submitting side and every node of the
// allocation see. `submit` writes what the job's agents need; each node's agent keeps its state
// there and tells the others (and clients) where it listens.
//
//   launch.pb             the job's launch (proto::JobLaunch), less what only the nodes know
//   agent.key             the key pair every agent of this job uses (made for this job alone)
//   authorized_keys       the submitting client's key
//   batch.sh              the sbatch script; slurm-<id>.out its output
//   slurm_job_id          Slurm's job id, once sbatch answered
//   run-<R>/node-<N>/     the state dir of node N's agent in Slurm's run R (SLURM_RESTART_COUNT):
//                         its journal, rank logs, and `address` (where it listens)
//   checkpoints/          every run's checkpoints (each run's node dirs link to it), so a
//                         requeued job resumes wherever its nodes now are
//
// Thread safety: pure functions and plain data.

#include <cstdint>
#include <string>
#include <vector>

#include "ringmaster/util/result.h"

namespace ringmaster::slurm {

// The exit code of a node's agent that Slurm's SIGTERM stopped (scancel, preemption, the time
// limit's early signal), as a shell reports a process killed by SIGTERM. The batch script waits
// for Slurm to end the job then, so that Slurm records why (cancelled, requeued, timed out).
constexpr int kNodeStoppedBySignalExitCode = 143;

struct JobDir {
  std::string root;

  std::string launchFile() const { return root + "/launch.pb"; }
  std::string keyFile() const { return root + "/agent.key"; }
  std::string authorizedKeysFile() const { return root + "/authorized_keys"; }
  std::string scriptFile() const { return root + "/batch.sh"; }
  std::string outputFile(const std::string& slurm_job_id) const {
    return root + "/slurm-" + slurm_job_id + ".out";
  }
  std::string slurmJobIdFile() const { return root + "/slurm_job_id"; }
  std::string checkpointDir() const { return root + "/checkpoints"; }
  std::string runDir(int run) const { return root + "/run-" + std::to_string(run); }
  std::string nodeDir(int run, int node) const {
    return runDir(run) + "/node-" + std::to_string(node);
  }
  std::string addressFile(int run, int node) const { return nodeDir(run, node) + "/address"; }
  // The runs, and the nodes of a run, that have a directory, ascending.
  std::vector<int> runs() const;
  std::vector<int> nodes(int run) const;
};

// Where node N's agent of one run listens, and for node 0 what the others need to start.
struct NodeAddress {
  int node = 0;
  std::string agent;         // the agent's name (the node's Slurm name)
  std::string endpoint;      // tcp://HOST:PORT
  std::string host;          // how other nodes reach this host (MASTER_ADDR when node 0)
  uint32_t master_port = 0;  // node 0: the port reserved for rank 0
  uint32_t attempt = 0;      // node 0: the attempt this run starts
};

// Written to a temporary file and renamed, so a reader sees all of it or nothing.
Status writeNodeAddress(const std::string& path, const NodeAddress& address);
Result<NodeAddress> readNodeAddress(const std::string& path);

// The newest attempt any node of any run started (from their attempt-<n> directories), 0 when
// none: the next run of a requeued job goes on from there.
uint32_t newestAttempt(const JobDir& dir, const std::string& job_id);

}  // namespace ringmaster::slurm
