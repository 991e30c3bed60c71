#include "ringmaster/client/cluster_session.h"

#include <sys/eventfd.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <chrono>

#include "client/agent_watch_events.h"
#include "client/command_worker.h"
#include "client/history_worker.h"
#include "client/journal_follower.h"
#include "ringmaster/client/slurm_watch.h"
#include "ringmaster/util/open_files.h"
#include "ringmaster/util/wall_clock.h"

namespace ringmaster::client {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Which of the client library's explanations a failed exchange carries.
AgentState stateOf(const Status& status) {
  switch (status.code()) {
    case ErrorCode::kUnauthorized:
      return status.message().find("rejected this client's key") != std::string::npos
                 ? AgentState::kKeyRejected
                 : AgentState::kServerKeyMismatch;
    case ErrorCode::kUnavailable:
    case ErrorCode::kTimeout:
      return AgentState::kUnreachable;
    default:
      return AgentState::kError;
  }
}

constexpr int kPollMs = 50;
constexpr auto kFlushInterval = milliseconds(1000);
constexpr auto kRecordAgentInterval = std::chrono::seconds(30);
constexpr auto kSubmitWaitLimit = milliseconds(1000);

}  // namespace

// One agent under watch. Two connections of its own, so that a long poll of the journal never
// holds up the health probe and each has at most one request in flight (AgentConnection drops
// replies to requests other than the one it waits for).
struct ClusterSession::Agent {
  AgentEndpoint endpoint;
  std::unique_ptr<AgentConnection> health;
  std::unique_ptr<AgentConnection> journal;
  AgentStatus status;

  uint64_t inventory_request = 0;  // request id in flight, 0 when none
  Clock::time_point inventory_sent{}, next_inventory{}, last_recorded{};
  Clock::time_point unanswered_since{};  // first try since the last answer
  bool answered_once = false;

  // The jobs (and attempts) it ran ranks of when it stopped answering: "agent_back" events for
  // them when it answers again (agent_watch_events.h).
  std::map<std::string, uint32_t> lost_jobs;

  std::optional<JournalFollower> follower;  // on `journal`, once connected
  Clock::time_point journal_retry_at{};
  // While a connection is in its CURVE handshake (ZMQ_IMMEDIATE queues nothing), sends are
  // retried after these waits, doubling from 2 ms: the handshake takes a few ms on loopback,
  // and a fixed 100 ms wait was most of a short job's submit time. Meanwhile the socket is
  // polled for POLLOUT, which says the handshake is through: the send goes then, not at the
  // end of the wait (up to 4 ms of a short job's submit).
  milliseconds inventory_backoff{}, journal_backoff{};

  bool journalKnown() const { return follower && follower->known(); }
  bool journalInFlight() const { return follower && follower->inFlight(); }
};

namespace {

milliseconds nextBackoff(milliseconds& backoff) {
  backoff = std::clamp(2 * backoff, milliseconds(2), milliseconds(100));
  return backoff;
}

}  // namespace

Result<JobSnapshot> loadJobSnapshot(store::Reader& history, const std::string& job_id,
                                    const SnapshotOptions& options) {
  JobSnapshot snapshot;
  RM_ASSIGN_OR_RETURN(snapshot.job, history.job(job_id));
  const std::string& id = snapshot.job.job_id;
  RM_ASSIGN_OR_RETURN(snapshot.ranks, history.ranks(id));
  RM_ASSIGN_OR_RETURN(snapshot.events, history.events(id));
  if (options.metrics) {
    store::MetricQuery query;
    query.job_id = id;
    RM_ASSIGN_OR_RETURN(snapshot.metrics, history.metrics(query));
  }
  std::vector<std::string> agents;
  for (const auto& rank : snapshot.ranks) {
    if (std::find(agents.begin(), agents.end(), rank.agent) == agents.end()) {
      agents.push_back(rank.agent);
    }
  }
  const double from = snapshot.job.submitted_at - 60;
  const double to = snapshot.job.finished_at > 0 ? snapshot.job.finished_at + 60 : unixSeconds();
  for (const auto& agent : agents) {
    RM_ASSIGN_OR_RETURN(auto rows, history.health(agent, from, to, options.max_health_rows));
    for (auto& row : rows) snapshot.health.push_back(std::move(row));
  }
  if (auto slurm = history.slurmJob(id); slurm.isOk()) snapshot.slurm = std::move(*slurm);
  if (options.host_records) {
    RM_ASSIGN_OR_RETURN(snapshot.host_records, history.hostRecords());
  }
  return snapshot;
}

