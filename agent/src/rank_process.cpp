#include "rank_process.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace ringmaster::agent {
namespace {

bool isExecutableFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::vector<char*> cStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Runs in the child between clone and exec, in the agent's memory (CLONE_VM): only
// async-signal-safe calls that write nothing but the child's own stack (and errno).
[[noreturn]] void execChild(const std::string& program, char* const* argv, char* const* envp,
                            const char* workdir, const RankConfinement* confinement,
                            int cgroup_procs_fd, int output_fd, int stderr_fd, int error_fd,
                            pid_t agent_pid) {
  ::setpgid(0, 0);
  int err = 0;
  // Into its cgroup while it may still write there (before a change of user).
  if (cgroup_procs_fd >= 0 && ::write(cgroup_procs_fd, "0", 1) != 1) err = errno;
  // Before PR_SET_PDEATHSIG, which a change of user clears.
  if (err == 0 && confinement) err = applyConfinement(*confinement);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != agent_pid) ::_exit(127);  // the agent died before prctl
  // Dispositions back to default before anything is unblocked: a handler of the agent's run here
  // would run in the agent's memory (CLONE_VM).
  for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGCHLD}) ::signal(sig, SIG_DFL);
  sigset_t all;
  sigemptyset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);  // the agent blocks SIGCHLD/SIGTERM for signalfd
  int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd >= 0) ::dup2(null_fd, 0);
  ::dup2(output_fd, 1);
  ::dup2(stderr_fd, 2);
  if (err != 0) {
    // reported below
  } else if (workdir[0] != '\0' && ::chdir(workdir) != 0) {
    err = errno;
  } else {
    ::execve(program.c_str(), argv, envp);
    err = errno;
  }
  // Tell the parent why, then die.
  char message[1 + sizeof err];
  message[0] = 'e';
  std::memcpy(message + 1, &err, sizeof err);
  ssize_t ignored = ::write(error_fd, message, sizeof message);
  (void)ignored;
  ::_exit(127);
}

struct ChildArgs {
  const std::string* program;
  char* const* argv;
  char* const* envp;
  const char* workdir;
  const RankConfinement* confinement;
  int cgroup_procs_fd, output_fd, stderr_fd, error_fd;
  int parent_ends[3];  // the agent's ends of the pipes, closed in the child's own fd table
  pid_t agent_pid;
};

int childMain(void* raw) {
  const ChildArgs& a = *static_cast<const ChildArgs*>(raw);
  for (int fd : a.parent_ends) ::close(fd);
  execChild(*a.program, a.argv, a.envp, a.workdir, a.confinement, a.cgroup_procs_fd, a.output_fd,
            a.stderr_fd, a.error_fd, a.agent_pid);
}

}  // namespace

std::string resolveProgram(const std::string& program, const std::vector<std::string>& env,
                           const std::string& workdir) {
  if (program.empty()) return "";
  auto inWorkdir = [&](const std::string& path) {
    return path.front() == '/' || workdir.empty() ? path : workdir + "/" + path;
  };
  if (program.find('/') != std::string::npos) {
    const std::string candidate = inWorkdir(program);
    return isExecutableFile(candidate) ? candidate : "";
  }
  std::string path;
  for (const auto& entry : env) {
    if (entry.rfind("PATH=", 0) == 0) path = entry.substr(5);
  }
  if (path.empty()) path = "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = inWorkdir(dir + "/" + program);
    if (isExecutableFile(candidate)) return candidate;
    start = end + 1;
  }
  return "";
}

Result<SpawnedProcess> spawnProcess(const SpawnRequest& request) {
  if (request.argv.empty()) return invalidArgument("empty command");
  std::string program = resolveProgram(request.argv[0], request.env, request.workdir);
  if (program.empty()) {
    return notFound("command '" + request.argv[0] + "' not found or not executable" +
                    (request.argv[0].find('/') == std::string::npos ? " on PATH" : ""));
  }
  int output[2] = {-1, -1}, errout[2] = {-1, -1}, errors[2] = {-1, -1};
  if (::pipe2(output, O_CLOEXEC) != 0 || ::pipe2(errout, O_CLOEXEC) != 0 ||
      ::pipe2(errors, O_CLOEXEC) != 0) {
    const int err = errno;
    for (int fd : {output[0], output[1], errout[0], errout[1]}) {
      if (fd >= 0) ::close(fd);
    }
    return ioError(std::string("pipe: ") + std::strerror(err));
  }
  std::vector<char*> argv = cStrings(request.argv);
  std::vector<char*> envp = cStrings(request.env);
  // The child runs on a stack of its own in the agent's memory, and the agent waits until it
  // has exec'd (CLONE_VFORK), as posix_spawn does: fork() copied the agent's page tables for
  // each rank, 0.8 ms a rank against 0.3 ms from an 11 MB agent here (bench_launch's 8 ranks).
  ChildArgs args{&program,
                 argv.data(),
                 envp.data(),
                 request.workdir.c_str(),
                 request.confinement,
                 request.cgroup_procs_fd,
                 output[1],
                 errout[1],
                 errors[1],
                 {output[0], errout[0], errors[0]},
                 ::getpid()};
  constexpr size_t kStackBytes = 256 * 1024;
  // Not make_unique_for_overwrite: the glibc 2.31 bundle builds this with GCC 10's libstdc++.
  const std::unique_ptr<char[]> stack(new char[kStackBytes]);
  const pid_t pid =
      ::clone(childMain, stack.get() + kStackBytes, CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
  ::close(output[1]);
  ::close(errout[1]);
  ::close(errors[1]);
  if (pid < 0) {
    ::close(output[0]);
    ::close(errout[0]);
    ::close(errors[0]);
    return ioError(std::string("clone: ") + std::strerror(errno));
  }
  ::setpgid(pid, pid);  // also from the parent, so the group exists before we ever signal it
  // The error pipe closes on a successful exec (close-on-exec) or carries errno on failure.
  char message[1 + sizeof(int)];
  ssize_t n;
  do {
    n = ::read(errors[0], message, sizeof message);
  } while (n < 0 && errno == EINTR);
  ::close(errors[0]);
  if (n == static_cast<ssize_t>(sizeof message)) {
    int err;
    std::memcpy(&err, message + 1, sizeof err);
    ::close(output[0]);
    ::close(errout[0]);
    ::waitpid(pid, nullptr, 0);  // it exits with 127 right after writing
    std::string what = request.workdir.empty()
                           ? "exec '" + program + "'"
                           : "starting '" + program + "' in '" + request.workdir + "'";
    return ioError(what + " failed: " + std::strerror(err));
  }
  for (int fd : {output[0], errout[0]}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return SpawnedProcess{pid, output[0], errout[0]};
}

}  // namespace ringmaster::agent
