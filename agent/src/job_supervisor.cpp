#include "job_supervisor.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "env_contract.h"
#include "gang_policy.h"
#include "launchers/launcher.h"
#include "launchers/python_entry.h"
#include "leftovers.h"
#include "rank_process.h"
#include "rank_watch.h"
#include "ringmaster/comm/shm_segments.h"
#include "ringmaster/job/rank_phase.h"
#include "torch_error_file.h"

namespace ringmaster::agent {
namespace {

// A file only its owner reads (mode 0600 from its creation), for a secret handed to ranks.
Status writeSecretFile(const std::string& path, const std::string& secret) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return ioError("cannot write " + path + ": " + std::strerror(errno));
  const bool written =
      ::write(fd, secret.data(), secret.size()) == static_cast<ssize_t>(secret.size());
  ::close(fd);
  return written ? Status::ok() : ioError("cannot write " + path + ": " + std::strerror(errno));
}

// A file the agent writes for a job's ranks to read, in a directory only the agent writes (so
// no rank could have planted a link there); group `gid` may read it.
Status writeAgentFile(const std::string& path, const std::string& text, gid_t gid) {
  ::unlink(path.c_str());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (fd < 0) return ioError("cannot write " + path + ": " + std::strerror(errno));
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                       ::fchown(fd, ::geteuid(), gid) == 0;
  const int error = errno;
  ::close(fd);
  return written ? Status::ok() : ioError("cannot write " + path + ": " + std::strerror(error));
}

// A job's directory when its ranks run as another user than the agent: the agent's own (ranks
// pass through, list nothing), its attempt directory the agent's with the ranks' group allowed
// through, and only its checkpoints and default work directory the ranks' (0700). What the
// agent writes there (spec, logs, the secret, phase files) no rank can replace with a link.
Status prepareJobDirs(const RankConfinement& ranks, const std::string& dir,
                      const std::string& attempt_dir, const std::vector<std::string>& theirs) {
  if (!ranks.switch_user) return Status::ok();
  const uid_t agent = ::geteuid();
  auto own = [&](const std::string& path, uid_t uid, gid_t gid, mode_t mode) {
    return ::lchown(path.c_str(), uid, gid) == 0 && ::chmod(path.c_str(), mode) == 0
               ? Status::ok()
               : ioError("cannot set the owner of " + path + ": " + std::strerror(errno));
  };
  RM_RETURN_IF_ERROR(own(dir, agent, ::getegid(), 0711));
  RM_RETURN_IF_ERROR(own(attempt_dir, agent, ranks.gid, 0710));
  for (const std::string& d : theirs) {
    RM_RETURN_IF_ERROR(chownTree(d, ranks.uid, ranks.gid));
    RM_RETURN_IF_ERROR(own(d, ranks.uid, ranks.gid, 0700));
  }
  return Status::ok();
}

constexpr size_t kMaxLineBytes = 64 * 1024;  // longer lines are logged but never metrics
constexpr size_t kMaxJobBytes = 4u << 20;    // spec + command line, journaled in JobAccepted

std::vector<std::string> withJobEnv(const std::vector<std::string>& base,
                                    const proto::JobLaunch& launch) {
  std::vector<std::string> env = base;
  for (const auto& var : launch.env()) env.push_back(var.name() + "=" + var.value());
  return env;
}

// A journal record about `job`, keyed like every other: (job, attempt, source, seq).
proto::JournalRecord journalRecord(const std::string& job, uint32_t attempt,
                                   const std::string& source) {
  proto::JournalRecord record;
  record.set_job(job);
  record.set_attempt(attempt);
  record.set_source(source);
  return record;
}

}  // namespace

namespace {

bool portIsFree(uint32_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<uint16_t>(port));
  const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return free;
}

// The lowest port the kernel gives outgoing connections (32768 unless configured).
uint32_t ephemeralLow() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  uint32_t low = 32768;
  in >> low;
  return low;
}

}  // namespace

Result<uint32_t> reserveFreePort(uint32_t count) {
  constexpr uint32_t kLowest = 10000;  // clear of the well-known and registered services below
  count = std::max<uint32_t>(count, 1);
  const uint32_t high = ephemeralLow();
  if (high > kLowest + count) {
    std::random_device random;
    for (int attempt = 0; attempt < 256; ++attempt) {
      const uint32_t first = kLowest + random() % (high - kLowest - count);
      uint32_t ok = 0;
      while (ok < count && portIsFree(first + ok)) ++ok;
      if (ok == count) return first;
    }
  }
  // The random tries all met a taken port: every block below the ephemeral range, in order.
  for (uint32_t first = kLowest; first + count <= high; ++first) {
    uint32_t ok = 0;
    while (ok < count && portIsFree(first + ok)) ++ok;
    if (ok == count) return first;
    first += ok;  // past the taken port
  }
  // A block in the ephemeral range would collide with the kernel's own choices for outgoing
  // connections sooner or later: refused, naming the way out.
  if (count > 1) {
    return Status(ErrorCode::kResourceExhausted,
                  "no " + std::to_string(count) + " consecutive free ports between " +
                      std::to_string(kLowest) + " and " + std::to_string(high - 1) +
                      " (the kernel's ephemeral ports start at " + std::to_string(high) +
                      "): free some, or lower net.ipv4.ip_local_port_range's start");
  }
  // One port: any the kernel calls free.
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ioError(std::string("socket: ") + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(fd);
    return ioError(std::string("cannot find a free port: ") + std::strerror(errno));
  }
  ::close(fd);
  return static_cast<uint32_t>(ntohs(address.sin_port));
}

