#include "ringmaster/client/cluster_client.h"

#include <algorithm>
#include <ctime>
#include <map>
#include <random>

#include "ringmaster/client/slurm_submit.h"
#include "ringmaster/job/job_plan.h"
#include "ringmaster/slurm/queries.h"
#include "ringmaster/util/wall_clock.h"

namespace ringmaster::client {
namespace {

// From the kernel's random source: job ids name what a client may stop or read, so they must
// not be guessable from one another (a seeded PRNG would make them so).
std::string randomHex(size_t digits) {
  std::random_device entropy;
  const char* hex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < digits; ++i) out += hex[entropy() % 16];
  return out;
}

proto::Launcher toProto(job::Launcher launcher) {
  switch (launcher) {
    case job::Launcher::kNative:
      return proto::NATIVE;
    case job::Launcher::kTorchrun:
      return proto::TORCHRUN;
    case job::Launcher::kCommand:
      return proto::COMMAND;
    case job::Launcher::kTensorflow:
      return proto::TENSORFLOW;
    case job::Launcher::kDeepspeed:
      return proto::DEEPSPEED;
  }
  return proto::LAUNCHER_UNSPECIFIED;
}

// "launching: waiting for 3 of 128 agents: h2, h17, h90 (alive but busy; 12 s of at most 120 s)"
std::string waitingLine(const std::string& step, const std::vector<std::string>& agents, size_t of,
                        int64_t waited_ms, int bound_ms) {
  constexpr size_t kNamed = 8;
  std::string names;
  for (size_t i = 0; i < agents.size() && i < kNamed; ++i) names += (i ? ", " : "") + agents[i];
  if (agents.size() > kNamed) names += " (+" + std::to_string(agents.size() - kNamed) + " more)";
  return step + ": waiting for " + std::to_string(agents.size()) + " of " + std::to_string(of) +
         " agents: " + names + " (alive but busy; " + std::to_string(waited_ms / 1000) +
         " s of at most " + std::to_string(bound_ms / 1000) + " s)";
}

Patience patienceFor(const std::string& step, int bound_ms,
                     std::function<void(const std::string&)> waiting) {
  Patience patience;
  patience.bound_ms = bound_ms;
  if (waiting) {
    patience.waiting = [step, bound_ms, waiting = std::move(waiting)](
                           const std::vector<std::string>& agents, size_t of, int64_t waited_ms) {
      waiting(waitingLine(step, agents, of, waited_ms, bound_ms));
    };
  }
  return patience;
}

// stop, killRank and restart: the submit's timeout and patience.
const int kCommandTimeoutMs = SubmitOptions{}.timeout_ms;
const int kBusyAgentBoundMs = SubmitOptions{}.busy_agent_bound_ms;

}  // namespace

proto::JobLaunch baseLaunch(const job::JobSpec& spec, const std::string& job_id) {
  proto::JobLaunch launch;
  launch.set_job_id(job_id);
  launch.set_attempt(1);
  launch.set_name(spec.name);
  launch.set_launcher(toProto(spec.launcher));
  // A .py script runs under the interpreter the spec names (torchrun: its own interpreter).
  if (!spec.command.empty() && job::isPythonScript(spec.command[0]) && !spec.python.empty()) {
    launch.add_argv(spec.python);
  }
  for (const auto& arg : spec.command) launch.add_argv(arg);
  launch.set_workdir(spec.workdir);
  for (const auto& [name, value] : spec.env) {
    auto* var = launch.add_env();
    var->set_name(name);
    var->set_value(value);
  }
  launch.set_world_size(spec.world_size);
  launch.set_max_restarts(static_cast<uint32_t>(spec.restart.max_restarts));
  proto::RestartPolicy* restart = launch.mutable_restart();
  restart->set_max_restarts(static_cast<uint32_t>(spec.restart.max_restarts));
  restart->set_backoff_seconds(spec.restart.backoff_seconds);
  restart->set_hang_timeout_seconds(spec.restart.hang_timeout_seconds);
  restart->set_on_hang(spec.restart.on_hang);
  restart->set_min_nodes(spec.restart.min_nodes);
  restart->set_exclude_failed_hosts(spec.restart.exclude_failed_hosts);
  restart->set_rejoin_timeout_seconds(spec.restart.rejoin_timeout_seconds);
  for (const auto& pattern : spec.metric_patterns) {
    auto* p = launch.add_metric_patterns();
    p->set_name(pattern.name);
    p->set_regex(pattern.regex);
  }
  launch.set_spec_yaml(spec.text);
  launch.set_native_yaml(spec.native_yaml);
  launch.set_stop_grace_ms(static_cast<uint32_t>(spec.stop_grace_seconds) * 1000);
  launch.set_backend(job::backendName(spec.backend));
  if (spec.launcher == job::Launcher::kTensorflow) {
    launch.mutable_tensorflow()->set_chief(spec.tensorflow.chief);
    launch.mutable_tensorflow()->set_ps(spec.tensorflow.ps);
  }
  return launch;
}

