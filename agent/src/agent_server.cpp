#include "agent_server.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "agent_gang_world.h"
#include "connection_monitor.h"
#include "fair_queue.h"
#include "gang_coordinator.h"
#include "gang_ledger.h"
#include "gpu_fault_watch.h"
#include "host_sampler.h"
#include "interrupted_jobs.h"
#include "job_identity.h"
#include "job_owners.h"
#include "job_supervisor.h"
#include "journal.h"
#include "leftovers.h"
#include "parked_requests.h"
#include "rank_confinement.h"
#include "record_reads.h"
#include "refusal_log.h"
#include "rendezvous_service.h"
#include "repeat_filter.h"
#include "reply_budget.h"
#include "ringmaster/config.h"
#include "ringmaster/net/socket_options.h"
#include "ringmaster/protocol/codec.h"
#include "ringmaster/security/keys.h"
#include "ringmaster/util/wall_clock.h"
#include "user_connections.h"
#include "zap_handler.h"

extern char** environ;

namespace ringmaster::agent {
namespace {

using Clock = std::chrono::steady_clock;

// A client reads each reply before it asks again, but for a few long polls: 8 unread replies
// means it has stopped reading (or never meant to).
const int kQueuedRepliesPerClient = ReplyBudget::kQueuedPerConnection;
// What unread replies may hold of the agent's memory: per key over all its connections, and in
// all (ReplyBudget). A GUI following a journal and a few ringmasterctl commands of one key stay
// far below; a key's client that never reads gets errors instead of more replies. Queued replies
// are also work queued ahead of everyone's on libzmq's two I/O threads, which encrypt each
// whole: 4 of the largest per key, since 12 (192 MiB) kept another key's inventory waiting
// 0.2-0.9 s on a 2-core AMD VM (2026-11-30).
constexpr uint64_t kUnreadRepliesPerKey = 64ull << 20;
constexpr uint64_t kUnreadRepliesInAll = 384ull << 20;
constexpr auto kUnwritablePause = std::chrono::seconds(1);
// Requests that take time, waiting per key (FairQueue), and how many are served in one turn of
// the loop before rank output, signals and timers.
constexpr size_t kSlowRequestsPerKey = 1024;
constexpr int kSlowRequestsPerTurn = 16;
constexpr int kMessagesPerTurn = 256;
// Between two answers to long polls, at most this many messages are taken in.
constexpr int kMessagesBetweenAnswers = 64;

// Requests whose answer takes time: journal and log reads (megabytes, read and encoded), and
// preparing and launching a job (directories, clone and exec of every rank).
bool takesTime(const proto::Envelope& request) {
  return request.has_read_journal() || request.has_read_log() || request.has_launch_job() ||
         request.has_prepare_job();
}

std::string hostName() {
  char buffer[256] = {};
  ::gethostname(buffer, sizeof buffer - 1);
  return buffer;
}

std::string executableDir() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "." : self.parent_path().string();
}

std::vector<std::string> currentEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

// The key of a client ("client:<key>"), the owner of the jobs it submits; "" for other peers.
std::string ownerKey(const std::string& user) {
  return user.rfind("client:", 0) == 0 ? user.substr(7) : "";
}

// The ranks' credential of one attempt authenticates as "attempt:<job id>:<n>" (job ids hold no
// ':').
struct AttemptUser {
  std::string job;
  uint32_t attempt = 0;
};
std::optional<AttemptUser> parseAttemptUser(const std::string& user) {
  if (user.rfind("attempt:", 0) != 0) return std::nullopt;
  const size_t colon = user.rfind(':');
  return AttemptUser{user.substr(8, colon - 8),
                     static_cast<uint32_t>(std::strtoul(user.c_str() + colon + 1, nullptr, 10))};
}

}  // namespace

void blockAgentSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, sig);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

void takeAgentNice(int nice) {
  errno = 0;
  const int current = ::getpriority(PRIO_PROCESS, 0);
  if (errno == 0 && current != nice) ::setpriority(PRIO_PROCESS, 0, nice);
}

std::string agentKeyPath(const std::string& state_dir) { return state_dir + "/agent.key"; }
std::string authorizedKeysPath(const std::string& state_dir) {
  return state_dir + "/authorized_keys";
}

struct AgentServer::Impl {
  AgentOptions options;
  security::KeyPair keys;
  std::string endpoint;
  void* context = nullptr;
  void* router = nullptr;
  // Clients that took no reply (gone, or kQueuedRepliesPerClient unread): their requests are
  // dropped unread until then, so that a vanished or flooding client costs no file reads.
  std::map<std::string, Clock::time_point> unwritable_until;
  int signal_fd = -1;
  std::unique_ptr<ZapHandler> zap;
  std::unique_ptr<ConnectionMonitor> monitor;  // of `router`
  std::unique_ptr<Journal> journal;
  std::unique_ptr<HostSampler> sampler;
  std::optional<RankCgroups> cgroups;         // with --rank-memory
  std::unique_ptr<JobIdentities> identities;  // with --job-uids
  std::unique_ptr<JobSupervisor> supervisor;
  JobOwners owners;
  proto::Inventory inventory;
  proto::HealthSample last_health;
  std::unique_ptr<GpuFaultWatch> gpu_faults;  // journals faults of GPUs under running ranks
  double last_health_time = 0;
  double started_at = 0;
  Clock::time_point next_health;
  std::unique_ptr<RendezvousService> rendezvous;
  std::unique_ptr<GangLedger> ledger;
  std::unique_ptr<AgentGangWorld> gang_world;  // outlives `gang`, whose sockets it made
  std::unique_ptr<GangCoordinator> gang;
  ParkedRequests parked;
  // Requests refused or unreadable: an authorized key could send them without end.
  RefusalLog bad_requests{[this](const std::string& line) { log(line); }};
  bool stopping = false;
  uint64_t answered_up_to = 0;  // journal seq the parked requests were last retried at