ClusterSession::ClusterSession(ClientPaths paths, SessionSink* sink, SessionOptions options)
    : paths_(std::move(paths)), sink_(sink), options_(options), started_at_(unixSeconds()) {}

ClusterSession::~ClusterSession() {
  history_worker_.reset();
  slurm_worker_.reset();
  slurm_watch_.reset();
  log_worker_.reset();
  preflight_worker_.reset();
  worker_.reset();  // its client writes through writer_
  agents_.clear();  // sockets close before their context
  context_.reset();
  client_.reset();
  writer_.reset();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

Result<std::unique_ptr<ClusterSession>> ClusterSession::open(const ClientPaths& paths,
                                                             SessionSink* sink,
                                                             const SessionOptions& options) {
  // Several descriptors an agent: two watch connections and three workers' request
  // connections. At the soft limit's usual 1,024 a session of a hundred agents would leave some
  // unwatched (their metrics never stored).
  raiseOpenFileLimit();
  std::unique_ptr<ClusterSession> session(new ClusterSession(paths, sink, options));
  RM_ASSIGN_OR_RETURN(security::KeyPair keys, loadClientKeys(paths));
  session->client_public_key_ = keys.public_key;
  RM_ASSIGN_OR_RETURN(session->history_, store::Reader::open(paths.db_file));
  RM_ASSIGN_OR_RETURN(session->writer_, store::BatchWriter::open(paths.db_file));
  // Submissions, stops and restarts: their connections are up by the time they are posted.
  session->worker_ =
      std::make_unique<CommandWorker>(paths, session->writer_.get(), /*connect_early=*/true);
  session->log_worker_ = std::make_unique<CommandWorker>(paths, session->writer_.get());
  session->preflight_worker_ = std::make_unique<CommandWorker>(paths, session->writer_.get());
  RM_ASSIGN_OR_RETURN(session->history_worker_, HistoryWorker::open(paths.db_file));
  ClusterSession* self = session.get();
  RM_ASSIGN_OR_RETURN(
      session->slurm_worker_, HistoryWorker::open(paths.db_file, [self](store::Reader& history) {
        self->slurmWatch(history).tick(
            [self](const std::string& agent, std::vector<proto::JournalRecord> records) {
              self->pending_flush_ = true;  // they went to the writer
              self->sink_->records(agent, std::move(records));
            },
            [self](const store::SlurmJobRow& row) { self->sink_->slurmJobChanged(row); });
      }));
  session->wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (session->wake_fd_ < 0) return ioError("eventfd failed");
  session->context_ = std::make_unique<ZmqContext>();
  session->reloadAgents();
  return session;
}

uint64_t ClusterSession::post(std::function<void(uint64_t)> command) {
  const uint64_t token = next_token_++;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back([command = std::move(command), token] { command(token); });
  }
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
  return token;
}

