#pragma once
// ClusterSession: the Qt-free event loop a client runs on one I/O thread. It keeps every agent of
// the cluster file under watch at once (inventory and health every second, the journal followed
// with long polls), writes what it pulls into the history through the batch writer, and hands
// records out in batches. Commands (submit, stop, read a log, load a job from the history) come
// in through a queue from any thread and are answered through the sink, so a caller never waits
// on the network or on SQLite. Those that wait on agents run on threads of their own
// (CommandWorker: one for submit, stop and restart, one for log reads), so that an agent slow to
// answer them never holds up the watch of the others, nor a stop the log reads. Reads of the
// history for views (a job's snapshot, the runs) run on a third, and the jobs on Slurm (squeue,
// their job directories over ssh) on a fourth (HistoryWorker).
//
// An agent that stops answering is marked with the reason (unreachable, key rejected, wrong
// server key) and retried; when it answers again its journal is followed from the stored cursor,
// so nothing is missed and nothing is stored twice.
//
// Thread safety: post*() and stop() may be called from any thread. run() is called by one
// thread, which owns the watch's sockets and DB connection; the sink is called on that thread and
// on the workers', so it must be thread-safe.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/client/agent_status.h"
#include "ringmaster/client/cluster_client.h"
#include "ringmaster/client/cluster_config.h"
#include "ringmaster/client/preflight.h"
#include "ringmaster/client/run_summary.h"
#include "ringmaster/hardware/hardware_report.h"
#include "ringmaster/store/store.h"
#include "ringmaster/util/result.h"

namespace ringmaster::client {

class CommandWorker;
class HistoryWorker;
class SlurmWatch;

// A job as the history knows it, with everything a dashboard shows (for jobs that ran while no
// client was watching, and for read-only dashboards of past runs).
struct JobSnapshot {
  store::JobRow job;
  std::vector<store::RankRow> ranks;
  std::vector<store::EventRow> events;
  std::vector<store::MetricRow> metrics;    // every point, by attempt, rank, name, step
  std::vector<store::HealthRow> health;     // of the job's agents, over the job's lifetime
  std::optional<store::SlurmJobRow> slurm;  // a job on Slurm: its id there and Slurm's state
  // Every host's record in the whole history (store::Reader::hostRecords), for a live dashboard's
  // checkpoint economics: how often the job's hosts fail. Empty unless asked for (SnapshotOptions).
  std::vector<store::HostRecord> host_records;
};

struct SnapshotOptions {
  int max_health_rows = 20000;  // per agent
  bool host_records = false;    // read JobSnapshot::host_records (a scan of the whole history)
  // false: leave JobSnapshot::metrics empty, for a caller that reads them series by series
  // (store::Reader::jobSeries, forEachPoint) instead of holding a long run's rows all at once.
  bool metrics = true;
};

// The job whose id is `job_id` (or starts with it), read from the history.
Result<JobSnapshot> loadJobSnapshot(store::Reader& history, const std::string& job_id,
                                    const SnapshotOptions& options = {});

// Called on the session's thread and on its workers' (submitted, stopped, restarted and logChunk
// on the command workers; runsListed, slurmJobChanged and a Slurm job's records on the
// history worker), each in its own order: a job's first records may come before its submitted().
// Implementations are thread-safe and hand the data to their own thread.
class SessionSink {
 public:
  virtual ~SessionSink() = default;
  virtual void agentStatus(const AgentStatus& status) = 0;
  // A batch of journal records of one agent, in journal order, already enqueued for the history.
  virtual void records(const std::string& agent, std::vector<proto::JournalRecord> records) = 0;
  // token: what post*() returned.
  virtual void submitted(uint64_t token, const Result<SubmittedJob>& result) = 0;
  // A submission waits past its timeout for agents alive but busy: which (SubmitOptions).
  virtual void submitWaiting(uint64_t /*token*/, const std::string& /*line*/) {}
  virtual void stopped(uint64_t token, const std::string& job_id, const Result<int>& result) = 0;
  virtual void restarted(uint64_t /*token*/, const std::string& /*job_id*/,
                         const Result<RestartReport>& /*result*/) {}
  virtual void rankKilled(uint64_t /*token*/, const std::string& /*job_id*/, int /*rank*/,
                          const Status& /*result*/) {}
  virtual void logChunk(uint64_t token, const std::string& job_id, int rank,
                        const Result<proto::LogChunk>& chunk) = 0;
  virtual void runsListed(uint64_t token, const Result<std::vector<RunSummary>>& runs) = 0;
  // An edit posted with postEditHistory() is committed (ok) or was not (why).
  virtual void historyEdited(uint64_t /*token*/, const Status& /*status*/) {}
  // The history read per host and GPU (postHardwareReport), on the history worker.
  virtual void hardwareReported(uint64_t /*token*/,
                                const Result<hardware::HardwareReport>& /*report*/) {}
  // A preflight (postPreflight) says what it is doing, then what it found.
  virtual void preflightProgress(uint64_t /*token*/, const std::string& /*what*/) {}
  virtual void preflightDone(uint64_t /*token*/, const Result<PreflightReport>& /*report*/) {}
  // Slurm's state of a job on Slurm changed (pending with a new reason, running, finished...).
  virtual void slurmJobChanged(const store::SlurmJobRow& /*row*/) {}
  // Something the session could not do that a person must hear of: the history could not be
  // written (its records are pulled again), or the session's loop stopped.
  virtual void sessionError(const Status& /*error*/) {}
};

struct SessionOptions {
  int inventory_interval_ms = 1000;  // health and state of every agent
  int journal_wait_ms = 250;         // long poll once caught up: bounds the latency of records
  int request_timeout_ms = 5000;     // no answer within this (plus the long poll): unreachable
  // An inventory (a few KB, answered in milliseconds even by an agent under load) unanswered for
  // this long: the agent is silent, its going ranks' state unknown. The request goes a second
  // after the last answer, so a frozen agent reads as silent 3-4 s after it froze.
  int silent_after_ms = 2500;
  int retry_interval_ms = 2000;  // how often an unreachable agent is tried again
  uint32_t batch_records = 20000;
};

class ClusterSession {
 public:
  // Opens the client (cluster file, keys, history) on the calling thread; run() may then be
  // called on another thread, which takes over every connection.
  static Result<std::unique_ptr<ClusterSession>> open(const ClientPaths& paths, SessionSink* sink,
                                                      const SessionOptions& options = {});
  ~ClusterSession();
  ClusterSession(const ClusterSession&) = delete;
  ClusterSession& operator=(const ClusterSession&) = delete;