  ~Impl() {
    gang.reset();
    gang_world.reset();
    supervisor.reset();
    monitor.reset();
    if (router) zmq_close(router);
    zap.reset();
    if (context) zmq_ctx_term(context);
    if (signal_fd >= 0) ::close(signal_fd);
  }

  // Called from the loop and from the ZAP handler's thread: localtime_r reads the time zone once
  // (main calls tzset before any thread exists); localtime would re-read it on every call, racing
  // with the other thread.
  // A line repeating the one before is written once and then counted (RepeatFilter).
  void log(const std::string& line) const {
    if (options.quiet) return;
    std::lock_guard<std::mutex> lock(log_mutex);  // the ZAP handler's thread logs too
    // Milliseconds: the gang's messages are sub-second apart, and a Slurm output file interleaves
    // every node's agent.
    auto now = std::chrono::system_clock::now();
    std::time_t t = std::chrono::system_clock::to_time_t(now);
    auto millis =
        std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
    std::tm local{};
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", ::localtime_r(&t, &local));
    for (const std::string& out : repeats.take(line)) {
      std::fprintf(stderr, "%s.%03d ringmaster-agent[%s] %s\n", stamp,
                   static_cast<int>(millis.count()), options.name.c_str(), out.c_str());
    }
  }
  mutable std::mutex log_mutex;
  mutable RepeatFilter repeats;  // GUARDED_BY(log_mutex)

  Status start();
  void endLeftoversOfAnEarlierRun();
  Status loop();
  void sampleHealth();
  void onSocketReadable();
  // Takes in at most `most` messages off the socket: cheap requests are answered at once, those
  // that take time queued by key (slow_requests). Returns how many it took.
  int takeIn(int most);
  // One request off the socket: false when none waits; a malformed one is refused here and
  // leaves *request empty.
  struct Request {
    std::string identity;
    std::string user;  // from ZAP: "client:<key>", "job:<id>" or "attempt:<id>:<n>"
    std::optional<proto::Envelope> envelope;
    int source_fd = -1;  // the connection's socket
  };
  bool receive(Request* request);
  // Requests that take time to answer (see takesTime), queued by key and served in turn.
  FairQueue<Request> slow_requests{kSlowRequestsPerKey};
  // Routes a request to what answers it; long polls that must wait are parked.
  void handle(const std::string& identity, const std::string& user, const proto::Envelope& request,
              int source_fd);
  // Connections by user id: those of a key removed from authorized_keys, or of an attempt that
  // is over, are closed.
  UserConnections connections;
  ReplyBudget reply_budget{kUnreadRepliesPerKey, kUnreadRepliesInAll};
  void closeRevokedConnections();
  bool revoked(const std::string& user) const;
  // What a peer may ask, by the user id ZAP gave its key.
  Status authorize(const std::string& user, const proto::Envelope& request) const;
  Status authorizeUserRole(const std::string& key, const proto::Envelope& request) const;
  // The jobs `user` may see: every job for an admin key (an empty filter), its own for a key
  // with role user.
  JobFilter jobFilter(const std::string& user) const;
  proto::Envelope answerInventory(const proto::Envelope& request, const JobFilter& visible) const;
  // The requests that may wait for data; nullopt: not yet (see ParkedRequests).
  std::optional<proto::Envelope> answerWaiting(const std::string& user,
                                               const proto::Envelope& request, bool final);
  Result<uint32_t> prepare(const proto::JobLaunch& launch, bool reserve_master_port);
  Result<std::vector<int>> launch(const proto::JobLaunch& launch);
  // With options.exit_when_done: a job was launched, and nothing of any job is left here.
  bool done() const;
  bool launched_any = false;
  void reply(const std::string& identity, proto::Envelope& envelope);
  void replyError(const std::string& identity, uint64_t request_id, const Status& status);
};