void ClusterSession::stop() {
  stop_ = true;
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

uint64_t ClusterSession::postSubmit(job::JobSpec spec, SubmitOptions options) {
  return post([this, spec = std::move(spec), options = std::move(options)](uint64_t token) mutable {
    deferred_submits_.push_back({token, std::move(spec), std::move(options), Clock::now()});
  });
}

// A submission waits until every agent's journal cursor is known (its first answer, or its
// silence), so that every record of the job comes through this ClusterSession: another client
// storing the new records in the same history before this ClusterSession's first answer would
// otherwise move the cursor past them (and a `submit --wait` would wait for a JobAccepted it
// never sees). An agent silent for a second is down, or too slow to be given the job: the
// submission goes on.
void ClusterSession::runDeferredSubmits() {
  if (deferred_submits_.empty()) return;
  const bool cursors_known = std::all_of(agents_.begin(), agents_.end(), [](const auto& agent) {
    return agent->status.state != AgentState::kConnecting || agent->journalKnown();
  });
  const auto timeout = std::min(milliseconds(options_.request_timeout_ms), kSubmitWaitLimit);
  while (!deferred_submits_.empty() &&
         (cursors_known || Clock::now() - deferred_submits_.front().posted > timeout)) {
    worker_->post([this, submit = std::move(deferred_submits_.front())](ClusterClient* client,
                                                                        const Status& why_none) {
      SubmitOptions options = submit.options;
      options.waiting = [this, token = submit.token](const std::string& line) {
        sink_->submitWaiting(token, line);
      };
      const Result<SubmittedJob> result =
          client ? client->submit(submit.spec, options) : Result<SubmittedJob>(why_none);
      pending_flush_ = true;  // its submission row went to the writer
      sink_->submitted(submit.token, result);
    });
    deferred_submits_.pop_front();
  }
}

uint64_t ClusterSession::postToWorker(
    CommandWorker& worker, std::function<void(uint64_t, ClusterClient*, const Status&)> command) {
  const uint64_t token = next_token_++;
  worker.post([command = std::move(command), token](ClusterClient* client, const Status& why_none) {
    command(token, client, why_none);
  });
  return token;
}

uint64_t ClusterSession::postStop(std::string job_id, int grace_ms) {
  return postToWorker(*worker_, [this, job_id = std::move(job_id), grace_ms](
                                    uint64_t token, ClusterClient* client, const Status& why_none) {
    sink_->stopped(token, job_id, client ? client->stop(job_id, grace_ms) : Result<int>(why_none));
  });
}

uint64_t ClusterSession::postRestart(std::string job_id, std::string exclude_agent,
                                     std::string reason) {
  return postToWorker(*worker_,
                      [=, this](uint64_t token, ClusterClient* client, const Status& why_none) {
                        sink_->restarted(token, job_id,
                                         client ? client->restart(job_id, exclude_agent, reason)
                                                : Result<RestartReport>(why_none));
                      });
}

uint64_t ClusterSession::postKillRank(std::string job_id, int rank) {
  return postToWorker(
      *worker_, [=, this](uint64_t token, ClusterClient* client, const Status& why_none) {
        sink_->rankKilled(token, job_id, rank, client ? client->killRank(job_id, rank) : why_none);
      });
}

uint64_t ClusterSession::postReadLog(std::string agent, std::string job_id, int rank,
                                     uint64_t offset, uint32_t attempt, uint32_t max_bytes) {
  // Their own worker: a pane polling a frozen agent's log never queues a stop behind its reads.
  return postToWorker(
      *log_worker_, [=, this](uint64_t token, ClusterClient* client, const Status& why_none) {
        sink_->logChunk(token, job_id, rank,
                        client ? client->readLog(agent, job_id, rank, offset, 0, attempt, max_bytes)
                               : Result<proto::LogChunk>(why_none));
      });
}

// A snapshot holds every record handed to the sink before the load was posted (they were queued
// for the writer first); records handed out while it loads may be in it too, and views skip
// those they already have.
void ClusterSession::postReadHistory(std::function<void(store::Reader& history)> read) {
  history_worker_->post([this, read = std::move(read)](store::Reader& history) {
    writer_->waitWritten();
    read(history);
  });
}

uint64_t ClusterSession::postListRuns() {
  const uint64_t token = next_token_++;
  history_worker_->post([this, token](store::Reader& history) {
    writer_->waitWritten();
    sink_->runsListed(token, loadRunSummaries(history));
  });
  return token;
}

uint64_t ClusterSession::postHardwareReport(double since) {
  const uint64_t token = next_token_++;
  history_worker_->post([this, token, since](store::Reader& history) {
    writer_->waitWritten();
    auto runs = hardware::hardwareRuns(history, since);
    sink_->hardwareReported(
        token, runs.isOk() ? Result<hardware::HardwareReport>(hardware::hardwareReport(*runs))
                           : Result<hardware::HardwareReport>(runs.status()));
  });
  return token;
}

uint64_t ClusterSession::postPreflight(PreflightOptions options) {
  return postToWorker(*preflight_worker_,
                      [options = std::move(options), this](uint64_t token, ClusterClient* client,
                                                           const Status& why_none) mutable {
                        options.progress = [this, token](const std::string& what) {
                          sink_->preflightProgress(token, what);
                        };
                        sink_->preflightDone(token, client ? runPreflight(*client, options)
                                                           : Result<PreflightReport>(why_none));
                      });
}

uint64_t ClusterSession::postEditHistory(std::function<Status(store::Writer&)> edit) {
  const uint64_t token = next_token_++;
  // On the history worker, which may wait: the write queues behind the journal's batches.
  history_worker_->post([this, token, edit = std::move(edit)](store::Reader&) {
    // Set on the writer's thread; read after waitWritten(), which orders the two.
    auto outcome = std::make_shared<std::optional<Status>>();
    writer_->enqueueWrite([edit, outcome](store::Writer& s) {
      *outcome = edit(s);
      return **outcome;
    });
    writer_->waitWritten();
    pending_flush_ = true;  // a failure is also the writer's to clear, at the next flush
    sink_->historyEdited(token, outcome->value_or(Status(ErrorCode::kUnavailable,
                                                         "the history was not changed: an "
                                                         "earlier write of it failed; try again")));
  });
  return token;
}

uint64_t ClusterSession::postReloadCluster() {
  return post([this](uint64_t) {
    reloadAgents();
    worker_->reload();
    log_worker_->reload();
    preflight_worker_->reload();
  });
}

SlurmWatch& ClusterSession::slurmWatch(store::Reader& history) {
  if (!slurm_watch_) slurm_watch_ = std::make_unique<SlurmWatch>(&history, writer_.get());
  return *slurm_watch_;
}

void ClusterSession::runCommands() {
  std::vector<Command> commands;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    commands.swap(queue_);
  }
  for (auto& command : commands) {
    if (stop_) return;
    command();
  }
}

