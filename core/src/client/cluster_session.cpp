#include "ringmaster/client/cluster_session.h"

#include <sys/eventfd.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <chrono>

#include "client/command_worker.h"

namespace ringmaster::client {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

double unixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

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

  std::string journal_id;
  uint64_t cursor = 0;  // next seq to pull; 0 until the journal is known
  uint64_t journal_request = 0;
  Clock::time_point journal_sent{}, journal_retry_at{};
  uint32_t journal_wait_ms = 0;
  bool caught_up = false;
  // While a connection is in its CURVE handshake (ZMQ_IMMEDIATE queues nothing), sends are
  // retried after these waits, doubling from 2 ms: the handshake takes a few ms on loopback,
  // and a fixed 100 ms wait was most of a short job's submit time.
  milliseconds inventory_backoff{}, journal_backoff{};
};

namespace {

milliseconds nextBackoff(milliseconds& backoff) {
  backoff = std::clamp(2 * backoff, milliseconds(2), milliseconds(100));
  return backoff;
}

}  // namespace

ClusterSession::ClusterSession(ClientPaths paths, SessionSink* sink, SessionOptions options)
    : paths_(std::move(paths)), sink_(sink), options_(options), started_at_(unixNow()) {}

ClusterSession::~ClusterSession() {
  log_worker_.reset();
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
  std::unique_ptr<ClusterSession> session(new ClusterSession(paths, sink, options));
  RM_ASSIGN_OR_RETURN(security::KeyPair keys, loadClientKeys(paths));
  session->client_public_key_ = keys.public_key;
  RM_ASSIGN_OR_RETURN(session->history_, store::Store::open(paths.db_file));
  RM_ASSIGN_OR_RETURN(session->writer_, store::BatchWriter::open(paths.db_file));
  session->worker_ = std::make_unique<CommandWorker>(paths, session->writer_.get());
  session->log_worker_ = std::make_unique<CommandWorker>(paths, session->writer_.get());
  session->slurm_watch_ =
      std::make_unique<SlurmWatch>(session->history_.get(), session->writer_.get());
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

uint64_t ClusterSession::postSubmit(job::JobSpec spec) {
  return post([this, spec = std::move(spec)](uint64_t token) mutable {
    deferred_submits_.push_back({token, std::move(spec), Clock::now()});
  });
}

// A submission waits until every agent's journal cursor is known (its first answer, or its
// silence), so that every record of the job comes through this session: another client storing
// the new records in the same history before this session's first answer would otherwise move
// the cursor past them (and a `submit --wait` would wait for a JobAccepted it never sees). An
// agent silent for a second is down, or too slow to be given the job: the submission goes on.
void ClusterSession::runDeferredSubmits() {
  if (deferred_submits_.empty()) return;
  const bool cursors_known = std::all_of(agents_.begin(), agents_.end(), [](const auto& agent) {
    return agent->status.state != AgentState::kConnecting || agent->cursor > 0;
  });
  const auto timeout = std::min(milliseconds(options_.request_timeout_ms), kSubmitWaitLimit);
  while (!deferred_submits_.empty() &&
         (cursors_known || Clock::now() - deferred_submits_.front().posted > timeout)) {
    worker_->post([this, submit = std::move(deferred_submits_.front())](ClusterClient* client,
                                                                        const Status& why_none) {
      const Result<SubmittedJob> result =
          client ? client->submit(submit.spec) : Result<SubmittedJob>(why_none);
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

uint64_t ClusterSession::postLoadJob(std::string job_id) {
  return post([this, job_id = std::move(job_id)](uint64_t token) {
    sink_->jobLoaded(token, loadJob(job_id));
  });
}

uint64_t ClusterSession::postListRuns() {
  return post([this](uint64_t token) { sink_->runsListed(token, listRuns()); });
}

uint64_t ClusterSession::postReloadCluster() {
  return post([this](uint64_t) {
    reloadAgents();
    worker_->reload();
    log_worker_->reload();
  });
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
    slurm_watch_->setClusters(std::move(*clusters));
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
    agent->status.time = unixNow();
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
    agent->unanswered_since = Clock::now();
    sink_->agentStatus(agent->status);
    agents_.push_back(std::move(agent));
  }
}

void ClusterSession::report(Agent& agent, AgentState state, std::string reason) {
  agent.status.state = state;
  agent.status.reason = std::move(reason);
  agent.status.time = unixNow();
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
  const auto timeout = milliseconds(options_.request_timeout_ms);

  // Health: one inventory request at a time, every inventory_interval_ms.
  if (agent.inventory_request && now - agent.inventory_sent > timeout) {
    agent.inventory_request = 0;
    agent.health->drainMonitor();
    markSilent(agent, agent.health->explainSilence(options_.request_timeout_ms));
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
                              ? agent.health->explainSilence(options_.request_timeout_ms)
                              : sent);
        agent.unanswered_since = now;
        agent.next_inventory = now + milliseconds(options_.retry_interval_ms);
      }
    }
  }

  // Journal: always one read in flight once the journal is known.
  const auto journal_timeout = timeout + milliseconds(agent.journal_wait_ms);
  if (agent.journal_request && now - agent.journal_sent > journal_timeout) {
    agent.journal_request = 0;
    agent.journal_retry_at = now + milliseconds(options_.retry_interval_ms);
  }
  if (agent.cursor > 0 && !agent.journal_request && now >= agent.journal_retry_at) {
    sendJournalRead(agent);
  }
}

void ClusterSession::sendJournalRead(Agent& agent) {
  proto::Envelope request;
  auto* read = request.mutable_read_journal();
  read->set_from_seq(agent.cursor);
  read->set_max_records(options_.batch_records);
  read->set_journal_id(agent.journal_id);
  agent.journal_wait_ms = agent.caught_up ? static_cast<uint32_t>(options_.journal_wait_ms) : 0;
  read->set_wait_ms(agent.journal_wait_ms);
  Status sent = agent.journal->send(request, 0);
  if (!sent.isOk()) {
    agent.journal_retry_at = Clock::now() + nextBackoff(agent.journal_backoff);
    return;
  }
  agent.journal_backoff = milliseconds(0);
  agent.journal_request = request.request_id();
  agent.journal_sent = Clock::now();
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
  if (inventory.journal_id() != agent.journal_id) {
    // A new agent or a state dir started afresh: resume where the history's cursor says.
    auto cursor = history_->cursor(agent.endpoint.name, inventory.journal_id());
    agent.journal_id = inventory.journal_id();
    agent.cursor = cursor.isOk() ? *cursor : 1;
    agent.caught_up = false;
    agent.journal_retry_at = now;
  }
  if (!agent.answered_once || now - agent.last_recorded > kRecordAgentInterval) {
    // Through the session's one writer; a failure is reported by its next flush.
    writer_->enqueueWrite(
        [name = agent.endpoint.name, endpoint = agent.endpoint.endpoint,
         inventory](store::Store& s) { return s.recordAgent(name, endpoint, inventory); });
    pending_flush_ = true;
    agent.last_recorded = now;
  }
  agent.answered_once = true;
  agent.status.answered_at = unixNow();
  agent.status.inventory = std::move(inventory);
  report(agent, AgentState::kOnline, "");
}

void ClusterSession::receiveJournal(Agent& agent) {
  auto reply = agent.journal->receive(agent.journal_request);
  if (!reply) return;
  agent.journal_request = 0;
  if (!reply->isOk()) {
    // NOT_FOUND: the agent's journal changed under us; the next inventory says which it is.
    if (reply->status().code() == ErrorCode::kNotFound) agent.cursor = 0;
    agent.journal_retry_at = Clock::now() + milliseconds(options_.retry_interval_ms);
    return;
  }
  // A journal answer proves the agent answers as well as an inventory does; saying so now keeps
  // "answers again" ahead of the records it brings (the next inventory may come much later).
  agent.status.answered_at = unixNow();
  if (agent.answered_once && agent.status.state != AgentState::kOnline) {
    report(agent, AgentState::kOnline, "");
  }
  proto::JournalBatch& batch = *(*reply)->mutable_journal_batch();
  if (batch.records_size() == 0 && batch.last_seq() + 1 < agent.cursor) {
    // The journal is shorter than what was read of it (cut by an older agent): waiting for the
    // cursor's seq would wait forever. Follow it from its end.
    agent.cursor = batch.last_seq() + 1;
  }
  const uint64_t from = agent.cursor;
  agent.caught_up = batch.next_seq() > batch.last_seq();
  agent.cursor = std::max(agent.cursor, batch.next_seq());
  sendJournalRead(agent);  // the agent reads the next batch while this one is parsed
  // A key with role user is sent only its own jobs' records: seqs may skip, and next_seq is
  // where the batch ends.
  uint64_t applied_to = batch.next_seq();
  std::vector<proto::JournalRecord> records(static_cast<size_t>(batch.records_size()));
  for (int i = 0; i < batch.records_size(); ++i) {
    if (!records[static_cast<size_t>(i)].ParseFromString(batch.records(i))) {
      records.resize(static_cast<size_t>(i));
      applied_to = records.empty() ? from : records.back().seq() + 1;
      agent.cursor = applied_to;  // pull the bad record again; it stays the cursor
      break;
    }
  }
  if (records.empty()) return;
  writer_->enqueue(agent.endpoint.name, agent.journal_id, records, applied_to);
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
    if (agent->journal_id.empty()) continue;
    auto cursor = history_->cursor(agent->endpoint.name, agent->journal_id);
    if (cursor.isOk()) agent->cursor = *cursor;
  }
}