Status AgentServer::Impl::start() {
  std::error_code ec;
  std::filesystem::create_directories(options.state_dir, ec);
  if (ec) return ioError("cannot create state dir " + options.state_dir + ": " + ec.message());
  std::filesystem::permissions(options.state_dir, std::filesystem::perms::owner_all, ec);
  // Absolute: it marks every process the ranks start (RINGMASTER_AGENT_DIR).
  options.state_dir = std::filesystem::absolute(options.state_dir).string();
  RM_ASSIGN_OR_RETURN(keys, security::loadOrCreateKeyPair(agentKeyPath(options.state_dir)));
  RM_ASSIGN_OR_RETURN(journal, Journal::open(options.state_dir + "/journal"));
  if (!journal->report().empty()) log("journal: " + journal->report());
  owners.load(*journal);

  HostSamplerOptions sampler_options;
  sampler = std::make_unique<HostSampler>(sampler_options);
  gpu_faults = std::make_unique<GpuFaultWatch>(options.name);
  const char* inherited = std::getenv("CUDA_VISIBLE_DEVICES");
  if (options.gpus) {
    RM_RETURN_IF_ERROR(sampler->limitGpus({*options.gpus, "--gpus"}));
  } else if (inherited) {
    RM_RETURN_IF_ERROR(
        sampler->limitGpus({inherited, "CUDA_VISIBLE_DEVICES (the agent's environment)"}));
  }
  inventory = sampler->inventory();
  if (options.slots <= 0) {
    options.slots = sampler->gpuCount() > 0 ? sampler->gpuCount()
                                            : std::max<int>(1, static_cast<int>(inventory.cpus()));
  }
  SupervisorOptions supervisor_options;
  supervisor_options.agent_name = options.name;
  supervisor_options.state_dir = options.state_dir;
  supervisor_options.slots = options.slots;
  supervisor_options.gpus = sampler->gpus();
  supervisor_options.base_env = currentEnvironment();
  supervisor_options.worker_path = executableDir() + "/ringmaster-worker";
  supervisor_options.allow_loader_env = options.allow_loader_env;
  supervisor_options.metric_rate = options.rank_metric_rate;
  supervisor_options.sigterm_is_stop = options.exit_when_done;  // a per-job agent under Slurm
  supervisor_options.log = [this](const std::string& line) { log(line); };
  if (options.rank_memory > 0) {
    // A limit that was asked for and cannot hold is an error, not a warning.
    RM_ASSIGN_OR_RETURN(cgroups, RankCgroups::prepare(options.rank_memory));
    supervisor_options.cgroups = &*cgroups;
    log("each rank is limited to " + std::to_string(options.rank_memory >> 20) + " MiB of memory");
  }
  RM_ASSIGN_OR_RETURN(supervisor_options.confinement,
                      confinementFor(options.run_as, options.rank_open_files));
  supervisor_options.confinement.nice = options.rank_nice;
  errno = 0;
  if (const int own_nice = ::getpriority(PRIO_PROCESS, 0); errno == 0 && own_nice > options.nice) {
    log("runs at nice " + std::to_string(own_nice) + ", not its --nice " +
        std::to_string(options.nice) +
        ": lowering it needs root or CAP_SYS_NICE (clients' requests may wait behind ranks)");
  }
  if (!options.job_uids.empty()) {
    RM_ASSIGN_OR_RETURN(const UidRange range, parseUidRange(options.job_uids));
    RM_RETURN_IF_ERROR(checkUidRangeIsFree(range, hostUsers(), hostGroups()));
    if (::geteuid() != 0) {
      return Status(ErrorCode::kInvalidArgument,
                    "--job-uids needs the agent to run as root (only root can give each job a "
                    "user of its own); without it, every job's ranks share one user");
    }
    RankConfinement per_job = supervisor_options.confinement;
    per_job.processes = options.job_processes;
    RM_ASSIGN_OR_RETURN(identities,
                        JobIdentities::open(range, per_job, options.state_dir + "/job-uids"));
    // The uids this agent gave out before it stopped (ranks it left running, their files) are
    // ended, cleaned and taken back before any uid is given out again; nobody else's.
    for (const std::string& problem : identities->recover([&](const std::string& job) {
           const std::string dir = options.state_dir + "/jobs/" + job;
           return std::vector<std::string>{dir + "/checkpoints", dir + "/work"};
         })) {
      log(problem);
    }
    // Job directories a uid of the range still owns that the ledger does not name (an agent of
    // a version before it): taken back too.
    std::error_code walk;
    for (const auto& job : std::filesystem::directory_iterator(options.state_dir + "/jobs", walk)) {
      for (const char* theirs : {"/checkpoints", "/work"}) {
        const std::string d = job.path().string() + theirs;
        struct stat st {};
        if (::lstat(d.c_str(), &st) != 0 || st.st_uid < range.first || st.st_uid > range.last) {
          continue;
        }
        if (Status taken = chownTree(d, ::geteuid(), ::getegid()); !taken.isOk()) {
          identities->quarantine(st.st_uid);
          log("uid " + std::to_string(st.st_uid) + " is not given out again: " + taken.message());
        }
      }
    }
    supervisor_options.identities = identities.get();
    supervisor_options.confinement.switch_user = true;  // the directories' layout below
  }
  if (supervisor_options.confinement.switch_user) {
    // Ranks must reach their job's directory, and nothing else here: the state dir can be
    // passed through but not listed, and keys, authorized_keys and the journal stay the agent's.
    namespace fs = std::filesystem;
    const auto pass_through = fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec;
    fs::create_directories(options.state_dir + "/jobs", ec);
    fs::permissions(options.state_dir, pass_through, ec);
    fs::permissions(options.state_dir + "/jobs", pass_through, ec);
    fs::permissions(options.state_dir + "/journal", fs::perms::owner_all, ec);
    log(identities ? "each job's ranks run as a user of their own, uids " + options.job_uids +
                         ", at most " + std::to_string(options.job_processes) +
                         " processes and threads a job"
                   : "ranks run as user " + options.run_as +
                         " (every job's: jobs can signal each other's ranks and open each "
                         "other's files; --job-uids gives each job a user of its own)");
  } else if (::geteuid() == 0) {
    log("ranks run as root, with this agent's keys in reach: name a user with --run-as");
  }
  supervisor = std::make_unique<JobSupervisor>(supervisor_options, journal.get());
  // A per-job agent under Slurm saves no gang: its SIGTERM is the job's stop (scancel).
  ledger = std::make_unique<GangLedger>(options.exit_when_done ? "" : options.state_dir + "/gangs");
  const std::vector<SavedGang> saved = ledger->load([this](const std::string& line) { log(line); });
  std::set<std::string> resumed;
  for (const SavedGang& kept : saved) resumed.insert(kept.launch.job_id());
  const EarlierRun earlier = recordInterruptedJobs(*journal, options.name, resumed,
                                                   [this](const std::string& line) { log(line); });
  endLeftoversOfAnEarlierRun();

  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, sig);
  signal_fd = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (signal_fd < 0) return ioError("signalfd failed");

  context = zmq_ctx_new();
  // Two I/O threads: libzmq encrypts each reply whole (CURVE) on the thread of its connection,
  // and with one thread a client's inventory waited behind other clients' 16 MB log chunks.
  zmq_ctx_set(context, ZMQ_IO_THREADS, 2);
  // The ZAP handler must exist before the CURVE socket; ZAP_ENFORCE_DOMAIN fails closed anyway.
  zap = std::make_unique<ZapHandler>(context, authorizedKeysPath(options.state_dir),
                                     [this](const std::string& line) { log(line); });
  RM_RETURN_IF_ERROR(zap->start());
  rendezvous = std::make_unique<RendezvousService>(options.name, zap.get());
  gang_world = std::make_unique<AgentGangWorld>(
      AgentGangWorld::Parts{zap.get(), supervisor.get(), rendezvous.get(), journal.get(),
                            ledger.get(), [this](const std::string& line) { log(line); }});
  gang = std::make_unique<GangCoordinator>(GangCoordinator::Parts{
      options.name, gang_world.get(), [this](const std::string& line) { log(line); }});
  // Before the socket is bound: a peer's first message after the restart finds the gang.
  gang->resume(saved, earlier);
  router = zmq_socket(context, ZMQ_ROUTER);
  // Its pings are rarer than a client's: the leader of a job on N agents has N connections in,
  // and pinged each of them every second.
  RM_RETURN_IF_ERROR(net::applyCommonOptions(router, net::kServerHeartbeatMs));
  RM_RETURN_IF_ERROR(net::makeCurveServer(router, keys));
  // A larger frame closes the connection as soon as its header arrives, before it is held.
  // libzmq 4.3 cannot bound the frames of one message, which it holds whole before the agent
  // sees it: extra frames are at most this size each, and refused below.
  zmq_setsockopt(router, ZMQ_MAXMSGSIZE, &protocol::kMaxRequestBytes,
                 sizeof protocol::kMaxRequestBytes);
  int mandatory = 1;
  zmq_setsockopt(router, ZMQ_ROUTER_MANDATORY, &mandatory, sizeof mandatory);
  // The hubs of a job on N agents take N connections at once when it starts: with libzmq's
  // backlog of 100, 256 agents overflowed it, the dropped SYNs were retried 1-3 s later, and
  // connections that never came up within 4 s had their agents declared lost. The kernel caps
  // it at net.core.somaxconn (4096 by default).
  int backlog = 4096;
  zmq_setsockopt(router, ZMQ_BACKLOG, &backlog, sizeof backlog);
  // Replies a client has not read yet stay queued here: at most kQueuedRepliesPerClient of them
  // (each at most protocol::kMaxReplyBytes), beyond that reply() drops them.
  zmq_setsockopt(router, ZMQ_SNDHWM, &kQueuedRepliesPerClient, sizeof kQueuedRepliesPerClient);
  RM_ASSIGN_OR_RETURN(
      monitor,
      ConnectionMonitor::attach(context, router, [this](const std::string& line) { log(line); }));
  monitor->setOnDisconnected([this](int fd) { reply_budget.disconnected(fd); });
  if (zmq_bind(router, options.listen.c_str()) != 0) {
    return ioError("cannot listen on " + options.listen + ": " + zmq_strerror(zmq_errno()));
  }
  char bound[256];
  size_t bound_size = sizeof bound;
  zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, bound, &bound_size);
  endpoint = bound;
  started_at = unixSeconds();
  sampleHealth();
  return Status::ok();
}