bool isValidJobId(const std::string& job_id) {
  if (job_id.empty() || job_id.size() > 128 || job_id == "." || job_id == "..") return false;
  return std::all_of(job_id.begin(), job_id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

JobSupervisor::JobSupervisor(SupervisorOptions options, Journal* journal)
    : options_(std::move(options)), journal_(journal) {}

JobSupervisor::~JobSupervisor() {
  for (auto& [id, job] : jobs_) {
    for (auto& rank : job.ranks) {
      if (!rank.exited) ::kill(-rank.pid, SIGKILL);
      for (int fd : {rank.output_fd, rank.stderr_fd, rank.log_fd}) {
        if (fd >= 0) ::close(fd);
      }
    }
  }
}

std::vector<std::string> JobSupervisor::rankArgv(const Launcher& launcher,
                                                 const proto::JobLaunch& launch,
                                                 const proto::RankAssignment& rank) const {
  return launcher.argv(launch, rank, {options_.worker_path, jobDir(launch.job_id())});
}

std::string JobSupervisor::jobDir(const std::string& job_id) const {
  return options_.state_dir + "/jobs/" + job_id;
}

std::string JobSupervisor::workdirOf(const proto::JobLaunch& launch) const {
  return launch.workdir().empty() ? jobDir(launch.job_id()) + "/work" : launch.workdir();
}

std::string JobSupervisor::logPath(const std::string& job_id, uint32_t attempt, int rank) const {
  return jobDir(job_id) + "/attempt-" + std::to_string(attempt) + "/rank-" + std::to_string(rank) +
         ".log";
}

int JobSupervisor::slotsFree() const {
  int used = 0;
  for (const auto& [id, job] : jobs_) {
    for (const auto& rank : job.ranks) used += rank.exited ? 0 : 1;
  }
  for (const auto& [id, reservation] : reservations_) used += reservation.slots;
  return std::max(0, options_.slots - used);
}

std::vector<std::string> JobSupervisor::runningJobs() const {
  std::vector<std::string> ids;
  for (const auto& [id, job] : jobs_) ids.push_back(id);
  return ids;
}

std::vector<proto::RunningRank> JobSupervisor::runningRanks() const {
  std::vector<proto::RunningRank> out;
  for (const auto& [id, job] : jobs_) {
    for (const Rank& rank : job.ranks) {
      if (rank.exited) continue;
      proto::RunningRank& r = out.emplace_back();
      r.set_job(id);
      r.set_rank(rank.rank);
      r.set_pid(rank.pid);
      r.set_device(rank.device);
      r.set_attempt(job.launch.attempt());
      r.set_started_at(rank.started_at);
    }
  }
  return out;
}

bool JobSupervisor::takeActivity() {
  bool was = activity_;
  activity_ = false;
  return was;
}

std::vector<AttemptEvent> JobSupervisor::takeEvents() {
  std::vector<AttemptEvent> events;
  events.swap(events_);
  return events;
}

// Only the first failure of an attempt is news: the ranks stopped after it fail as a consequence.
void JobSupervisor::reportFailure(Job& job, const Rank& rank, const proto::RankExited& exited) {
  if (job.any_failed) return;
  const std::string& id = job.launch.job_id();
  proto::JobFailure failure = describeRankFailure(exited, options_.agent_name, rank.last_step,
                                                  logPath(id, job.launch.attempt(), rank.rank));
  // A crash drill restarts the job as a crash would, but says nothing of the host: the history's
  // failure rates and the hardware report leave kind "drill" out.
  if (!rank.killed_because.empty() && failure.kind() == "signalled") failure.set_kind("drill");
  events_.push_back({id, job.launch.attempt(), std::move(failure), std::nullopt});
}

std::vector<proto::RankProgress> JobSupervisor::progress(const std::string& job_id) {
  std::vector<proto::RankProgress> out;
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return out;
  const auto now = Clock::now();
  for (Rank& rank : it->second.ranks) {
    if (rank.exited) continue;
    const ProcSample sample = sampleProc(rank.pid);
    proto::RankProgress p;
    p.set_rank(rank.rank);
    p.set_step(rank.last_step);
    p.set_idle_seconds(std::chrono::duration<double>(now - rank.last_progress).count());
    p.set_activity(activityOf(sample, rank.cpu_ticks,
                              std::chrono::duration<double>(now - rank.cpu_sampled).count()));
    // Pauses (evaluations, checkpoints) set the timeout only while the rank may be in one: a
    // native rank says its phase; of another nothing is known.
    bool may_pause = true;
    if (!rank.phase_file.empty()) {
      if (auto phase = job::readPhase(rank.phase_file); phase.isOk()) {
        p.set_phase(job::phaseName(phase->phase));
        p.set_phase_seconds(phase->seconds);
        p.set_phase_step(static_cast<int64_t>(phase->step));
        may_pause = phase->phase == job::RankPhase::kEvaluation ||
                    phase->phase == job::RankPhase::kCheckpoint;
      }
    }
    p.set_slowest_step_seconds(may_pause ? std::max(rank.slowest_step, rank.slowest_pause)
                                         : rank.slowest_step);
    rank.cpu_ticks = sample.cpu_ticks;
    rank.cpu_sampled = now;
    out.push_back(std::move(p));
  }
  return out;
}

Status JobSupervisor::journal(proto::JournalRecord& record) {
  auto appended = journal_->append(record);
  if (appended.isOk()) activity_ = true;
  return appended.status();
}

void JobSupervisor::appendRecord(proto::JournalRecord& record) {
  // A write failure keeps the record pending in the journal (written at the next flush that
  // works), and the agent's loop logs every failed flush: nothing for this caller to undo.
  (void)journal(record);
}

// This agent's share of the job's device plan, from its own GPUs: the client planned the whole
// job already, but only the agent knows (and enforces) which GPUs it may give out.
Result<job::DevicePlan> JobSupervisor::devicePlan(const proto::JobLaunch& launch) const {
  job::DeviceRequest request;
  request.launcher = launcherFor(launch.launcher())->kind();
  request.backend = job::parseBackend(launch.backend()).value_or(job::Backend::kAuto);
  request.cpu_reason = launch.cpu_reason();
  for (const proto::EnvVar& var : launch.env()) {
    if (var.name() == "CUDA_VISIBLE_DEVICES") request.job_visible_devices = var.value();
  }
  return job::planDevices(request, {{options_.agent_name, options_.gpus, launch.ranks_size()}});
}

Status JobSupervisor::validate(const proto::JobLaunch& launch) const {
  if (!isValidJobId(launch.job_id())) {
    return invalidArgument("job id '" + launch.job_id() + "' is not valid ([A-Za-z0-9._-]{1,128})");
  }
  if (launch.attempt() < 1) return invalidArgument("attempt must be >= 1");
  const Launcher* launcher = launcherFor(launch.launcher());
  if (launcher == nullptr) {
    return invalidArgument("unknown launcher " + std::to_string(launch.launcher()) + " (agent '" +
                           options_.agent_name + "' may be older than the client)");
  }
  if (launch.ranks().empty()) return invalidArgument("no ranks assigned to this agent");
  // The job is journaled whole (JobAccepted holds its spec and command line): one that could
  // not be is refused now, at submission, rather than run without its record.
  size_t journaled = launch.spec_yaml().size() + launch.native_yaml().size();
  for (const auto& arg : launch.argv()) journaled += arg.size();
  if (journaled > kMaxJobBytes) {
    return invalidArgument("the job's spec and command line take " +
                           std::to_string(journaled >> 10) + " KiB, more than the " +
                           std::to_string(kMaxJobBytes >> 20) +
                           " MiB a job may take in the journal: pass data through files");
  }
  for (const proto::EnvVar& var : launch.env()) {
    if (!options_.allow_loader_env && (var.name() == "LD_PRELOAD" || var.name() == "LD_AUDIT" ||
                                       var.name() == "LD_LIBRARY_PATH")) {
      return Status(ErrorCode::kInvalidArgument,
                    "env " + var.name() + " changes how the job's programs are loaded; agent '" +
                        options_.agent_name +
                        "' does not allow it (start the agent with --allow-loader-env)");
    }
  }
  if (launch.world_size() < launch.ranks_size()) {
    return invalidArgument("world_size is smaller than the ranks assigned here");
  }
  if (!launch.backend().empty() && !job::parseBackend(launch.backend())) {
    return invalidArgument("unknown backend '" + launch.backend() + "' (auto, nccl or gloo)");
  }
  RM_RETURN_IF_ERROR(launcher->validate(launch));
  RM_RETURN_IF_ERROR(devicePlan(launch).status());
  std::set<int> ranks;
  for (const auto& rank : launch.ranks()) {
    if (rank.rank() < 0 || rank.rank() >= launch.world_size()) {
      return invalidArgument("rank " + std::to_string(rank.rank()) + " is outside world_size " +
                             std::to_string(launch.world_size()));
    }
    if (!ranks.insert(rank.rank()).second) {
      return invalidArgument("rank " + std::to_string(rank.rank()) + " is assigned twice");
    }
  }
  if (!launch.workdir().empty()) {
    // A relative one would be checked here and resolved elsewhere (the rank's cwd).
    if (launch.workdir().front() != '/') {
      return invalidArgument("workdir '" + launch.workdir() + "' is not an absolute path");
    }
    std::error_code ec;
    if (!std::filesystem::is_directory(launch.workdir(), ec)) {
      return notFound("workdir '" + launch.workdir() + "' does not exist on agent '" +
                      options_.agent_name + "'");
    }
  }
  std::vector<std::string> argv = rankArgv(*launcher, launch, launch.ranks(0));
  if (argv.empty() || argv[0].empty()) return invalidArgument("empty command");
  if (resolveProgram(argv[0], withJobEnv(options_.base_env, launch), workdirOf(launch)).empty()) {
    return notFound("command '" + argv[0] + "' not found or not executable on agent '" +
                    options_.agent_name + "'");
  }
  return Status::ok();
}

Result<uint32_t> JobSupervisor::prepare(const proto::JobLaunch& launch, bool reserve_master_port) {
  RM_RETURN_IF_ERROR(validate(launch));
  if (jobs_.count(launch.job_id())) {
    return Status(ErrorCode::kAlreadyExists, "job '" + launch.job_id() + "' is already running");
  }
  reservations_.erase(launch.job_id());
  if (launch.ranks_size() > slotsFree()) {
    return Status(ErrorCode::kResourceExhausted,
                  "agent '" + options_.agent_name + "' has " + std::to_string(slotsFree()) +
                      " free slot(s) of " + std::to_string(options_.slots) + ", the job needs " +
                      std::to_string(launch.ranks_size()));
  }
  uint32_t port = 0;
  if (reserve_master_port) {
    // A tensorflow job's tasks listen on MASTER_PORT + rank.
    RM_ASSIGN_OR_RETURN(port, reserveFreePort(launch.launcher() == proto::TENSORFLOW
                                                  ? static_cast<uint32_t>(launch.world_size())
                                                  : 1));
  }
  reservations_[launch.job_id()] = {launch.ranks_size(), Clock::now() + options_.prepare_hold};
  return port;
}

Result<std::vector<int>> JobSupervisor::launch(const proto::JobLaunch& launch) {
  RM_RETURN_IF_ERROR(validate(launch));
  const std::string& id = launch.job_id();
  if (jobs_.count(id))
    return Status(ErrorCode::kAlreadyExists, "job '" + id + "' is already running");
  reservations_.erase(id);
  if (launch.ranks_size() > slotsFree()) {
    return Status(ErrorCode::kResourceExhausted,
                  "agent '" + options_.agent_name + "' has " + std::to_string(slotsFree()) +
                      " free slot(s), the job needs " + std::to_string(launch.ranks_size()));
  }
  Job job;
  job.launch = launch;
  job.launcher = launcherFor(launch.launcher());  // validate() refused an unknown one
  // Each rank's share of the launcher's contract, before anything is written: a contract that
  // cannot be met (TF_CONFIG without a port per task) starts nothing.
  std::vector<EnvEntries> launcher_env;
  for (const proto::RankAssignment& assignment : launch.ranks()) {
    RM_ASSIGN_OR_RETURN(EnvEntries entries, job.launcher->environment(launch, assignment));
    launcher_env.push_back(std::move(entries));
  }
  if (!launch.metric_patterns().empty()) {
    std::vector<std::pair<std::string, std::string>> patterns;
    for (const auto& p : launch.metric_patterns()) patterns.emplace_back(p.name(), p.regex());
    auto matcher = metrics::PatternMatcher::compile(patterns);
    if (!matcher.isOk()) return matcher.status();
    job.patterns = std::move(*matcher);
  }
  AttemptFiles files;
  files.dir = jobDir(id);
  files.attempt_dir = files.dir + "/attempt-" + std::to_string(launch.attempt());
  files.checkpoint_dir = files.dir + "/checkpoints";
  files.workdir = workdirOf(launch);
  std::error_code ec;
  for (const auto& d : {files.attempt_dir, files.checkpoint_dir, files.workdir}) {
    std::filesystem::create_directories(d, ec);
    if (ec) return ioError("cannot create " + d + ": " + ec.message());
  }
  // Who the ranks run as: the job's own uid, or the agent's --run-as user, or the agent's.
  job.confinement = options_.confinement;
  if (options_.identities) {
    RM_ASSIGN_OR_RETURN(job.confinement, options_.identities->take(id, files.workdir));
  }
  struct ReleaseUnlessStarted {
    JobSupervisor* supervisor;
    const std::string& id;
    bool started = false;
    ~ReleaseUnlessStarted() {
      if (!started) supervisor->releaseIdentity(id);
    }
  } release{this, id};
  RM_RETURN_IF_ERROR(writeAttemptFiles(launch, job.confinement, &files));

  // What runs a Python entry point, as found on the job's PATH where its ranks start: recorded
  // with the launch, and named when a rank dies for want of its framework.
  const std::vector<std::string> first_argv = rankArgv(*job.launcher, launch, launch.ranks(0));
  if (runsPython(first_argv)) {
    const std::string resolved =
        resolveProgram(first_argv[0], withJobEnv(options_.base_env, launch), files.workdir);
    job.interpreter = describeInterpreter(resolved.empty() ? first_argv[0] : resolved);
  }
  RM_RETURN_IF_ERROR(journalAccepted(job));

  std::vector<int> pids;
  RM_ASSIGN_OR_RETURN(job::DevicePlan devices, devicePlan(launch));
  for (int local = 0; local < launch.ranks_size(); ++local) {
    const job::RankDevices& device = devices.ranks[0][static_cast<size_t>(local)];
    Result<Rank> started = startRank(job, files, launch.ranks(local), device,
                                     std::move(launcher_env[static_cast<size_t>(local)]));
    if (!started.isOk()) {
      // Gang semantics: a launch either starts every rank or leaves none running.
      for (auto& other : job.ranks) ::kill(-other.pid, SIGKILL);
      Rank failed;
      failed.rank = launch.ranks(local).rank();
      proto::JournalRecord exited =
          journalRecord(id, launch.attempt(), "rank:" + std::to_string(failed.rank));
      auto* e = exited.mutable_rank_exited();
      e->set_rank(failed.rank);
      e->set_exit_code(127);
      e->set_state(proto::FAILED);
      e->set_error(started.status().message());
      appendRecord(exited);
      reportFailure(job, failed, *e);
      job.any_failed = true;
      for (auto& other : job.ranks) other.stop_requested = true;
      release.started = true;  // finishIfDone() releases the uid once the started ones died
      jobs_[id] = std::move(job);
      finishIfDone(id);  // the started ones are reaped as they die
      return Status(started.status().code(),
                    "rank " + std::to_string(failed.rank) + ": " + started.status().message());
    }
    pids.push_back(started->pid);
    job.ranks.push_back(std::move(*started));
  }
  release.started = true;
  jobs_[id] = std::move(job);
  return pids;
}

// The checkpoints and a workdir of the agent's choosing are the ranks'; one the job named stays
// as it is. The rendezvous secret, the spec and the native section are the agent's, readable by
// the ranks.
Status JobSupervisor::writeAttemptFiles(const proto::JobLaunch& launch,
                                        const RankConfinement& ranks, AttemptFiles* files) const {
  std::vector<std::string> theirs = {files->checkpoint_dir};
  if (launch.workdir().empty()) theirs.push_back(files->workdir);
  RM_RETURN_IF_ERROR(prepareJobDirs(ranks, files->dir, files->attempt_dir, theirs));
  files->readers = ranks.switch_user ? ranks.gid : ::getegid();
  // The attempt's rendezvous secret, for its ranks alone: a file, not their environment.
  if (auto credential = rendezvousCredential(launch); credential.isOk()) {
    files->rendezvous_key_file = files->attempt_dir + "/rendezvous.key";
    RM_RETURN_IF_ERROR(writeSecretFile(files->rendezvous_key_file, credential->secret_key));
    RM_RETURN_IF_ERROR(giveToRanks(ranks, files->rendezvous_key_file));
  }
  if (!launch.spec_yaml().empty()) {
    RM_RETURN_IF_ERROR(
        writeAgentFile(files->dir + "/spec.yaml", launch.spec_yaml(), files->readers));
  }
  if (!launch.native_yaml().empty()) {
    RM_RETURN_IF_ERROR(
        writeAgentFile(files->dir + "/native.yaml", launch.native_yaml(), files->readers));
  }
  return Status::ok();
}

Status JobSupervisor::journalAccepted(const Job& job) {
  const proto::JobLaunch& launch = job.launch;
  proto::JournalRecord accepted =
      journalRecord(launch.job_id(), launch.attempt(), "agent:" + options_.agent_name);
  auto* a = accepted.mutable_job_accepted();
  a->set_name(launch.name());
  a->set_launcher(launch.launcher());
  a->set_world_size(launch.world_size());
  *a->mutable_ranks() = launch.ranks();
  a->set_agent(options_.agent_name);
  a->set_spec_yaml(launch.spec_yaml());
  a->set_owner(launch.owner());
  *a->mutable_argv() = launch.argv();
  a->set_max_restarts(std::max(launch.max_restarts(), launch.restart().max_restarts()));
  a->set_interpreter(job.interpreter);
  if (Status journaled = journal(accepted); !journaled.isOk()) {
    return Status(journaled.code(),
                  "job '" + launch.job_id() + "' was not started: " + journaled.message());
  }
  return Status::ok();
}

// One rank: its files (phase, error), its environment (the common contract, then its
// launcher's), its log and cgroup, its process. On failure nothing of it keeps running.
Result<JobSupervisor::Rank> JobSupervisor::startRank(Job& job, const AttemptFiles& files,
                                                     const proto::RankAssignment& assignment,
                                                     const job::RankDevices& device,
                                                     EnvEntries launcher_env) {
  const proto::JobLaunch& launch = job.launch;
  Rank rank;
  rank.rank = assignment.rank();
  rank.local_rank = assignment.local_rank();
  RankContext context;
  context.agent_dir = options_.state_dir;
  context.checkpoint_dir = files.checkpoint_dir;
  context.rendezvous_key_file = files.rendezvous_key_file;
  const std::string prefix = files.attempt_dir + "/rank-" + std::to_string(rank.rank);
  if (job.launcher->reportsPhase()) {
    rank.phase_file = prefix + ".phase";
    context.phase_file = rank.phase_file;
    // Made here, the rank's to write: the attempt directory is not.
    RM_RETURN_IF_ERROR(writeAgentFile(rank.phase_file, "", files.readers));
    RM_RETURN_IF_ERROR(giveToRanks(job.confinement, rank.phase_file));
  }
  rank.error_file = prefix + ".error.json";
  context.error_file = rank.error_file;
  RM_RETURN_IF_ERROR(writeAgentFile(rank.error_file, "", files.readers));
  RM_RETURN_IF_ERROR(giveToRanks(job.confinement, rank.error_file));
  context.workdir = files.workdir;
  context.cuda_visible_devices = device.cuda_visible_devices;
  context.launcher_env = std::move(launcher_env);
  SpawnRequest request{rankArgv(*job.launcher, launch, assignment),
                       buildRankEnvironment(launch, assignment, context, options_.base_env),
                       files.workdir, &job.confinement};
  setUserEnvironment(job.confinement, &request.env);
  job.launcher->tune(&request.env);
  const std::string log_path = logPath(launch.job_id(), launch.attempt(), rank.rank);
  rank.log_fd = ::open(log_path.c_str(),
                       O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0640);
  Result<int> cgroup_procs = -1;
  if (options_.cgroups) {
    rank.cgroup = "rank-" + launch.job_id() + "-" + std::to_string(launch.attempt()) + "-" +
                  std::to_string(rank.rank);
    cgroup_procs = options_.cgroups->create(rank.cgroup);
  }
  if (cgroup_procs.isOk()) request.cgroup_procs_fd = *cgroup_procs;
  auto spawned =
      cgroup_procs.isOk() ? spawnProcess(request) : Result<SpawnedProcess>(cgroup_procs.status());
  if (request.cgroup_procs_fd >= 0) ::close(request.cgroup_procs_fd);
  if (!spawned.isOk() || rank.log_fd < 0) {
    if (spawned.isOk()) {
      ::kill(-spawned->pid, SIGKILL);
      ::close(spawned->output_fd);
      ::close(spawned->stderr_fd);
    }
    if (rank.log_fd >= 0) ::close(rank.log_fd);
    return spawned.isOk() ? ioError("cannot create " + log_path) : spawned.status();
  }
  rank.pid = spawned->pid;
  rank.output_fd = spawned->output_fd;
  rank.stderr_fd = spawned->stderr_fd;
  rank.stderr_index.open(log_path);
  rank.last_progress = rank.cpu_sampled = rank.tokens_at = Clock::now();
  rank.metric_tokens = 2 * options_.metric_rate;
  proto::JournalRecord started =
      journalRecord(launch.job_id(), launch.attempt(), "rank:" + std::to_string(rank.rank));
  auto* s = started.mutable_rank_started();
  s->set_rank(rank.rank);
  s->set_local_rank(rank.local_rank);
  s->set_pid(rank.pid);
  s->set_device(device.device);
  appendRecord(started);
  rank.device = device.device;
  rank.started_at = started.time();
  return rank;
}

void JobSupervisor::signalJob(Job& job, int signal) {
  for (auto& rank : job.ranks) {
    if (rank.exited) continue;
    rank.stop_requested = true;
    ::kill(-rank.pid, signal);
    // A stopped (SIGSTOP, hung in a debugger) rank handles SIGTERM only once it runs again.
    if (signal == SIGTERM) ::kill(-rank.pid, SIGCONT);
  }
}

Result<int> JobSupervisor::stop(const std::string& job_id, std::chrono::milliseconds grace) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) {
    if (reservations_.erase(job_id)) return 0;
    // Already over: stopping is a no-op that reports what an earlier stop ended.
    if (auto f = finished_attempts_.find(job_id); f != finished_attempts_.end()) {
      return f->second.ranks_stopped;
    }
    return notFound("job '" + job_id + "' is not running on agent '" + options_.agent_name + "'");
  }
  Job& job = it->second;
  if (job.ranks_stopped < 0) {
    job.ranks_stopped = 0;
    for (const auto& rank : job.ranks) job.ranks_stopped += rank.exited ? 0 : 1;
  }
  signalJob(job, SIGTERM);
  if (grace.count() == 0) grace = std::chrono::milliseconds(job.launch.stop_grace_ms());
  if (grace.count() == 0) grace = std::chrono::seconds(10);
  auto kill_at = Clock::now() + grace;
  if (!job.kill_at || *job.kill_at > kill_at) job.kill_at = kill_at;
  return job.ranks_stopped;
}

