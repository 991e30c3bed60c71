#pragma once
// Where a client finds its cluster file, history DB and key pair, and the cluster file itself:
//   agents:
//     - {name: gpu01, endpoint: "tcp://10.0.0.11:7070", server_key: "<agent public key>"}
//   slurm:                                  # optional: Slurm clusters that jobs can run on
//     - name: hpc
//       login: alice@login.example.org:22   # optional: sbatch/squeue/scancel run there over ssh
//       job_dir: /shared/ringmaster         # seen by the login node and every compute node
//       agent: /shared/ringmaster/bin/ringmaster-agent   # optional: the agent on compute nodes
//       bind: 10.1.0.0                      # optional: the address the per-job agents listen on
//       partition: gpu                      # defaults for jobs (slurm::readSlurmFields' fields)

#include <string>
#include <vector>

#include "ringmaster/client/agent_connection.h"
#include "ringmaster/security/keys.h"
#include "ringmaster/slurm/request.h"
#include "ringmaster/util/result.h"

namespace ringmaster::client {

struct ClientPaths {
  std::string cluster_file;  // --cluster, $RINGMASTER_CLUSTER, ~/.config/ringmaster/cluster.yaml
  std::string db_file;       // --db, $RINGMASTER_DB, ~/.local/share/ringmaster/history.db
  std::string config_dir;    // $RINGMASTER_CONFIG_DIR, ~/.config/ringmaster (holds client.key)

  // Defaults from the environment; non-empty arguments win.
  static ClientPaths resolve(const std::string& cluster_flag, const std::string& db_flag);
  std::string clientKeyPath() const { return config_dir + "/client.key"; }
};

// This client's key pair, created (0600) on first use.
Result<security::KeyPair> loadClientKeys(const ClientPaths& paths);

// Parses and checks a cluster file: every agent needs a unique name, a tcp:// endpoint and a
// valid server_key; errors name the file, line and field. A file with a slurm: list and no
// agents: has no agents (the slurm: entries are parseSlurmClusters' to read).
Result<std::vector<AgentEndpoint>> loadClusterFile(const std::string& path);
Result<std::vector<AgentEndpoint>> parseClusterFile(const std::string& text,
                                                    const std::string& file_name);
// What is wrong with one cluster-file entry, field by field (an empty string: that field is
// fine). These are the rules parseClusterFile applies, so an editor can check an entry before it
// writes one: a non-empty name without control characters that no other agent uses, an endpoint
// tcp://HOST:PORT (PORT 1-65535), and a valid server key.
struct AgentEntryProblems {
  std::string name;
  std::string endpoint;
  std::string server_key;
  bool ok() const { return name.empty() && endpoint.empty() && server_key.empty(); }
};
AgentEntryProblems checkAgentEntry(const AgentEndpoint& agent,
                                   const std::vector<std::string>& other_names);

// Writes a cluster file atomically: the text goes to a temporary file in the same directory,
// which is synced and renamed over `path` (a reader sees the old file or the new one, never a
// torn one; a symlink at `path` is followed). Every value is double-quoted and escaped, so names
// and Z85 keys with YAML-special characters read back unchanged. Entries that loadClusterFile
// would refuse are refused here, naming the entry and field, and nothing is written. Comments of
// an earlier file are not kept.
// `other_sections`: YAML text of top-level sections besides agents: (otherClusterSections),
// written after the agents as they are.
Status writeClusterFile(const std::string& path, const std::vector<AgentEndpoint>& agents,
                        const std::string& other_sections = "");
// The top-level sections of a cluster file's text other than agents: (e.g. slurm:), as YAML
// text, so that editing the agents keeps them; "" when there are none.
Result<std::string> otherClusterSections(const std::string& text, const std::string& file_name);

// One entry of the cluster file's slurm: list.
struct SlurmCluster {
  std::string name;     // unique among the slurm: entries; no control characters
  std::string login;    // [user@]host[:port] that runs sbatch/squeue/scancel over ssh; "": here
  std::string job_dir;  // absolute; the same path on the login node and every compute node
  std::string agent;    // absolute path of ringmaster-agent on the compute nodes; "": not given
  std::string bind;     // address the per-job agents listen on (IP literal or host); "": not given
  slurm::SlurmRequest defaults;  // the job fields given here (line: the entry's line)
  int line = 0;                  // 1-based line of the entry
};

// The slurm: entries of a cluster file's text, checked: name, job_dir required; login, agent,
// bind as above; any other key read by slurm::readSlurmFields. No slurm: section (or an empty
// one): an empty list. Errors (invalidArgument) name the file, line and field, one per line.
Result<std::vector<SlurmCluster>> parseSlurmClusters(const std::string& text,
                                                     const std::string& file_name);
// Reads `path` and parses its slurm: entries. A missing file is an empty list (a client without
// a cluster file has no Slurm clusters); a file that exists but cannot be read is an error.
Result<std::vector<SlurmCluster>> loadSlurmClusters(const std::string& path);

// "tcp://10.0.0.11:7070" -> "10.0.0.11" (brackets of IPv6 removed); empty when not tcp://.
std::string endpointHost(const std::string& endpoint);

}  // namespace ringmaster::client