// Nothing runs under this agent's name yet: whatever does was started by the ranks of an
// earlier agent process that died (kill -9, OOM, a crash). It is ended before any slot is
// offered. While this agent runs, it is also the subreaper of what its ranks start, so that
// orphans are its children (reaped) rather than init's.
void AgentServer::Impl::endLeftoversOfAnEarlierRun() {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  std::vector<pid_t> stuck;
  const int ended =
      killLeftovers({options.state_dir, {}, {}, false}, std::chrono::seconds(5), &stuck);
  if (ended > 0) {
    log("ended " + std::to_string(ended) +
        " process(es) left running by the ranks of an earlier agent process");
  }
  for (pid_t pid : stuck) log("process " + std::to_string(pid) + " outlived SIGKILL");
}

void AgentServer::Impl::sampleHealth() {
  last_health = sampler->sample();
  last_health_time = unixSeconds();
  proto::JournalRecord record;
  record.set_source("host:" + options.name);
  record.set_time(last_health_time);
  *record.mutable_health() = last_health;
  // A write failure keeps the sample pending; the loop logs every failed flush.
  (void)journal->append(record);
  if (last_health.gpus_size() > 0) {  // a CPU host has no GPU fault to tell its jobs of
    for (proto::JournalRecord& fault : gpu_faults->records(
             last_health, sampler->gpus(), supervisor->runningRanks(), last_health_time)) {
      (void)journal->append(fault);
    }
  }
  next_health = Clock::now() + std::chrono::milliseconds(options.health_interval_ms);
}

// Why a reply is refused when this key's clients have not read what they were sent.
std::string unreadRepliesRefusal() {
  return "too many replies unread by this key's connections (the agent holds at most " +
         std::to_string(kUnreadRepliesPerKey >> 20) + " MiB of them per key, " +
         std::to_string(kUnreadRepliesInAll >> 20) +
         " MiB in all): read them, or use fewer connections";
}

