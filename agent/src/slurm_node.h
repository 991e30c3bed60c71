#pragma once
// `ringmaster-agent slurm-node`: the agent of one node of a Slurm job, started by srun (one task
// per node) from the batch script that `ringmasterctl submit --slurm` wrote. It serves this job
// alone, with the job's own key, on a port the kernel picks (several jobs may share a node):
//  1. reads the job's launch from the job directory (slurm/job_dir.h) and Slurm's task
//     environment (node id, node count, node name, requeue count);
//  2. starts an agent whose state dir is this run's directory of the node in the job directory;
//  3. writes where it listens (node 0 also reserves MASTER_PORT and picks the attempt: one past
//     the newest any node ran, so a requeued job goes on from its checkpoints), and waits until
//     every node of this run has;
//  4. starts its ranks, with the other nodes' agents as the job's gang (which restarts failed
//     ranks inside the allocation), and exits once the job is over.
// No client needs to be running: one attaches whenever it likes, through the job directory.

#include <string>

#include "ringmaster/util/result.h"

namespace ringmaster::agent {

struct SlurmNodeOptions {
  std::string job_dir;
  // The address the agent listens on and gives the other nodes; empty: every address, and the
  // other nodes get the address the node's host name resolves to.
  std::string bind;
  int ranks_per_node = 1;
  double peers_timeout_seconds = 300;  // how long to wait for the other nodes' agents
  bool quiet = false;
};

enum class SlurmNodeEnd {
  kJobOver,         // its ranks are over: the job succeeded, failed or was stopped by a client
  kStoppedBySignal  // Slurm's SIGTERM (scancel, preemption, the time limit's --signal) stopped it
};

// Returns when the job is over here or Slurm stopped it, or with what kept it from starting.
Result<SlurmNodeEnd> runSlurmNode(const SlurmNodeOptions& options);

}  // namespace ringmaster::agent