Status JobSupervisor::killRank(const std::string& job_id, int rank, const std::string& why) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) {
    return notFound("job '" + job_id + "' is not running on agent '" + options_.agent_name + "'");
  }
  for (Rank& r : it->second.ranks) {
    if (r.rank != rank || r.exited) continue;
    r.killed_because = why;
    ::kill(-r.pid, SIGKILL);
    return Status::ok();
  }
  return notFound("rank " + std::to_string(rank) + " of job '" + job_id +
                  "' is not running on agent '" + options_.agent_name + "'");
}

void JobSupervisor::stopAll(std::chrono::milliseconds grace) {
  for (auto& [id, job] : jobs_) signalJob(job, SIGTERM);
  const auto deadline = Clock::now() + grace;
  while (!jobs_.empty() && Clock::now() < deadline) {
    reapChildren();
    ::usleep(20000);
  }
  for (auto& [id, job] : jobs_) signalJob(job, SIGKILL);
  while (!jobs_.empty()) {
    reapChildren();
    if (!jobs_.empty()) ::usleep(5000);
  }
}

std::vector<int> JobSupervisor::outputFds() const {
  std::vector<int> fds;
  for (const auto& [id, job] : jobs_) {
    for (const auto& rank : job.ranks) {
      for (int fd : {rank.output_fd, rank.stderr_fd}) {
        if (fd >= 0) fds.push_back(fd);
      }
    }
  }
  return fds;
}