std::string newJobId(const std::string& name) {
  std::time_t t = std::time(nullptr);
  std::tm local{};  // localtime_r: the app submits from its session thread
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%y%m%d-%H%M%S", ::localtime_r(&t, &local));
  return name.substr(0, 40) + "-" + stamp + "-" + randomHex(16);  // 64 random bits
}

ClusterClient::ClusterClient(ClientPaths paths, std::vector<AgentEndpoint> agents,
                             security::KeyPair keys)
    : paths_(std::move(paths)), agents_(std::move(agents)), keys_(std::move(keys)) {}

ClusterClient::~ClusterClient() {
  writer_.reset();
  connections_.clear();  // sockets close before the context ends
}

Result<std::unique_ptr<ClusterClient>> ClusterClient::open(const ClientPaths& paths) {
  RM_ASSIGN_OR_RETURN(auto agents, loadClusterFile(paths.cluster_file));
  RM_ASSIGN_OR_RETURN(auto keys, loadClientKeys(paths));
  return std::unique_ptr<ClusterClient>(
      new ClusterClient(paths, std::move(agents), std::move(keys)));
}

Result<store::Reader*> ClusterClient::history() {
  if (!store_) {
    RM_ASSIGN_OR_RETURN(store_, store::Reader::open(paths_.db_file));
  }
  return store_.get();
}

Result<store::BatchWriter*> ClusterClient::writer() {
  if (shared_writer_) return shared_writer_;
  if (!writer_) {
    RM_ASSIGN_OR_RETURN(writer_, store::BatchWriter::open(paths_.db_file));
  }
  return writer_.get();
}

Result<AgentConnection*> ClusterClient::connection(const std::string& name) {
  if (auto it = connections_.find(name); it != connections_.end()) return it->second.get();
  auto agent = std::find_if(agents_.begin(), agents_.end(),
                            [&](const AgentEndpoint& a) { return a.name == name; });
  if (agent == agents_.end()) {
    std::string known;
    for (const auto& a : agents_) known += (known.empty() ? "" : ", ") + a.name;
    return notFound("agent '" + name + "' is not in the cluster file " + paths_.cluster_file +
                    " (known: " + known + ")");
  }
  RM_ASSIGN_OR_RETURN(auto connection, AgentConnection::connect(context_, *agent, keys_));
  AgentConnection* raw = connection.get();
  connections_[name] = std::move(connection);
  return raw;
}

Result<std::vector<AgentConnection*>> ClusterClient::connections(
    const std::vector<std::string>& names) {
  std::vector<AgentConnection*> out;
  for (const auto& name : names) {
    RM_ASSIGN_OR_RETURN(AgentConnection * c, connection(name));
    out.push_back(c);
  }
  return out;
}

