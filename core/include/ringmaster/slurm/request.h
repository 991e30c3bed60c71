#pragma once
// What a job asks of Slurm: the `slurm:` section of a job spec, and the defaults a `slurm:` entry
// of the cluster file gives its jobs (the same fields). Fields left unset are 0 or empty.
//
// Thread safety: plain data and pure functions.

#include <string>
#include <vector>

namespace YAML {
class Node;
}  // namespace YAML

namespace ringmaster::slurm {

struct SlurmRequest {
  std::string cluster;     // spec only: the cluster file's slurm: entry the job runs on
  int nodes = 0;           // nodes of the allocation, one agent each
  int ranks_per_node = 0;  // ranks each node's agent runs (unset: gpus_per_node, else 1)
  int gpus_per_node = 0;   // --gpus-per-node; ranks see them through CUDA_VISIBLE_DEVICES
  std::string partition;   // --partition
  std::string account;     // --account
  std::string qos;         // --qos
  std::string time;        // --time, as Slurm reads it: "90", "4:00:00", "1-12:00:00"
  std::string constraint;  // --constraint
  std::vector<std::string> sbatch_args;  // passed to sbatch as they are, after the others
  int line = 0;  // line of the slurm: key (spec) or of the entry (cluster file); 0: not from a file
};

// `request` with every field it leaves unset taken from `defaults`; sbatch_args are the
// defaults' followed by the request's (a later flag wins in sbatch). `line` stays the request's.
SlurmRequest withDefaults(SlurmRequest request, const SlurmRequest& defaults);

// The ranks per node a request runs: ranks_per_node, else gpus_per_node, else 1.
int ranksPerNode(const SlurmRequest& request);

// One problem readSlurmFields() found.
struct SlurmFieldProblem {
  int line = 0;       // 1-based; 0 when unknown
  int column = 0;     // 1-based; 0 when unknown
  std::string field;  // relative to the mapping: "nodes", "sbatch_args[1]"; the caller prefixes it
  std::string message;  // what is wrong and what was expected, e.g. "expected ..., got '0'"
  std::string hint;     // optional, e.g. "did you mean 'partition'?"
};

// The keys readSlurmFields() reads: nodes, ranks_per_node, gpus_per_node, partition, account,
// qos, time, constraint, sbatch_args.
const std::vector<std::string>& slurmFieldNames();

// Reads the Slurm fields of `mapping` (the spec's `slurm:` section, or a cluster file's `slurm:`
// entry) into `out`, checking each; the keys in `other_keys` are skipped (the caller reads them),
// any other key is a problem with a hint. Returns every problem, in file order; `out` holds the
// fields that were valid. Does not set out->line. Never throws.
//   nodes 1-100000, ranks_per_node 1-1024, gpus_per_node 0-1024: plain YAML integers;
//   partition, account, qos, constraint, time: non-empty, without spaces or control characters
//     (they become `#SBATCH --NAME=VALUE` lines of a shell script); time as Slurm reads it
//     (MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, DAYS-HOURS[:MINUTES[:SECONDS]],
//     UNLIMITED, INFINITE);
//   sbatch_args: a list of options, each starting with '-', without control characters.
std::vector<SlurmFieldProblem> readSlurmFields(const YAML::Node& mapping,
                                               const std::vector<std::string>& other_keys,
                                               SlurmRequest* out);

// True when `text` is a Slurm time limit as above.
bool isSlurmTimeLimit(const std::string& text);

}  // namespace ringmaster::slurm