void JobSupervisor::onOutputReadable(int fd) {
  for (auto& [id, job] : jobs_) {
    for (auto& rank : job.ranks) {
      if (rank.output_fd == fd || rank.stderr_fd == fd) {
        drainPipe(job, rank, rank.stderr_fd == fd, false);
        return;
      }
    }
  }
}

void JobSupervisor::drainOutput(Job& job, Rank& rank, bool final) {
  drainPipe(job, rank, false, final);
  drainPipe(job, rank, true, final);
}

void JobSupervisor::drainPipe(Job& job, Rank& rank, bool from_stderr, bool final) {
  int& fd = from_stderr ? rank.stderr_fd : rank.output_fd;
  std::string& pending = from_stderr ? rank.pending_stderr_line : rank.pending_line;
  char buffer[64 * 1024];
  // Bounded per call so one chatty rank cannot starve the others or the socket.
  for (int round = 0; fd >= 0 && (final || round < 16); ++round) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n > 0) {
      handleOutput(job, rank, buffer, static_cast<size_t>(n), from_stderr);
      continue;
    }
    if (n < 0 && errno == EAGAIN && !final) return;
    // EOF, or the rank is gone and a grandchild still holds the pipe: stop reading.
    ::close(fd);
    fd = -1;
  }
  if (final && !pending.empty()) {
    std::string last = std::move(pending);
    pending.clear();
    handleLine(job, rank, last);
  }
}