// kPollMs, or less when an agent's next send is due sooner (see Agent::inventory_backoff).
int ClusterSession::pollTimeoutMs() const {
  const auto now = Clock::now();
  auto wake = now + milliseconds(kPollMs);
  for (const auto& agent : agents_) {
    if (!agent->health) continue;
    if (!agent->inventory_request) wake = std::min(wake, agent->next_inventory);
    if (agent->cursor > 0 && !agent->journal_request)
      wake = std::min(wake, agent->journal_retry_at);
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
  auto last_flush = Clock::now();
  while (!stop_) {
    items.clear();
    owners.clear();
    items.push_back({nullptr, wake_fd_, ZMQ_POLLIN, 0});
    for (auto& agent : agents_) {
      if (agent->inventory_request) {
        items.push_back({agent->health->socket(), 0, ZMQ_POLLIN, 0});
        owners.push_back({agent.get(), false});
      }
      if (agent->journal_request) {
        items.push_back({agent->journal->socket(), 0, ZMQ_POLLIN, 0});
        owners.push_back({agent.get(), true});
      }
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
      if (!(items[k].revents & ZMQ_POLLIN)) continue;
      const Owner& owner = owners[k - 1];
      if (owner.journal) {
        receiveJournal(*owner.agent);
      } else {
        receiveInventory(*owner.agent);
      }
    }
    for (auto& agent : agents_) tick(*agent);
    const bool slurm_records = slurm_watch_->tick(
        [this](const std::string& agent, std::vector<proto::JournalRecord> records) {
          sink_->records(agent, std::move(records));
        },
        [this](const store::SlurmJobRow& row) { sink_->slurmJobChanged(row); });
    if (slurm_records) pending_flush_ = true;
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

Result<JobSnapshot> ClusterSession::loadJob(const std::string& job_id) {
  if (pending_flush_) flushHistory();
  JobSnapshot snapshot;
  RM_ASSIGN_OR_RETURN(snapshot.job, history_->job(job_id));
  const std::string& id = snapshot.job.job_id;
  RM_ASSIGN_OR_RETURN(snapshot.ranks, history_->ranks(id));
  RM_ASSIGN_OR_RETURN(snapshot.events, history_->events(id));
  store::MetricQuery query;
  query.job_id = id;
  RM_ASSIGN_OR_RETURN(snapshot.metrics, history_->metrics(query));
  std::vector<std::string> agents;
  for (const auto& rank : snapshot.ranks) {
    if (std::find(agents.begin(), agents.end(), rank.agent) == agents.end()) {
      agents.push_back(rank.agent);
    }
  }
  const double from = snapshot.job.submitted_at - 60;
  const double to = snapshot.job.finished_at > 0 ? snapshot.job.finished_at + 60 : unixNow();
  for (const auto& agent : agents) {
    RM_ASSIGN_OR_RETURN(auto rows, history_->health(agent, from, to, options_.max_health_rows));
    for (auto& row : rows) snapshot.health.push_back(std::move(row));
  }
  if (auto slurm = history_->slurmJob(id); slurm.isOk()) snapshot.slurm = std::move(*slurm);
  return snapshot;
}

Result<std::vector<RunSummary>> ClusterSession::listRuns() {
  if (pending_flush_) flushHistory();
  return loadRunSummaries(*history_);
}

}  // namespace ringmaster::client