std::vector<std::pair<std::string, Result<proto::Inventory>>> ClusterClient::inventories(
    std::vector<std::string> names, int timeout_ms, const Patience& patience) {
  if (names.empty()) {
    for (const auto& a : agents_) names.push_back(a.name);
  }
  std::vector<std::pair<std::string, Result<proto::Inventory>>> out;
  std::vector<AgentConnection*> reachable;
  std::vector<size_t> slot;
  for (const auto& name : names) {
    auto c = connection(name);
    out.emplace_back(name, c.isOk() ? Result<proto::Inventory>(timeoutError("pending"))
                                    : Result<proto::Inventory>(c.status()));
    if (c.isOk()) {
      reachable.push_back(*c);
      slot.push_back(out.size() - 1);
    }
  }
  std::vector<proto::Envelope> requests(reachable.size());
  for (auto& r : requests) r.mutable_inventory_request();
  auto replies = callAll(reachable, std::move(requests), timeout_ms, patience);
  auto history_writer = writer();
  for (size_t i = 0; i < replies.size(); ++i) {
    auto& entry = out[slot[i]];
    if (!replies[i].isOk()) {
      entry.second = replies[i].status();
      continue;
    }
    entry.second = replies[i]->inventory();
    if (history_writer.isOk()) {
      // The agents table caches the newest inventory (a failure is reported by the next flush).
      (*history_writer)
          ->enqueueWrite([name = entry.first, endpoint = reachable[i]->agent().endpoint,
                          inventory = *entry.second](store::Writer& s) {
            return s.recordAgent(name, endpoint, inventory);
          });
    }
  }
  return out;
}

std::vector<std::string> SubmittedJob::agentNames() const {
  std::vector<std::string> names;
  for (const auto& share : shares) names.push_back(share.first);
  return names;
}