void JobSupervisor::handleOutput(Job& job, Rank& rank, const char* data, size_t size,
                                 bool from_stderr) {
  if (rank.log_fd >= 0) {
    const ssize_t written = ::write(rank.log_fd, data, size);
    if (written > 0) {
      const uint64_t at = rank.log_bytes;
      rank.log_bytes += static_cast<uint64_t>(written);
      if (from_stderr) rank.stderr_index.add(at, rank.log_bytes);
    }
  }
  activity_ = true;
  std::string& pending = from_stderr ? rank.pending_stderr_line : rank.pending_line;
  size_t start = 0;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] != '\n') continue;
    if (pending.empty()) {
      handleLine(job, rank, std::string_view(data + start, i - start));
    } else {
      pending.append(data + start, i - start);
      handleLine(job, rank, pending);
      pending.clear();
    }
    start = i + 1;
  }
  if (start < size && pending.size() < kMaxLineBytes) {
    pending.append(data + start, std::min(size - start, kMaxLineBytes));
  }
}

void JobSupervisor::handleLine(Job& job, Rank& rank, std::string_view line) {
  if (line.size() > kMaxLineBytes) return;
  const auto now = Clock::now();
  rank.metric_tokens = std::min(
      2 * options_.metric_rate,
      rank.metric_tokens +
          options_.metric_rate * std::chrono::duration<double>(now - rank.tokens_at).count());
  rank.tokens_at = now;
  if (rank.metric_tokens < 1) {  // not even parsed: past the rate, a line costs only its copy
    ++rank.lines_not_parsed;
    return;
  }
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::optional<metrics::ParsedMetrics> parsed = metrics::parseJsonMetricLine(line);
  if (!parsed && job.patterns) parsed = job.patterns->match(line);
  if (!parsed || parsed->values.empty()) return;
  rank.metric_tokens -= 1;
  proto::JournalRecord record =
      journalRecord(job.launch.job_id(), job.launch.attempt(), "rank:" + std::to_string(rank.rank));
  auto* sample = record.mutable_metric();
  sample->set_rank(rank.rank);
  int64_t step = parsed->step ? *parsed->step : rank.next_step;
  rank.next_step = step + 1;
  const double waited = std::chrono::duration<double>(now - rank.last_progress).count();
  if (step > rank.last_step) {
    if (rank.last_step >= 0) rank.slowest_step = slowestAfter(rank.slowest_step, waited);
    rank.last_step = step;
    rank.last_progress = now;
  } else if (step == rank.last_step) {
    // A line of the step already made (an evaluation's, a checkpoint's) ends a pause: the rank
    // is alive, and its wait was not a step's (see the progress report).
    rank.slowest_pause = slowestAfter(rank.slowest_pause, waited);
    rank.last_progress = now;
  }
  sample->set_step(step);
  for (const auto& [name, value] : parsed->values) {
    auto* v = sample->add_values();
    v->set_name(name);
    v->set_value(value);
  }
  appendRecord(record);
}