void ClusterSession::reloadAgents() {
  agents_.clear();
  ++generation_;
  if (auto clusters = loadSlurmClusters(paths_.cluster_file); clusters.isOk()) {
    slurm_worker_->post([this, clusters = std::move(*clusters)](store::Reader& history) mutable {
      slurmWatch(history).setClusters(std::move(clusters));
    });
  }
  auto opened = ClusterClient::open(paths_);
  if (!opened.isOk()) {  // the worker's client says why to the commands
    client_.reset();
    return;
  }
  client_ = std::move(*opened);
  for (const auto& endpoint : client_->agents()) {
    auto agent = std::make_unique<Agent>();
    agent->endpoint = endpoint;
    agent->status.name = endpoint.name;
    agent->status.endpoint = endpoint.endpoint;
    agent->status.server_key = endpoint.server_key;
    agent->status.time = unixSeconds();
    auto health = AgentConnection::connect(*context_, endpoint, client_->keys());
    auto journal = AgentConnection::connect(*context_, endpoint, client_->keys());
    if (!health.isOk() || !journal.isOk()) {
      Status why = health.isOk() ? journal.status() : health.status();
      agent->status.state = AgentState::kError;
      agent->status.reason = why.message();
      sink_->agentStatus(agent->status);
      agents_.push_back(std::move(agent));
      continue;
    }
    agent->health = std::move(*health);
    agent->journal = std::move(*journal);
    agent->follower.emplace(agent->journal.get());
    agent->unanswered_since = Clock::now();
    sink_->agentStatus(agent->status);
    agents_.push_back(std::move(agent));
  }
}

void ClusterSession::report(Agent& agent, AgentState state, std::string reason) {
  const AgentState before = agent.status.state;
  agent.status.state = state;
  agent.status.reason = std::move(reason);
  agent.status.time = unixSeconds();
  std::vector<store::EventRow> events = watchEvents(before, agent.status, &agent.lost_jobs);
  if (!events.empty()) {
    writer_->enqueueWrite([events = std::move(events)](store::Writer& s) {
      for (const store::EventRow& e : events) RM_RETURN_IF_ERROR(s.recordWatchEvent(e));
      return Status::ok();
    });
    pending_flush_ = true;
  }
  sink_->agentStatus(agent.status);
}

void ClusterSession::markSilent(Agent& agent, const Status& why) {
  const AgentState state = stateOf(why);
  std::string reason = why.message();
  if (state == AgentState::kUnreachable) {
    reason += agent.status.answered_at > 0
                  ? "; no answer since " + clockTime(agent.status.answered_at)
                  : "; no answer since this client started watching at " + clockTime(started_at_);
  }
  if (agent.status.state == state && agent.status.reason == reason) return;
  report(agent, state, std::move(reason));
}