void AgentServer::Impl::reply(const std::string& identity, proto::Envelope& envelope) {
  std::string frame = protocol::encode(envelope);
  if (!reply_budget.admit(identity, frame.size())) {
    // This key's clients have not read what they were sent: an error instead of more.
    const std::string why = unreadRepliesRefusal();
    bad_requests.refused("refused a reply of " + std::to_string(frame.size() >> 20) +
                         " MiB: " + why);
    proto::Envelope error = protocol::makeError(envelope.request_id(),
                                                ErrorCode::kResourceExhausted, why, options.name);
    frame = protocol::encode(error);
    static_cast<void>(reply_budget.admit(identity, frame.size()));  // small: always admitted
  }
  if (zmq_send(router, identity.data(), identity.size(), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
    // The client is gone (ROUTER_MANDATORY), or has not read its last kQueuedRepliesPerClient
    // replies: this one is dropped rather than held, and so are its next requests for a while.
    const auto now = Clock::now();
    if (unwritable_until.size() > 4096) {
      std::erase_if(unwritable_until, [&](const auto& entry) { return entry.second <= now; });
    }
    unwritable_until[identity] = now + kUnwritablePause;
    return;
  }
  zmq_send(router, frame.data(), frame.size(), ZMQ_DONTWAIT);
}

void AgentServer::Impl::replyError(const std::string& identity, uint64_t request_id,
                                   const Status& status) {
  proto::Envelope envelope =
      protocol::makeError(request_id, status.code(), status.message(), options.name);
  reply(identity, envelope);
}

// Everything waiting is taken in first and the cheap requests answered at once. Those that take
// time (takesTime: reads of megabytes, launches) are queued by key and served one at a time,
// each key in turn (FairQueue), with the socket drained again between them: a key flooding the
// agent with reads or submits delays another key's request by one of its own at most, however
// many connections it has. At most kSlowRequestsPerTurn are served before rank output, signals
// and timers get their turn (the loop comes back at once while any wait).
void AgentServer::Impl::onSocketReadable() {
  int received = 0;  // bounded, so that rank output and signals are served between bursts
  for (int served = 0;; ++served) {
    received += takeIn(kMessagesPerTurn - received);
    if (served >= kSlowRequestsPerTurn) return;
    std::optional<Request> next = slow_requests.pop();
    if (!next) return;
    handle(next->identity, next->user, *next->envelope, next->source_fd);
  }
}

int AgentServer::Impl::takeIn(int most) {
  int received = 0;
  for (Request request; received < most && receive(&request); request = Request{}) {
    ++received;
    if (!request.envelope) continue;
    if (!takesTime(*request.envelope)) {
      handle(request.identity, request.user, *request.envelope, request.source_fd);
    } else if (!slow_requests.push(request.user, std::move(request))) {
      const std::string why = std::to_string(kSlowRequestsPerKey) +
                              " reads and launches of this key wait already: send fewer at once";
      bad_requests.refused("refused a request: " + why);
      replyError(request.identity, request.envelope->request_id(),
                 Status(ErrorCode::kResourceExhausted, why));
    }
  }
  return received;
}

bool AgentServer::Impl::receive(Request* request) {
  std::vector<std::string> frames;
  bool more = true;
  while (more) {
    zmq_msg_t frame;
    zmq_msg_init(&frame);
    if (zmq_msg_recv(&frame, router, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&frame);
      return false;
    }
    more = zmq_msg_more(&frame);
    if (const char* id = zmq_msg_gets(&frame, "User-Id")) request->user = id;
    if (frames.size() == 1) request->source_fd = zmq_msg_get(&frame, ZMQ_SRCFD);
    // Keep at most identity + payload; a longer message is drained and refused below.
    if (frames.size() < 3) {
      frames.emplace_back(static_cast<const char*>(zmq_msg_data(&frame)), zmq_msg_size(&frame));
    }
    zmq_msg_close(&frame);
  }
  if (frames.size() != 2) {
    bad_requests.refused("dropped a message of " + std::to_string(frames.size()) +
                         " frame(s) (expected one payload frame)");
    if (!frames.empty()) {
      replyError(frames[0], 0, protocolError("expected exactly one frame per request"));
    }
    return true;
  }
  if (auto paused = unwritable_until.find(frames[0]); paused != unwritable_until.end()) {
    if (Clock::now() < paused->second) return true;
    unwritable_until.erase(paused);
  }
  auto decoded = protocol::decode(frames[1].data(), frames[1].size());
  if (!decoded.isOk()) {
    // Echo the request id when the frame parses at all, so the client can match the error.
    proto::Envelope partial;
    uint64_t request_id = partial.ParseFromString(frames[1]) ? partial.request_id() : 0;
    bad_requests.refused("bad request: " + decoded.status().message());
    replyError(frames[0], request_id, decoded.status());
    return true;
  }
  request->identity = std::move(frames[0]);
  request->envelope = std::move(*decoded);
  return true;
}

Status AgentServer::Impl::authorize(const std::string& user, const proto::Envelope& request) const {
  const bool store_request = request.has_rendezvous_set() || request.has_rendezvous_get();
  if (user.rfind("client:", 0) == 0) {
    const std::string key = user.substr(7);
    const std::optional<security::Role> role = zap->roleOf(key);
    if (!role) return Status(ErrorCode::kUnauthorized, "this key was removed from authorized_keys");
    if (store_request) {
      return Status(ErrorCode::kUnauthorized, "a job's rendezvous store is for its ranks only");
    }
    return *role == security::Role::kAdmin ? Status::ok() : authorizeUserRole(key, request);
  }
  const std::string asked = request.has_rendezvous_set()   ? request.rendezvous_set().job_id()
                            : request.has_rendezvous_get() ? request.rendezvous_get().job_id()
                            : request.has_gang()           ? request.gang().job_id()
                                                           : "";
  if (user.rfind("job:", 0) == 0) {  // a job's own key: its agents' gang messages
    const std::string job = user.substr(4);
    if (request.has_gang() && asked == job) return Status::ok();
    return Status(ErrorCode::kUnauthorized, "this key may only send gang messages of job " + job);
  }
  if (auto ranks = parseAttemptUser(user)) {  // the ranks of one attempt: its rendezvous store
    if (!store_request || asked != ranks->job) {
      return Status(ErrorCode::kUnauthorized,
                    "this key may only use the rendezvous store of job " + ranks->job);
    }
    if (!rendezvous->admits(ranks->job, ranks->attempt)) {
      return Status(ErrorCode::kUnauthorized, "attempt " + std::to_string(ranks->attempt) +
                                                  " of job " + ranks->job +
                                                  " is over: its credential opens nothing");
    }
    return Status::ok();
  }
  return Status(ErrorCode::kUnauthorized, "unknown peer");
}

// A key with role user asks for inventory, its journal (answered with its own jobs and the
// host's health), new jobs, and what concerns its own jobs.
Status AgentServer::Impl::authorizeUserRole(const std::string& key,
                                            const proto::Envelope& request) const {
  std::string job;
  switch (request.body_case()) {
    case proto::Envelope::kInventoryRequest:
    case proto::Envelope::kReadJournal:
      return Status::ok();
    case proto::Envelope::kPrepareJob:
      job = request.prepare_job().launch().job_id();
      break;
    case proto::Envelope::kLaunchJob:
      job = request.launch_job().launch().job_id();
      break;
    case proto::Envelope::kStopJob:
      job = request.stop_job().job_id();
      break;
    case proto::Envelope::kRestartJob:
      job = request.restart_job().job_id();
      break;
    case proto::Envelope::kReadLog:
      job = request.read_log().job_id();
      break;
    default:
      return Status(ErrorCode::kUnauthorized, std::string("a key with role user may not send '") +
                                                  protocol::bodyName(request) + "' requests");
  }
  const std::optional<std::string> owner = owners.ownerOf(job);
  const bool submits = request.has_prepare_job() || request.has_launch_job();
  if (owner ? *owner == key : submits) return Status::ok();
  // The same answer whether the job is another key's or does not exist: nothing is learnt of
  // other keys' jobs.
  return notFound("agent '" + options.name + "' has no job '" + job + "' of this key");
}

JobFilter AgentServer::Impl::jobFilter(const std::string& user) const {
  if (user.rfind("client:", 0) != 0) return {};
  std::string key = user.substr(7);
  if (zap->roleOf(key) == security::Role::kAdmin) return {};
  return [this, key](const std::string& job) { return job.empty() || owners.ownerOf(job) == key; };
}

void AgentServer::Impl::handle(const std::string& identity, const std::string& user,
                               const proto::Envelope& request, int source_fd) {
  proto::Envelope response;
  response.set_request_id(request.request_id());
  connections.seen(user, source_fd);
  reply_budget.noteRequest(identity, user, source_fd);
  if (Status allowed = authorize(user, request); !allowed.isOk()) {
    bad_requests.refused("refused a '" + std::string(protocol::bodyName(request)) +
                         "' request from " + (user.empty() ? "an unknown peer" : user) + ": " +
                         allowed.message());
    return replyError(identity, request.request_id(), allowed);
  }
  switch (request.body_case()) {
    case proto::Envelope::kInventoryRequest:
      response = answerInventory(request, jobFilter(user));
      break;
    case proto::Envelope::kPrepareJob: {
      auto port =
          prepare(request.prepare_job().launch(), request.prepare_job().reserve_master_port());
      if (!port.isOk()) return replyError(identity, request.request_id(), port.status());
      response.mutable_prepare_reply()->set_master_port(*port);
      break;
    }
    case proto::Envelope::kLaunchJob: {
      proto::JobLaunch launch = request.launch_job().launch();
      launch.set_owner(ownerKey(user));
      auto pids = this->launch(launch);
      if (!pids.isOk()) return replyError(identity, request.request_id(), pids.status());
      for (int pid : *pids) response.mutable_launch_reply()->add_pids(pid);
      break;
    }
    case proto::Envelope::kStopJob: {
      if (request.stop_job().kill_one_rank()) {
        const proto::StopJob& drill = request.stop_job();
        const std::string by = ownerKey(user).substr(0, 8);
        Status killed =
            supervisor->killRank(drill.job_id(), static_cast<int>(drill.rank()),
                                 "a crash drill asked for by client key " + by +
                                     "... (ringmasterctl kill, or the app's rank menu)");
        if (!killed.isOk()) return replyError(identity, request.request_id(), killed);
        log("job " + drill.job_id() + ": rank " + std::to_string(drill.rank()) +
            " killed on request of client key " + by + "...");
        response.mutable_stop_reply()->set_ranks_signalled(1);
        break;
      }
      // A job between attempts has no ranks here, but its gang still stops the next one.
      const bool in_gang = gang->stopRequested(request.stop_job().job_id());
      auto signalled = supervisor->stop(request.stop_job().job_id(),
                                        std::chrono::milliseconds(request.stop_job().grace_ms()));
      if (!signalled.isOk() && in_gang) signalled = 0;
      if (!signalled.isOk()) return replyError(identity, request.request_id(), signalled.status());
      log("job " + request.stop_job().job_id() + ": stop requested");
      response.mutable_stop_reply()->set_ranks_signalled(*signalled);
      break;
    }
    case proto::Envelope::kRendezvousSet:
      response = rendezvous->set(request);
      break;
    case proto::Envelope::kGang:
      response = gang->handle(request);
      break;
    case proto::Envelope::kRestartJob: {
      if (Status asked = gang->restartRequested(request.restart_job()); !asked.isOk()) {
        return replyError(identity, request.request_id(), asked);
      }
      log("job " + request.restart_job().job_id() + ": restart requested");
      response.mutable_ack();
      break;
    }
    case proto::Envelope::kReadJournal:
    case proto::Envelope::kReadLog:
    case proto::Envelope::kRendezvousGet: {
      // A read whose reply this key could not be sent is refused before it reads anything:
      // reading and encoding a 16 MB log chunk only to refuse it held up every other client.
      if (const uint64_t most = mostReplyBytes(request); !reply_budget.wouldAdmit(identity, most)) {
        bad_requests.refused("refused a read of up to " + std::to_string(most >> 20) +
                             " MiB: " + unreadRepliesRefusal());
        return replyError(identity, request.request_id(),
                          Status(ErrorCode::kResourceExhausted, unreadRepliesRefusal()));
      }
      std::optional<proto::Envelope> answer = answerWaiting(user, request, false);
      if (!answer) {
        const uint32_t wait = request.has_read_journal() ? request.read_journal().wait_ms()
                              : request.has_read_log()   ? request.read_log().wait_ms()
                                                         : request.rendezvous_get().wait_ms();
        parked.park(identity, user, request, wait);
        return;
      }
      response = std::move(*answer);
      break;
    }
    default:
      return replyError(
          identity, request.request_id(),
          Status(ErrorCode::kUnimplemented, std::string("agents do not accept '") +
                                                protocol::bodyName(request) + "' requests"));
  }
  reply(identity, response);
}

Result<uint32_t> AgentServer::Impl::prepare(const proto::JobLaunch& launch,
                                            bool reserve_master_port) {
  RM_ASSIGN_OR_RETURN(uint32_t port, supervisor->prepare(launch, reserve_master_port));
  rendezvous->host(launch);
  gang->expect(launch);
  return port;
}

Result<std::vector<int>> AgentServer::Impl::launch(const proto::JobLaunch& launch) {
  rendezvous->host(launch);
  gang->connectEarly(launch);
  auto pids = supervisor->launch(launch);
  if (!pids.isOk()) {
    log("launch of job " + launch.job_id() + " failed: " + pids.status().message());
    return pids.status();
  }
  launched_any = true;
  owners.note(launch.job_id(), launch.owner());
  log("job " + launch.job_id() + " attempt " + std::to_string(launch.attempt()) + ": started " +
      std::to_string(pids->size()) + " rank(s)");
  gang->join(launch);
  return pids;
}

bool AgentServer::Impl::done() const {
  return options.exit_when_done && launched_any && !supervisor->busy() && gang->idle();
}

proto::Envelope AgentServer::Impl::answerInventory(const proto::Envelope& request,
                                                   const JobFilter& visible) const {
  proto::Envelope response;
  response.set_request_id(request.request_id());
  proto::Inventory* inv = response.mutable_inventory();
  *inv = inventory;
  inv->set_agent_name(options.name);
  inv->set_slots(supervisor->slotsTotal());
  inv->set_slots_free(supervisor->slotsFree());
  *inv->mutable_health() = last_health;
  inv->set_health_time(last_health_time);
  inv->set_journal_id(journal->id());
  inv->set_journal_last_seq(journal->flushedSeq());
  inv->set_journal_error(journal->writeError());
  inv->set_version(RINGMASTER_VERSION);
  inv->set_started_at(started_at);
  inv->set_state_dir(options.state_dir);
  struct statvfs disk {};
  if (::statvfs(options.state_dir.c_str(), &disk) == 0) {
    inv->set_state_dir_free_bytes(static_cast<uint64_t>(disk.f_bavail) * disk.f_frsize);
    inv->set_state_dir_total_bytes(static_cast<uint64_t>(disk.f_blocks) * disk.f_frsize);
  }
  inv->set_agent_time(unixSeconds());
  for (const auto& id : supervisor->runningJobs()) {
    if (!visible || visible(id)) inv->add_running_jobs(id);
  }
  for (auto& rank : supervisor->runningRanks()) {
    if (!visible || visible(rank.job())) *inv->add_running_ranks() = std::move(rank);
  }
  return response;
}

std::optional<proto::Envelope> AgentServer::Impl::answerWaiting(const std::string& user,
                                                                const proto::Envelope& request,
                                                                bool final) {
  if (request.has_read_journal()) {
    return answerJournalRead(*journal, request, final, options.name, jobFilter(user));
  }
  if (request.has_read_log()) return answerLogRead(*supervisor, request, final, options.name);
  return rendezvous->get(request, final);
}

Status AgentServer::Impl::loop() {
  std::vector<zmq_pollitem_t> items;
  while (true) {
    // Timers first: they may close sockets to other agents, which must not be polled then.
    auto now = Clock::now();
    auto wake =
        parked.nextDeadline(std::min({next_health, supervisor->onTimer(now), gang->onTimer(now)}));
    // A gang the timers just dropped may have been this agent's last work: exit now, not after
    // a second's poll (a per-job agent under Slurm holds its node until it exits).
    if (done()) wake = now;
    items.clear();
    items.push_back({router, 0, ZMQ_POLLIN, 0});
    items.push_back({nullptr, signal_fd, ZMQ_POLLIN, 0});
    items.push_back({monitor->socket(), 0, ZMQ_POLLIN, 0});
    for (const zmq_pollitem_t& item : gang->pollItems()) items.push_back(item);
    const size_t first_output = items.size();
    for (int fd : supervisor->outputFds()) items.push_back({nullptr, fd, ZMQ_POLLIN, 0});
    long timeout_ms = std::max<long>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count() + 1);
    // What the timers journaled just now (a job's outcome, a restart) is flushed and answered to
    // the long polls at the end of this turn, not after a millisecond's poll; samples when their
    // delay is over (unless the journal cannot be written: then the records wait, and so does
    // the loop).
    if (journal->unflushed() && journal->writeError().empty()) {
      const long until_due =
          std::chrono::ceil<std::chrono::milliseconds>(journal->flushDueAt() - now).count();
      timeout_ms = std::clamp(until_due, 0L, timeout_ms);
    }
    if (!slow_requests.empty()) timeout_ms = 0;  // their turn comes after the other work
    if (zmq_poll(items.data(), static_cast<int>(items.size()), timeout_ms) < 0 &&
        zmq_errno() != EINTR) {
      return ioError(std::string("zmq_poll: ") + zmq_strerror(zmq_errno()));
    }
    for (size_t i = first_output; i < items.size(); ++i) {
      if (items[i].revents & (ZMQ_POLLIN | ZMQ_POLLERR)) supervisor->onOutputReadable(items[i].fd);
    }
    if (items[1].revents & ZMQ_POLLIN) {
      signalfd_siginfo info;
      while (::read(signal_fd, &info, sizeof info) == sizeof info) {
        if (info.ssi_signo == SIGTERM || info.ssi_signo == SIGINT || info.ssi_signo == SIGHUP) {
          stopping = true;
        }
      }
      // When stopping, stopAll() reaps the ranks once they count as stopped: a rank that got the
      // same SIGTERM (scancel signals every process of a Slurm step) and exited 0 was stopped,
      // not done.
      if (!stopping) supervisor->reapChildren();
    }
    if (items[2].revents & ZMQ_POLLIN) monitor->onReadable();
    std::vector<void*> writable;
    for (size_t i = 3; i < first_output; ++i) {
      if (items[i].revents & ZMQ_POLLOUT) writable.push_back(items[i].socket);
    }
    if (!writable.empty()) gang->onWritable(writable);
    if (std::any_of(items.begin() + 3, items.begin() + static_cast<long>(first_output),
                    [](const zmq_pollitem_t& item) { return item.revents & ZMQ_POLLIN; })) {
      gang->onReadable();
    }
    if (done()) {
      log("its jobs are over: exiting");
      if (Status flushed = journal->flush(); !flushed.isOk()) log(flushed.message());
      return Status::ok();
    }
    if (stopping) {
      log("shutting down: stopping every rank");
      if (!options.exit_when_done) gang->shutDown();  // under Slurm, SIGTERM is the job's stop
      supervisor->stopAll(std::chrono::seconds(5));
      if (Status flushed = journal->flush(); !flushed.isOk()) log(flushed.message());
      return Status::ok();
    }
    if (Clock::now() >= next_health) {
      sampleHealth();
      closeRevokedConnections();
    }
    if ((items[0].revents & ZMQ_POLLIN) || !slow_requests.empty()) onSocketReadable();
    gang->onSupervisorEvents(supervisor->takeEvents());
    // What is due becomes visible to readers before anyone is answered.
    if (journal->unflushed() && Clock::now() >= journal->flushDueAt()) {
      if (Status flushed = journal->flush(); !flushed.isOk()) log(flushed.message());
    }
    // Long polls are retried only when something new exists; otherwise only expired ones.
    bool journal_grew = journal->flushedSeq() != answered_up_to;
    answered_up_to = journal->flushedSeq();
    bool logs_grew = supervisor->takeActivity();
    bool rendezvous_changed = rendezvous->takeChanged();
    parked.retry(
        !(journal_grew || logs_grew || rendezvous_changed),
        [this](const std::string& user, const proto::Envelope& request, bool final) {
          return answerWaiting(user, request, final);
        },
        [this](const std::string& identity, proto::Envelope& answer) { reply(identity, answer); },
        // 32 followers' long polls answered in one pass held another key's request behind them.
        [this] { takeIn(kMessagesBetweenAnswers); });
    rendezvous->endAttempts([this](const std::string& job) { return supervisor->isActive(job); });
    rendezvous->dropInactive(
        [this](const std::string& job) { return supervisor->isActive(job) || gang->manages(job); });
  }
}