void JobSupervisor::reapChildren() {
  while (true) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    for (auto& [id, job] : jobs_) {
      auto it = std::find_if(job.ranks.begin(), job.ranks.end(),
                             [pid](const Rank& r) { return r.pid == pid; });
      if (it == job.ranks.end()) continue;
      recordExit(job, *it, status);
      finishIfDone(std::string(id));
      break;
    }
  }
}

void JobSupervisor::recordExit(Job& job, Rank& rank, int wait_status) {
  drainOutput(job, rank, true);
  if (rank.log_fd >= 0 && rank.lines_not_parsed > 0) {
    const std::string note = "[ringmaster] " + std::to_string(rank.lines_not_parsed) +
                             " lines printed past " +
                             std::to_string(static_cast<int64_t>(options_.metric_rate)) +
                             " metric lines a second are in this log but not in the metrics\n";
    ssize_t written = ::write(rank.log_fd, note.data(), note.size());
    (void)written;
  }
  if (rank.log_fd >= 0) {
    ::close(rank.log_fd);
    rank.log_fd = -1;
  }
  rank.stderr_index.close();
  rank.exited = true;
  // A native rank 0 killed between making its shared-memory segment and unlinking it (after
  // every rank mapped it) leaves it in /dev/shm, RAM until reboot: gone with the rank.
  comm::removeSegmentsOf(rank.pid);
  proto::JournalRecord record =
      journalRecord(job.launch.job_id(), job.launch.attempt(), "rank:" + std::to_string(rank.rank));
  auto* exited = record.mutable_rank_exited();
  exited->set_rank(rank.rank);
  bool clean = false;
  if (WIFEXITED(wait_status)) {
    exited->set_exit_code(WEXITSTATUS(wait_status));
    clean = WEXITSTATUS(wait_status) == 0;
  } else if (WIFSIGNALED(wait_status)) {
    exited->set_signal(WTERMSIG(wait_status));
  }
  if (!rank.cgroup.empty()) {
    if (options_.cgroups->killedForMemory(rank.cgroup)) {
      exited->set_error("killed by its memory limit of " +
                        std::to_string(options_.cgroups->memoryMax() >> 20) +
                        " MiB (the agent's --rank-memory)");
    }
    options_.cgroups->remove(rank.cgroup);
  }
  proto::RankState state = clean ? proto::SUCCEEDED : proto::FAILED;
  const bool stopped_from_outside =
      options_.sigterm_is_stop && WIFSIGNALED(wait_status) && WTERMSIG(wait_status) == SIGTERM;
  // Stopped only when the stop ended it: the SIGTERM (or, after the grace, SIGKILL) this agent
  // sent, or a shell reporting one (128 + the signal). A rank that exited with an error code of
  // its own while the stop was on its way failed, as torchrun reports it: two ranks failing at
  // once are both failed, not one failed and one "stopped".
  const bool ended_by_stop =
      WIFSIGNALED(wait_status)
          ? WTERMSIG(wait_status) == SIGTERM || WTERMSIG(wait_status) == SIGKILL
          : WEXITSTATUS(wait_status) == 128 + SIGTERM || WEXITSTATUS(wait_status) == 128 + SIGKILL;
  if (!clean && ((rank.stop_requested && ended_by_stop) || stopped_from_outside)) {
    state = proto::STOPPED;
  }
  exited->set_state(state);
  for (auto& line : lastLines(logPath(job.launch.job_id(), job.launch.attempt(), rank.rank), 100)) {
    exited->add_tail(std::move(line));
  }
  if (state == proto::FAILED && exited->error().empty() && !rank.killed_because.empty()) {
    exited->set_error(rank.killed_because);
  }
  // What PyTorch's @record wrote: the exception, the root cause torchrun would print.
  if (state == proto::FAILED && exited->error().empty() && !rank.error_file.empty()) {
    if (auto raised = readTorchErrorFile(rank.error_file)) exited->set_error(*raised);
  }
  // Else what the launcher reads in the rank's last lines (an interpreter without its framework).
  if (state == proto::FAILED && exited->error().empty()) {
    const std::vector<std::string> tail(exited->tail().begin(), exited->tail().end());
    if (auto reason = job.launcher->explainFailure(tail, job.interpreter)) {
      exited->set_error(*reason);
    }
  }
  appendRecord(record);
  if (state == proto::FAILED) {
    reportFailure(job, rank, *exited);
    job.any_failed = true;
    // Gang semantics on this agent: the attempt has failed, its other ranks go too.
    bool others_running =
        std::any_of(job.ranks.begin(), job.ranks.end(), [](const Rank& r) { return !r.exited; });
    if (others_running && !job.kill_at) {
      signalJob(job, SIGTERM);
      job.kill_at = Clock::now() + std::chrono::milliseconds(job.launch.stop_grace_ms()
                                                                 ? job.launch.stop_grace_ms()
                                                                 : 10000);
    }
  }
  if (state == proto::STOPPED) job.any_stopped = true;
}