  const ClientPaths& paths() const { return paths_; }
  const std::string& clientPublicKey() const { return client_public_key_; }

  // Runs until stop(). Returns an error only when the loop itself cannot go on.
  Status run();
  void stop();

  // Commands; each returns a token that the sink's answer carries.
  // `options.waiting` is the session's own (the sink's submitWaiting).
  uint64_t postSubmit(job::JobSpec spec, SubmitOptions options = {});
  uint64_t postStop(std::string job_id, int grace_ms = 0);
  // ClusterClient::restart: a new attempt from the newest checkpoint, perhaps without an agent.
  uint64_t postRestart(std::string job_id, std::string exclude_agent, std::string reason);
  // ClusterClient::killRank: a crash drill on one rank.
  uint64_t postKillRank(std::string job_id, int rank);
  // One chunk of a rank's log from `offset` (no waiting: callers poll while following), at most
  // max_bytes (0: the agent's default). LogCursor keeps a reader's place.
  uint64_t postReadLog(std::string agent, std::string job_id, int rank, uint64_t offset,
                       uint32_t attempt = 0, uint32_t max_bytes = 0);
  // Runs `read` on the history's worker (in order with the lists and reports below), once what
  // the session pulled before is written: a view builds what it shows there, off its own thread
  // (a job: loadJobSnapshot, or a dashboard's JobData::fromHistory). `read` carries its answer.
  void postReadHistory(std::function<void(store::Reader& history)> read);
  uint64_t postListRuns();
  // hardware::hardwareReport over the runs submitted at or after `since` (0: every run).
  uint64_t postHardwareReport(double since = 0);
  // runPreflight on a worker of its own (its link tests take seconds; commands do not wait).
  uint64_t postPreflight(PreflightOptions options);
  // A change a person made to the history (archive, delete, undo), run on the process's one
  // writer after what was queued before it; answered by historyEdited() once committed, so a
  // list of runs posted after that answer sees it.
  uint64_t postEditHistory(std::function<Status(store::Writer&)> edit);
  // Re-reads the cluster file (after the GUI added or removed an agent).
  uint64_t postReloadCluster();

 private:
  struct Agent;
  using Command = std::function<void()>;
  ClusterSession(ClientPaths paths, SessionSink* sink, SessionOptions options);
  uint64_t post(std::function<void(uint64_t)> command);
  uint64_t postToWorker(CommandWorker& worker,
                        std::function<void(uint64_t, ClusterClient*, const Status&)> command);
  void runCommands();
  void runDeferredSubmits();
  void reloadAgents();
  void tick(Agent& agent);
  int pollTimeoutMs() const;
  void receiveInventory(Agent& agent);
  void receiveJournal(Agent& agent);
  void sendJournalRead(Agent& agent);
  void markSilent(Agent& agent, const Status& why);
  void report(Agent& agent, AgentState state, std::string reason);
  void flushHistory();
  // On the Slurm worker's thread only, with its connection.
  SlurmWatch& slurmWatch(store::Reader& history);

  ClientPaths paths_;
  SessionSink* sink_;
  SessionOptions options_;
  double started_at_;  // unix seconds
  std::string client_public_key_;
  int wake_fd_ = -1;  // eventfd: post() wakes the poll from any thread without a shared socket
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::vector<Command> queue_;  // GUARDED_BY(mutex_)
  std::atomic<uint64_t> next_token_{1};

  // Owned by the run() thread (after open()).
  std::unique_ptr<store::Reader> history_;  // reads, cursors, agents
  std::unique_ptr<store::BatchWriter> writer_;
  std::unique_ptr<ClusterClient> client_;      // the cluster file's agents and the client's keys
  std::unique_ptr<CommandWorker> worker_;      // submit, stop, restart
  std::unique_ptr<CommandWorker> log_worker_;  // log reads
  std::unique_ptr<CommandWorker> preflight_worker_;  // cluster preflights
  std::unique_ptr<HistoryWorker> history_worker_;    // snapshots and the list of runs
  std::unique_ptr<HistoryWorker> slurm_worker_;      // runs slurm_watch_
  std::unique_ptr<SlurmWatch> slurm_watch_;          // the jobs on Slurm that are not over
  std::unique_ptr<ZmqContext> context_;              // the watch connections, apart from client_'s
  std::vector<std::unique_ptr<Agent>> agents_;
  struct DeferredSubmit {
    uint64_t token;
    job::JobSpec spec;
    SubmitOptions options;
    std::chrono::steady_clock::time_point posted;
  };
  std::deque<DeferredSubmit> deferred_submits_;
  uint64_t generation_ = 0;                 // bumped when agents_ is rebuilt
  std::atomic<bool> pending_flush_{false};  // set by the worker too (a submission row)
};

}  // namespace ringmaster::client