void ClusterSession::tick(Agent& agent) {
  if (!agent.health) return;
  const auto now = Clock::now();
  const auto timeout = milliseconds(options_.silent_after_ms);

  // Health: one inventory request at a time, every inventory_interval_ms.
  if (agent.inventory_request && now - agent.inventory_sent > timeout) {
    agent.inventory_request = 0;
    agent.health->drainMonitor();
    markSilent(agent, agent.health->explainSilence(options_.silent_after_ms));
    agent.next_inventory = now + milliseconds(options_.retry_interval_ms);
    agent.unanswered_since = now;
  }
  if (!agent.inventory_request && now >= agent.next_inventory) {
    proto::Envelope request;
    request.mutable_inventory_request();
    Status sent = agent.health->send(request, 0);
    if (sent.isOk()) {
      agent.inventory_request = request.request_id();
      agent.inventory_sent = now;
      agent.inventory_backoff = milliseconds(0);
    } else {
      // Not connected (yet): ZMQ_IMMEDIATE queues nothing. Say why once it has taken too long.
      agent.next_inventory = now + nextBackoff(agent.inventory_backoff);
      if (now - agent.unanswered_since > timeout) {
        agent.health->drainMonitor();
        markSilent(agent, sent.code() == ErrorCode::kUnavailable
                              ? agent.health->explainSilence(options_.silent_after_ms)
                              : sent);
        agent.unanswered_since = now;
        agent.next_inventory = now + milliseconds(options_.retry_interval_ms);
      }
    }
  }

  // Journal: always one read in flight once the journal is known.
  if (agent.follower->overdue(options_.request_timeout_ms)) {
    agent.follower->abandon();
    agent.journal_retry_at = now + milliseconds(options_.retry_interval_ms);
  }
  if (agent.journalKnown() && !agent.journalInFlight() && now >= agent.journal_retry_at) {
    sendJournalRead(agent);
  }
}

void ClusterSession::sendJournalRead(Agent& agent) {
  Status sent = agent.follower->sendRead(options_.batch_records,
                                         static_cast<uint32_t>(options_.journal_wait_ms));
  if (!sent.isOk()) {
    agent.journal_retry_at = Clock::now() + nextBackoff(agent.journal_backoff);
    return;
  }
  agent.journal_backoff = milliseconds(0);
}

void ClusterSession::receiveInventory(Agent& agent) {
  auto reply = agent.health->receive(agent.inventory_request);
  if (!reply) return;  // an answer to an abandoned request
  const auto now = Clock::now();
  agent.inventory_request = 0;
  agent.next_inventory = now + milliseconds(options_.inventory_interval_ms);
  agent.unanswered_since = now;
  if (!reply->isOk()) {
    markSilent(agent, reply->status());
    return;
  }
  proto::Inventory& inventory = *(*reply)->mutable_inventory();
  if (!agent.follower->known() || inventory.journal_id() != agent.follower->journalId()) {
    // A new agent or a state dir started afresh: resume where the history's cursor says.
    auto cursor = history_->cursor(agent.endpoint.name, inventory.journal_id());
    agent.follower->resume(inventory.journal_id(), cursor.isOk() ? *cursor : 1);
    agent.journal_retry_at = now;
  }
  if (!agent.answered_once || now - agent.last_recorded > kRecordAgentInterval) {
    // Through the session's one writer; a failure is reported by its next flush.
    writer_->enqueueWrite(
        [name = agent.endpoint.name, endpoint = agent.endpoint.endpoint,
         inventory](store::Writer& s) { return s.recordAgent(name, endpoint, inventory); });
    pending_flush_ = true;
    agent.last_recorded = now;
  }
  agent.answered_once = true;
  agent.status.answered_at = unixSeconds();
  agent.status.inventory = std::move(inventory);
  report(agent, AgentState::kOnline, "");
}

void ClusterSession::receiveJournal(Agent& agent) {
  auto batch = agent.follower->receive([&] { sendJournalRead(agent); });
  if (!batch) return;
  if (!batch->isOk()) {
    agent.journal_retry_at = Clock::now() + milliseconds(options_.retry_interval_ms);
    return;
  }
  // A journal answer proves the agent answers as well as an inventory does; saying so now keeps
  // "answers again" ahead of the records it brings (the next inventory may come much later).
  agent.status.answered_at = unixSeconds();
  if (agent.answered_once && agent.status.state != AgentState::kOnline) {
    report(agent, AgentState::kOnline, "");
  }
  if (!(*batch)->broken.isOk()) {
    // Its cursor stays at the bad record: read again after a while, and said once.
    agent.journal_retry_at = Clock::now() + milliseconds(options_.retry_interval_ms);
    if (agent.status.reason != (*batch)->broken.message()) {
      report(agent, AgentState::kError, (*batch)->broken.message());
    }
  }
  std::vector<proto::JournalRecord>& records = (*batch)->records;
  if (records.empty()) return;
  writer_->enqueue(agent.endpoint.name, agent.follower->journalId(), records, (*batch)->applied_to);
  pending_flush_ = true;
  sink_->records(agent.endpoint.name, std::move(records));
}