void JobSupervisor::finishIfDone(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  Job& job = it->second;
  if (std::any_of(job.ranks.begin(), job.ranks.end(), [](const Rank& r) { return !r.exited; })) {
    return;
  }
  // The ranks are gone; what they started is ended before their slots count as free.
  std::vector<pid_t> stuck;
  const int ended =
      killLeftovers({options_.state_dir, job_id, job.launch.attempt(), /*descendants_only=*/true},
                    std::chrono::seconds(2), &stuck);
  proto::JournalRecord record =
      journalRecord(job_id, job.launch.attempt(), "agent:" + options_.agent_name);
  auto* finished = record.mutable_job_finished();
  finished->set_leftovers_killed(ended);
  finished->set_leftovers_stuck(static_cast<int>(stuck.size()));
  finished->set_state(job.any_failed    ? proto::FAILED
                      : job.any_stopped ? proto::STOPPED
                                        : proto::SUCCEEDED);
  finished->set_agent(options_.agent_name);
  finished->set_ranks(job.launch.ranks_size());
  appendRecord(record);
  finished_attempts_[job_id] = {job.launch.attempt(), std::max(job.ranks_stopped, 0)};
  releaseIdentity(job_id);
  AttemptEvent over{job_id, job.launch.attempt(), std::nullopt, finished->state()};
  events_.push_back(std::move(over));
  jobs_.erase(it);
}