bool AgentServer::Impl::revoked(const std::string& user) const {
  if (user.rfind("client:", 0) == 0) return !zap->roleOf(user.substr(7));
  const auto ranks = parseAttemptUser(user);
  return ranks && !rendezvous->admits(ranks->job, ranks->attempt);
}

void AgentServer::Impl::closeRevokedConnections() {
  connections.closeWhere(
      [this](const std::string& user) { return revoked(user); },
      [this](const std::string& user, size_t count) {
        log("closed " + std::to_string(count) + " connection(s) of " + user +
            (user.rfind("client:", 0) == 0 ? ", no longer in authorized_keys" : ", which is over"));
      });
}

AgentServer::AgentServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AgentServer::~AgentServer() = default;

Result<std::unique_ptr<AgentServer>> AgentServer::create(AgentOptions options) {
  auto impl = std::make_unique<Impl>();
  if (options.state_dir.empty()) return invalidArgument("--state-dir is required");
  if (options.name.empty()) options.name = hostName();
  impl->options = std::move(options);
  RM_RETURN_IF_ERROR(impl->start());
  return std::unique_ptr<AgentServer>(new AgentServer(std::move(impl)));
}

const std::string& AgentServer::name() const { return impl_->options.name; }
const std::string& AgentServer::endpoint() const { return impl_->endpoint; }
const std::string& AgentServer::publicKey() const { return impl_->keys.public_key; }

Status AgentServer::run() { return impl_->loop(); }
bool AgentServer::stoppedBySignal() const { return impl_->stopping; }

Result<uint32_t> AgentServer::prepare(const proto::JobLaunch& launch, bool reserve_master_port) {
  return impl_->prepare(launch, reserve_master_port);
}

Result<std::vector<int>> AgentServer::launch(const proto::JobLaunch& launch) {
  return impl_->launch(launch);
}

}  // namespace ringmaster::agent
