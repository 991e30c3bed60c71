#include "ringmaster/slurm/command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace ringmaster::slurm {
namespace {

constexpr int kSshFailed = 255;  // ssh's own exit code for a failure of its own

// A directory of this user's alone for ssh's shared connections; "" when there is none to
// trust (someone else's, or a link: another user could then listen on the socket).
std::string controlDir() {
  const std::string dir = "/tmp/ringmaster-ssh-" + std::to_string(::getuid());
  ::mkdir(dir.c_str(), 0700);
  struct stat info {};
  if (::lstat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::getuid() ||
      (info.st_mode & 077) != 0) {
    return "";
  }
  return dir;
}

// ssh's arguments for `login`: "-p PORT user@host". Commands to one login node share one
// connection that stays open a minute after the last (a follower polls every second or two):
// one handshake instead of one a command.
std::vector<std::string> sshPrefix(const Where& where) {
  std::vector<std::string> ssh = {"ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"};
  static const std::string control_dir = controlDir();
  if (!control_dir.empty()) {
    ssh.insert(ssh.end(), {"-o", "ControlMaster=auto", "-o", "ControlPath=" + control_dir + "/%C",
                           "-o", "ControlPersist=60"});
  }
  std::string config = where.ssh_config;
  if (config.empty()) {
    if (const char* env = std::getenv("RINGMASTER_SSH_CONFIG")) config = env;
  }
  if (!config.empty()) ssh.insert(ssh.end(), {"-F", config});
  std::string destination = where.login;
  const size_t colon = destination.rfind(':');
  if (colon != std::string::npos && destination.find(']') == std::string::npos) {
    ssh.insert(ssh.end(), {"-p", destination.substr(colon + 1)});
    destination.resize(colon);
  }
  ssh.push_back(destination);
  ssh.push_back("--");
  return ssh;
}

}  // namespace

std::string shellQuote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

Result<CommandOutput> runCommand(const std::vector<std::string>& argv, const Where& where,
                                 int timeout_ms, const std::string& input) {
  if (argv.empty()) return invalidArgument("runCommand: no program");
  std::vector<std::string> full = argv;
  if (!where.login.empty()) {
    std::string line;
    for (const auto& arg : argv) line += (line.empty() ? "" : " ") + shellQuote(arg);
    full = sshPrefix(where);
    full.push_back(line);
  }
  // stdin is a socket, not a pipe, so that writing to a program that has already exited (ssh
  // refused, `true`) fails with EPIPE instead of killing this process (the app, ringmasterctl)
  // with SIGPIPE: send(2) takes MSG_NOSIGNAL, write(2) to a pipe has no such flag.
  int in_pipe[2], out_pipe[2], err_pipe[2], exec_pipe[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in_pipe) != 0 ||
      ::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    return ioError(std::string("pipe: ") + std::strerror(errno));
  }
  std::vector<char*> args;
  for (auto& arg : full) args.push_back(arg.data());
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return ioError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execvp(args[0], args.data());
    const int error = errno;
    (void)!::write(exec_pipe[1], &error, sizeof error);
    ::_exit(127);
  }
  for (int fd : {in_pipe[0], out_pipe[1], err_pipe[1], exec_pipe[1]}) ::close(fd);
  int exec_error = 0;
  const bool exec_failed =
      ::read(exec_pipe[0], &exec_error, sizeof exec_error) == sizeof exec_error;
  ::close(exec_pipe[0]);

  // Feed stdin and drain both outputs together, so that neither side blocks on a full pipe.
  CommandOutput output;
  size_t written = 0;
  int stdin_fd = in_pipe[1];
  if (input.empty()) {
    ::close(stdin_fd);
    stdin_fd = -1;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool timed_out = false;
  int open_outputs = 2;
  while (open_outputs > 0 || stdin_fd >= 0) {
    const long left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd fds[3] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}, {stdin_fd, POLLOUT, 0}};
    if (::poll(fds, 3, static_cast<int>(left)) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buffer[65536];
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        (i == 0 ? output.out : output.err).append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        (i == 0 ? out_pipe[0] : err_pipe[0]) = -1;
        --open_outputs;
      }
    }
    if (stdin_fd >= 0 && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
      const ssize_t n = ::send(stdin_fd, input.data() + written, input.size() - written,
                               MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) written += static_cast<size_t>(n);
      if (n < 0 && errno != EAGAIN && errno != EINTR) written = input.size();
      if (written == input.size()) {
        ::close(stdin_fd);
        stdin_fd = -1;
      }
    }
  }
  for (int fd : {out_pipe[0], err_pipe[0], stdin_fd}) {
    if (fd >= 0) ::close(fd);
  }
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (exec_failed) return notFound("cannot run " + full[0] + ": " + std::strerror(exec_error));
  if (timed_out) {
    return Status(ErrorCode::kTimeout, argv[0] + " did not finish in " +
                                           std::to_string(timeout_ms / 1000) + " s" +
                                           (where.login.empty() ? "" : " on " + where.login));
  }
  output.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (!where.login.empty() && output.exit_code == kSshFailed) {
    std::string why = output.err.substr(0, output.err.find_last_not_of('\n') + 1);
    return Status(ErrorCode::kUnavailable,
                  "ssh to " + where.login + " failed" + (why.empty() ? "" : ": " + why));
  }
  return output;
}

Result<std::string> runScript(const std::string& script, const std::vector<std::string>& args,
                              const Where& where, int timeout_ms, const std::string& input) {
  std::vector<std::string> argv = {"sh", "-c", script, "sh"};
  argv.insert(argv.end(), args.begin(), args.end());
  RM_ASSIGN_OR_RETURN(CommandOutput output, runCommand(argv, where, timeout_ms, input));
  if (output.exit_code == 0) return std::move(output.out);
  while (!output.err.empty() && output.err.back() == '\n') output.err.pop_back();
  return Status(ErrorCode::kUnavailable,
                (where.login.empty() ? std::string("here") : "on " + where.login) + ": " +
                    output.err + " (exit " + std::to_string(output.exit_code) + ")");
}

}  // namespace ringmaster::slurm