void JobSupervisor::releaseIdentity(const std::string& job_id) {
  if (!options_.identities) return;
  // Nothing of the job stays its uid's: the next job given that uid finds none of it.
  const Status released = options_.identities->release(
      job_id, {jobDir(job_id) + "/checkpoints", jobDir(job_id) + "/work"});
  if (!released.isOk()) options_.log(released.message());
}

JobSupervisor::Clock::time_point JobSupervisor::onTimer(Clock::time_point now) {
  Clock::time_point next = now + std::chrono::seconds(1);
  for (auto& [id, job] : jobs_) {
    if (!job.kill_at) continue;
    if (*job.kill_at <= now) {
      signalJob(job, SIGKILL);
      job.kill_at = now + std::chrono::seconds(1);  // repeat until reaped
    }
    next = std::min(next, *job.kill_at);
  }
  for (auto it = reservations_.begin(); it != reservations_.end();) {
    if (it->second.expires <= now) {
      it = reservations_.erase(it);
    } else {
      next = std::min(next, it->second.expires);
      ++it;
    }
  }
  return next;
}

Result<JobSupervisor::LogInfo> JobSupervisor::logInfo(const std::string& job_id, int rank,
                                                      uint32_t attempt) const {
  if (!isValidJobId(job_id)) return invalidArgument("job id '" + job_id + "' is not valid");
  auto running = jobs_.find(job_id);
  if (attempt == 0) {
    if (running != jobs_.end()) {
      attempt = running->second.launch.attempt();
    } else if (auto f = finished_attempts_.find(job_id); f != finished_attempts_.end()) {
      attempt = f->second.attempt;
    } else {
      // Not seen since this agent started: the newest attempt directory on disk.
      std::error_code ec;
      for (const auto& entry : std::filesystem::directory_iterator(jobDir(job_id), ec)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("attempt-", 0) == 0) {
          attempt = std::max<uint32_t>(attempt, std::strtoul(name.c_str() + 8, nullptr, 10));
        }
      }
      if (attempt == 0) {
        return notFound("job '" + job_id + "' is unknown to agent '" + options_.agent_name + "'");
      }
    }
  }
  LogInfo info;
  info.path = logPath(job_id, attempt, rank);
  std::error_code ec;
  if (!std::filesystem::exists(info.path, ec)) {
    return notFound("no log for rank " + std::to_string(rank) + " of job '" + job_id +
                    "' attempt " + std::to_string(attempt) + " on agent '" + options_.agent_name +
                    "'");
  }
  info.finished = true;
  if (running != jobs_.end() && running->second.launch.attempt() == attempt) {
    for (const auto& r : running->second.ranks) {
      if (r.rank == rank) info.finished = r.exited;
    }
  }
  return info;
}

}  // namespace ringmaster::agent