Result<SubmittedJob> ClusterClient::submit(const job::JobSpec& spec, const SubmitOptions& options) {
  auto patient = [&](const std::string& step) {
    return patienceFor(step, options.busy_agent_bound_ms, options.waiting);
  };
  // 1. Capacity of the candidate agents.
  std::vector<std::string> candidates;
  if (!spec.placement.empty()) {
    for (const auto& p : spec.placement) {
      bool known = std::any_of(agents_.begin(), agents_.end(),
                               [&](const AgentEndpoint& a) { return a.name == p.agent; });
      if (known) candidates.push_back(p.agent);
    }
  } else {
    for (const auto& a : agents_) candidates.push_back(a.name);
  }
  std::erase_if(candidates, [&](const std::string& name) {
    return std::find(options.exclude_agents.begin(), options.exclude_agents.end(), name) !=
           options.exclude_agents.end();
  });
  std::vector<job::AgentOffer> offers;
  for (auto& [name, inventory] :
       inventories(candidates, options.timeout_ms, patient("asking for capacity"))) {
    if (!inventory.isOk()) return inventory.status();
    offers.push_back(job::offerOf(name, *inventory));
  }
  std::vector<std::string> known;
  for (const auto& a : agents_) known.push_back(a.name);

  // 2. Ranks -> agents, and devices: each rank a GPU of its own, or (backend auto) the whole job
  // on the CPU.
  RM_ASSIGN_OR_RETURN(job::JobPlan planned, job::planJob(spec, offers, known));
  const std::vector<job::AgentShare>& shares = planned.shares;
  const job::DevicePlan& plan = planned.devices;
  if (spec.restart.min_nodes > static_cast<int>(shares.size())) {
    return invalidArgument("restart.min_nodes is " + std::to_string(spec.restart.min_nodes) +
                           " but the job runs on " + std::to_string(shares.size()) + " agent(s)");
  }

  // 3. One launch per agent; rank 0's agent hosts MASTER_ADDR:MASTER_PORT.
  const std::string job_id = options.job_id.empty() ? newJobId(spec.name) : options.job_id;
  proto::JobLaunch base = baseLaunch(spec, job_id);
  base.set_attempt(options.attempt);
  base.set_cpu_reason(plan.cpu_reason);
  std::vector<std::string> names;
  std::vector<proto::JobLaunch> launches;
  for (size_t g = 0; g < shares.size(); ++g) {
    proto::JobLaunch launch = base;
    launch.set_group_rank(static_cast<int>(g));
    launch.set_group_world_size(static_cast<int>(shares.size()));
    for (size_t local = 0; local < shares[g].ranks.size(); ++local) {
      auto* r = launch.add_ranks();
      r->set_rank(shares[g].ranks[local]);
      r->set_local_rank(static_cast<int>(local));
    }
    names.push_back(shares[g].agent);
    launches.push_back(std::move(launch));
  }
  RM_ASSIGN_OR_RETURN(auto conns, connections(names));
  const std::string master_addr = endpointHost(conns[0]->agent().endpoint);
  // The per-job rendezvous credential: a key pair that rank 0's agent admits for this job only.
  RM_ASSIGN_OR_RETURN(security::KeyPair rendezvous_keys, security::generateKeyPair());
  for (size_t g = 0; g < launches.size(); ++g) {
    launches[g].set_host_address(endpointHost(conns[g]->agent().endpoint));
  }
  // The gang: every agent of the job, so that they watch each other without a client.
  std::vector<proto::GangMember> gang;
  for (size_t g = 0; g < launches.size(); ++g) {
    proto::GangMember member;
    member.set_agent(names[g]);
    member.set_endpoint(conns[g]->agent().endpoint);
    member.set_server_key(conns[g]->agent().server_key);
    member.set_host_address(launches[g].host_address());
    member.set_ranks(launches[g].ranks_size());
    gang.push_back(std::move(member));
  }
  for (auto& launch : launches) {
    for (const auto& member : gang) *launch.add_gang() = member;
    launch.set_rendezvous_endpoint(conns[0]->agent().endpoint);
    launch.set_rendezvous_server_key(conns[0]->agent().server_key);
    launch.set_rendezvous_public_key(rendezvous_keys.public_key);
    launch.set_rendezvous_secret_key(rendezvous_keys.secret_key);
  }

  auto release = [&](size_t count) {
    std::vector<proto::Envelope> stops(count);
    for (auto& s : stops) s.mutable_stop_job()->set_job_id(job_id);
    std::vector<AgentConnection*> targets(conns.begin(), conns.begin() + count);
    callAll(targets, std::move(stops), options.timeout_ms);
  };

  // 4. Prepare everywhere (checks, slot reservation, MASTER_PORT), then launch everywhere.
  std::vector<proto::Envelope> prepares(conns.size());
  for (size_t g = 0; g < conns.size(); ++g) {
    *prepares[g].mutable_prepare_job()->mutable_launch() = launches[g];
    prepares[g].mutable_prepare_job()->set_reserve_master_port(g == 0);
  }
  auto prepared = callAll(conns, std::move(prepares), options.timeout_ms, patient("preparing"));
  for (auto& reply : prepared) {
    if (!reply.isOk()) {
      release(conns.size());
      return reply.status();
    }
  }
  const uint32_t master_port = prepared[0]->prepare_reply().master_port();
  std::vector<proto::Envelope> starts(conns.size());
  for (size_t g = 0; g < conns.size(); ++g) {
    launches[g].set_master_addr(master_addr);
    launches[g].set_master_port(master_port);
    *starts[g].mutable_launch_job()->mutable_launch() = launches[g];
  }
  auto started = callAll(conns, std::move(starts), options.timeout_ms, patient("launching"));
  for (auto& reply : started) {
    if (!reply.isOk()) {
      release(conns.size());
      return reply.status();
    }
  }

  // 5. The submitter's own record of a new job; the agents' journals fill in the rest on sync.
  if (auto w = writer(); w.isOk() && options.attempt == 1) {
    store::JobRow row;
    row.job_id = job_id;
    row.name = spec.name;
    row.launcher = job::launcherName(spec.launcher);
    row.state = "submitted";
    row.spec_yaml = spec.text;
    row.world_size = spec.world_size;
    row.attempt = options.attempt;
    row.submitted_at = unixSeconds();
    // Only the submission time is the client's own: the agents' records make the job's row
    // whether or not this one is written (a failure is reported by the writer's next flush).
    (*w)->enqueueWrite([row](store::Writer& s) { return s.recordSubmission(row); });
  }
  SubmittedJob submitted;
  submitted.job_id = job_id;
  for (const auto& share : shares) submitted.shares.emplace_back(share.agent, share.ranks);
  return submitted;
}

Result<SyncReport> ClusterClient::sync(std::vector<std::string> names, const SyncOptions& options) {
  if (names.empty()) {
    for (const auto& a : agents_) names.push_back(a.name);
  }
  RM_ASSIGN_OR_RETURN(auto conns, connections(names));
  RM_ASSIGN_OR_RETURN(store::Reader * store, history());
  RM_ASSIGN_OR_RETURN(store::BatchWriter * batch_writer, writer());
  JournalSync puller(conns, store, batch_writer);
  return puller.run(options);
}

