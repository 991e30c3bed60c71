#pragma once
// Submitting a job to a Slurm cluster of the cluster file: its job directory (slurm/job_dir.h)
// gets the launch, a key pair made for this job and this client's key; sbatch gets a script that
// runs one `ringmaster-agent slurm-node` per node with srun. From then on the job needs no
// client: the agents start when Slurm starts the job, and clients catch up from the directory.
//
// Not thread-safe: one thread owns the ClusterClient it uses.

#include <string>
#include <vector>

#include "ringmaster/client/cluster_client.h"
#include "ringmaster/client/cluster_config.h"
#include "ringmaster/job/spec.h"
#include "ringmaster/slurm/job_dir.h"
#include "ringmaster/slurm/request.h"

namespace ringmaster::client {

struct SlurmSubmission {
  std::string job_id;
  slurm::JobDir dir;
  slurm::SlurmRequest request;      // the spec's, completed by the cluster's defaults
  std::string script;               // batch.sh
  std::vector<std::string> sbatch;  // the command that submits it (run in the job directory)
  std::string slurm_job_id;         // Slurm's id, once submitted
};

// `spec` on `cluster`: its job directory, batch script and sbatch command. Nothing is written.
// `agent_program`: ringmaster-agent as the compute nodes see it, when the cluster entry names
// none.
Result<SlurmSubmission> planSlurmSubmission(const job::JobSpec& spec, const SlurmCluster& cluster,
                                            const std::string& job_id,
                                            const std::string& agent_program);

// Writes the job directory, runs sbatch and records the job (with Slurm's id) in the history.
// On failure nothing stays queued, and the error carries sbatch's own words.
Result<SlurmSubmission> submitToSlurm(ClusterClient& client, const job::JobSpec& spec,
                                      const SlurmCluster& cluster,
                                      const std::string& agent_program);

// An existing spec run on `cluster` with `nodes` nodes (ringmasterctl submit --slurm --nodes):
// its placement or world_size becomes nodes × ranks per node. The ranks must divide evenly.
Status useSlurm(job::JobSpec* spec, const std::string& cluster, int nodes);

// The cluster file's Slurm cluster named `name`; with an empty name, the only one there is.
Result<SlurmCluster> findSlurmCluster(const std::vector<SlurmCluster>& clusters,
                                      const std::string& name, const std::string& cluster_file);

// The login node of the cluster file's Slurm cluster `cluster`; "" (this machine) when it names
// none, or when the file no longer has that cluster.
std::string slurmLoginOf(const std::string& cluster_file, const std::string& cluster);

}  // namespace ringmaster::client
