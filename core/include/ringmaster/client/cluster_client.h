#pragma once
// The client library shared by ringmasterctl and the GUI: the cluster's agents (authenticated
// connections), the history DB, and the operations on them: submit, sync, stop, logs.
//
// Not thread-safe: one thread owns a ClusterClient (its sockets and DB connections). The GUI runs
// one on its I/O thread.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ringmaster/client/agent_connection.h"
#include "ringmaster/client/cluster_config.h"
#include "ringmaster/client/journal_sync.h"
#include "ringmaster/job/spec.h"
#include "ringmaster/store/store.h"

namespace ringmaster::client {

struct SubmitOptions {
  int timeout_ms = 10000;
  // An agent alive but busy (see Patience) is waited for past timeout_ms, up to this long in
  // all for each step (inventory, prepare, launch); `waiting` hears, every 2 s from timeout_ms
  // on, a line naming the agents a step waits for.
  int busy_agent_bound_ms = 120000;
  std::function<void(const std::string&)> waiting;
  // A new attempt of an existing job (restart): its id and attempt number. Empty: a new job.
  std::string job_id;
  uint32_t attempt = 1;
  std::vector<std::string> exclude_agents;  // not placed on these (restart --exclude)
};

// What `restart` did: a running job's agents started its next attempt themselves, or a job that
// was over got a new attempt launched from its spec in the history.
struct RestartReport {
  bool was_running = false;
  uint32_t attempt = 0;  // the new attempt, when the job was over
};

struct SubmittedJob {
  std::string job_id;
  // Agents in group-rank order (rank 0's agent first) with the global ranks each runs.
  std::vector<std::pair<std::string, std::vector<int>>> shares;
  std::vector<std::string> agentNames() const;
};

class ClusterClient {
 public:
  // Loads the cluster file and this client's keys. The DB is opened on first use.
  static Result<std::unique_ptr<ClusterClient>> open(const ClientPaths& paths);
  ~ClusterClient();

  const ClientPaths& paths() const { return paths_; }
  const std::vector<AgentEndpoint>& agents() const { return agents_; }
  const security::KeyPair& keys() const { return keys_; }

  // The history for reading. Writes go through writer().
  Result<store::Reader*> history();
  // The one writer of the history in this process: the one shareWriter() gave (a session's), or
  // the client's own, opened on first use.
  Result<store::BatchWriter*> writer();
  // Writes go through `writer` (owned by the caller, outliving this client) from now on.
  void shareWriter(store::BatchWriter* writer) { shared_writer_ = writer; }
  // stop, killRank and restart wait for an agent alive but busy as submit does (Patience: up to
  // SubmitOptions' busy_agent_bound_ms past their 10 s), and tell `waiting`, every 2 s from the
  // 10 s on, which agents they wait for. Unset: they wait as long, quietly.
  void setWaiting(std::function<void(const std::string&)> waiting) {
    waiting_ = std::move(waiting);
  }
  // The connection to agent `name` (an agent of the cluster file), made on first use.
  Result<AgentConnection*> connection(const std::string& name);

  // Inventory of each named agent (all when empty), in that order; recorded in the history.
  std::vector<std::pair<std::string, Result<proto::Inventory>>> inventories(
      std::vector<std::string> names, int timeout_ms, const Patience& patience = {});

  // Places, prepares and launches the job on its agents; returns the job id. A placement error
  // is kInvalidArgument with compiler-style diagnostics; an agent's refusal names the agent.
  // Nothing keeps running when any agent refuses.
  Result<SubmittedJob> submit(const job::JobSpec& spec, const SubmitOptions& options = {});

  // Pulls the journals of the named agents (all when empty) into the history.
  Result<SyncReport> sync(std::vector<std::string> names, const SyncOptions& options);

  // Stops a job on every agent it runs on. Returns how many ranks were signalled (0 for a job on
  // Slurm, which is cancelled with scancel).
  Result<int> stop(const std::string& job_id, int grace_ms = 0);

  // A crash drill: SIGKILL to one running rank, which fails as a crash would (the job restarts
  // from its checkpoint when it has restarts left). NOT_FOUND when no agent runs that rank.
  Status killRank(const std::string& job_id, int rank);

  // A new attempt of the job from its newest checkpoint, without `exclude_agent` when set. A
  // running job's agents do it themselves; a job that is over is launched again from the spec in
  // the history, under the same id (so its agents find its checkpoints).
  Result<RestartReport> restart(const std::string& job_id, const std::string& exclude_agent,
                                const std::string& reason);

  // One chunk of a rank's log from the agent that runs it (at most max_bytes; 0: the agent's
  // default, 1 MiB).
  Result<proto::LogChunk> readLog(const std::string& agent, const std::string& job_id, int rank,
                                  uint64_t offset, uint32_t wait_ms, uint32_t attempt = 0,
                                  uint32_t max_bytes = 0);

  // Agents a job runs on (from the history), in rank order, without repeats; with
  // `every_attempt`, those of every attempt it had, newest first (a side of a split that was
  // left out may still run an older one).
  Result<std::vector<std::string>> jobAgents(const std::string& job_id, bool every_attempt = false);
  // jobAgents, or every agent of the cluster file when the history knows none.
  std::vector<std::string> jobAgentsOrAll(const std::string& job_id, bool every_attempt = false);

 private:
  ClusterClient(ClientPaths paths, std::vector<AgentEndpoint> agents, security::KeyPair keys);
  Result<std::vector<AgentConnection*>> connections(const std::vector<std::string>& names);

  ClientPaths paths_;
  std::vector<AgentEndpoint> agents_;
  security::KeyPair keys_;
  ZmqContext context_;
  std::map<std::string, std::unique_ptr<AgentConnection>> connections_;
  std::unique_ptr<store::Reader> store_;
  std::unique_ptr<store::BatchWriter> writer_;
  store::BatchWriter* shared_writer_ = nullptr;
  std::function<void(const std::string&)> waiting_;  // see setWaiting
};

// What every agent of a job gets of `spec`; the ranks, group rank, gang and rendezvous are each
// agent's and filled in later.
proto::JobLaunch baseLaunch(const job::JobSpec& spec, const std::string& job_id);

// "<name>-YYMMDD-HHMMSS-xxxx": sortable, readable, unique enough to never collide in practice.
std::string newJobId(const std::string& name);

}  // namespace ringmaster::client