Result<std::vector<std::string>> ClusterClient::jobAgents(const std::string& job_id,
                                                          bool every_attempt) {
  RM_ASSIGN_OR_RETURN(store::Reader * store, history());
  RM_ASSIGN_OR_RETURN(auto ranks, store->ranks(job_id));
  if (every_attempt) {
    const uint32_t newest = ranks.empty() ? 0 : ranks.front().attempt;
    for (uint32_t attempt = newest; attempt-- > 1;) {
      RM_ASSIGN_OR_RETURN(auto older, store->ranks(job_id, attempt));
      ranks.insert(ranks.end(), older.begin(), older.end());
    }
  }
  std::vector<std::string> names;
  for (const auto& r : ranks) {
    if (std::find(names.begin(), names.end(), r.agent) == names.end()) names.push_back(r.agent);
  }
  return names;
}

std::vector<std::string> ClusterClient::jobAgentsOrAll(const std::string& job_id,
                                                       bool every_attempt) {
  auto names = jobAgents(job_id, every_attempt);
  if (names.isOk() && !names->empty()) return *names;
  std::vector<std::string> all;
  for (const auto& a : agents_) all.push_back(a.name);
  return all;
}

Result<int> ClusterClient::stop(const std::string& job_id, int grace_ms) {
  // A job on Slurm ends with scancel: Slurm stops every node's agent, which stops its ranks.
  if (auto h = history(); h.isOk()) {
    if (auto slurm = (*h)->slurmJob(job_id); slurm.isOk()) {
      RM_RETURN_IF_ERROR(slurm::cancelJob({slurmLoginOf(paths_.cluster_file, slurm->cluster), ""},
                                          slurm->slurm_job_id));
      return 0;
    }
  }
  // Every agent that ever ran the job: one cut off from a newer attempt may still run an older.
  RM_ASSIGN_OR_RETURN(auto conns, connections(jobAgentsOrAll(job_id, true)));
  std::vector<proto::Envelope> requests(conns.size());
  for (auto& r : requests) {
    r.mutable_stop_job()->set_job_id(job_id);
    r.mutable_stop_job()->set_grace_ms(static_cast<uint32_t>(grace_ms));
  }
  auto replies = callAll(conns, std::move(requests), kCommandTimeoutMs,
                         patienceFor("stopping " + job_id, kBusyAgentBoundMs, waiting_));
  int signalled = 0;
  Status first_error;
  int not_found = 0;
  for (auto& reply : replies) {
    if (reply.isOk()) {
      signalled += static_cast<int>(reply->stop_reply().ranks_signalled());
    } else if (reply.status().code() == ErrorCode::kNotFound) {
      ++not_found;
    } else if (first_error.isOk()) {
      first_error = reply.status();
    }
  }
  if (!first_error.isOk()) return first_error;
  if (not_found == static_cast<int>(replies.size())) {
    return notFound("job '" + job_id + "' is not running on any agent");
  }
  return signalled;
}

Status ClusterClient::killRank(const std::string& job_id, int rank) {
  RM_ASSIGN_OR_RETURN(auto conns, connections(jobAgentsOrAll(job_id)));
  std::vector<proto::Envelope> requests(conns.size());
  for (auto& r : requests) {
    r.mutable_stop_job()->set_job_id(job_id);
    r.mutable_stop_job()->set_kill_one_rank(true);
    r.mutable_stop_job()->set_rank(static_cast<uint32_t>(rank));
  }
  Status first_error;
  for (auto& reply :
       callAll(conns, std::move(requests), kCommandTimeoutMs,
               patienceFor("killing rank " + std::to_string(rank), kBusyAgentBoundMs, waiting_))) {
    if (reply.isOk()) return Status::ok();
    if (reply.status().code() != ErrorCode::kNotFound && first_error.isOk()) {
      first_error = reply.status();
    }
  }
  if (!first_error.isOk()) return first_error;
  return notFound("rank " + std::to_string(rank) + " of job '" + job_id +
                  "' is not running on any agent");
}