void ClusterSession::flushHistory() {
  pending_flush_ = false;
  Status flushed = writer_->flush();
  if (flushed.isOk()) return;
  sink_->sessionError(flushed);
  // The batch writer dropped what followed the failed batch: pull again from the stored cursors
  // (the sink sees those records twice; the history stores them once).
  for (auto& agent : agents_) {
    if (!agent->journalKnown()) continue;
    auto cursor = history_->cursor(agent->endpoint.name, agent->follower->journalId());
    if (!cursor.isOk()) continue;
    agent->follower->setCursor(*cursor);
    agent->follower->abandon();  // a read in flight would move the cursor past the gap again
    agent->journal_retry_at = Clock::now();
  }
}

// kPollMs, or less when an agent's next send is due sooner (see Agent::inventory_backoff).
int ClusterSession::pollTimeoutMs() const {
  const auto now = Clock::now();
  auto wake = now + milliseconds(kPollMs);
  for (const auto& agent : agents_) {
    if (!agent->health) continue;
    if (!agent->inventory_request) wake = std::min(wake, agent->next_inventory);
    if (agent->journalKnown() && !agent->journalInFlight()) {
      wake = std::min(wake, agent->journal_retry_at);
    }
  }
  return static_cast<int>(
      std::max<int64_t>(0, std::chrono::duration_cast<milliseconds>(wake - now).count()));
}

Status ClusterSession::run() {
  std::vector<zmq_pollitem_t> items;
  struct Owner {
    Agent* agent;
    bool journal;
  };
  std::vector<Owner> owners;
  // A socket polled for POLLOUT (its last send found it in its handshake) is polled for that
  // alone: nothing is in flight on it.
  auto watch = [&](Agent& agent, void* socket, bool in_flight, milliseconds backoff, bool journal) {
    if (!in_flight && backoff == milliseconds(0)) return;
    items.push_back({socket, 0, static_cast<short>(in_flight ? ZMQ_POLLIN : ZMQ_POLLOUT), 0});
    owners.push_back({&agent, journal});
  };
  auto last_flush = Clock::now();
  while (!stop_) {
    items.clear();
    owners.clear();
    items.push_back({nullptr, wake_fd_, ZMQ_POLLIN, 0});
    for (auto& agent : agents_) {
      if (!agent->health) continue;
      watch(*agent, agent->health->socket(), agent->inventory_request != 0,
            agent->inventory_backoff, false);
      watch(*agent, agent->journal->socket(), agent->journalInFlight() != 0, agent->journal_backoff,
            true);
    }
    if (zmq_poll(items.data(), static_cast<int>(items.size()), pollTimeoutMs()) < 0) {
      if (zmq_errno() == EINTR) continue;
      return ioError(std::string("zmq_poll: ") + zmq_strerror(zmq_errno()));
    }
    if (items[0].revents & ZMQ_POLLIN) {
      uint64_t count;
      [[maybe_unused]] ssize_t n = ::read(wake_fd_, &count, sizeof count);
    }
    const uint64_t generation = generation_;
    runCommands();
    if (stop_) break;
    if (generation != generation_) continue;  // the agents were reloaded: items are stale
    for (size_t k = 1; k < items.size(); ++k) {
      const Owner& owner = owners[k - 1];
      if (items[k].revents & ZMQ_POLLOUT) {  // connected: tick() below sends at once
        if (owner.journal) {
          owner.agent->journal_retry_at = Clock::now();
          owner.agent->journal_backoff = milliseconds(0);
        } else {
          owner.agent->next_inventory = Clock::now();
          owner.agent->inventory_backoff = milliseconds(0);
        }
        continue;
      }
      if (!(items[k].revents & ZMQ_POLLIN)) continue;
      if (owner.journal) {
        receiveJournal(*owner.agent);
      } else {
        receiveInventory(*owner.agent);
      }
    }
    for (auto& agent : agents_) tick(*agent);
    runDeferredSubmits();
    if (pending_flush_ && Clock::now() - last_flush > kFlushInterval) {
      flushHistory();
      last_flush = Clock::now();
    }
  }
  Status flushed = writer_->flush();
  if (!flushed.isOk()) sink_->sessionError(flushed);
  return flushed;
}

}  // namespace ringmaster::client