Result<RestartReport> ClusterClient::restart(const std::string& job_id,
                                             const std::string& exclude_agent,
                                             const std::string& reason) {
  RM_ASSIGN_OR_RETURN(store::Reader * store, history());
  if (auto slurm = store->slurmJob(job_id); slurm.isOk()) {
    return invalidArgument(
        "job '" + job_id + "' runs on Slurm (job " + slurm->slurm_job_id + " on " + slurm->cluster +
        "): its agents restart failed ranks inside the allocation, as its "
        "restart policy says; 'scontrol requeue " +
        slurm->slurm_job_id + "' runs it again from its checkpoints as the next attempt");
  }
  RM_ASSIGN_OR_RETURN(std::vector<std::string> names, jobAgents(job_id));
  if (names.empty()) return notFound("job '" + job_id + "' has no ranks in the history");
  RM_ASSIGN_OR_RETURN(auto conns, connections(names));
  std::vector<proto::Envelope> requests(conns.size());
  for (auto& r : requests) {
    r.mutable_restart_job()->set_job_id(job_id);
    r.mutable_restart_job()->set_exclude_agent(exclude_agent);
    r.mutable_restart_job()->set_reason(reason);
  }
  auto replies = callAll(conns, std::move(requests), kCommandTimeoutMs,
                         patienceFor("restarting " + job_id, kBusyAgentBoundMs, waiting_));
  bool any_running = false;
  for (auto& reply : replies) {
    if (reply.isOk()) {
      any_running = true;
    } else if (reply.status().code() != ErrorCode::kNotFound) {
      return reply.status();  // a bad request (an unknown agent to exclude) names what is wrong
    }
  }
  if (any_running) return RestartReport{true, 0};

  // Over everywhere: a new attempt from the spec as submitted.
  RM_ASSIGN_OR_RETURN(store::JobRow row, store->job(job_id));
  job::SpecParseResult parsed = job::parseJobSpec(row.spec_yaml, "spec of job " + job_id);
  if (!parsed.ok()) return invalidArgument(job::formatDiagnostics(parsed.errors));
  job::JobSpec spec = *parsed.spec;
  SubmitOptions options;
  options.job_id = job_id;
  options.attempt = row.attempt + 1;
  options.waiting = waiting_;
  if (!exclude_agent.empty()) {
    options.exclude_agents.push_back(exclude_agent);
    auto excluded =
        std::find_if(spec.placement.begin(), spec.placement.end(),
                     [&](const job::PlacementEntry& e) { return e.agent == exclude_agent; });
    if (excluded != spec.placement.end()) {
      if (spec.placement.size() == 1) {
        return invalidArgument("job '" + job_id + "' runs on agent '" + exclude_agent +
                               "' alone: nothing would be left to run it");
      }
      spec.world_size -= excluded->ranks;
      spec.placement.erase(excluded);
    }
  }
  if (!spec.placement.empty()) {
    spec.restart.min_nodes =
        std::min(spec.restart.min_nodes, static_cast<int>(spec.placement.size()));
  }
  RM_RETURN_IF_ERROR(submit(spec, options).status());
  return RestartReport{false, options.attempt};
}

Result<proto::LogChunk> ClusterClient::readLog(const std::string& agent, const std::string& job_id,
                                               int rank, uint64_t offset, uint32_t wait_ms,
                                               uint32_t attempt, uint32_t max_bytes) {
  RM_ASSIGN_OR_RETURN(AgentConnection * c, connection(agent));
  proto::Envelope request;
  auto* read = request.mutable_read_log();
  read->set_job_id(job_id);
  read->set_rank(rank);
  read->set_offset(offset);
  read->set_wait_ms(wait_ms);
  read->set_attempt(attempt);
  read->set_max_bytes(max_bytes);
  // Short: a session runs reads on its one I/O thread, which an agent that hangs must not hold up.
  RM_ASSIGN_OR_RETURN(auto reply, c->call(std::move(request), 3000 + static_cast<int>(wait_ms)));
  return std::move(*reply.mutable_log_chunk());
}

}  // namespace ringmaster::client
