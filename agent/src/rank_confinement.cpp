#include "rank_confinement.h"

#include <grp.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ringmaster::agent {

Result<RankConfinement> confinementFor(const std::string& run_as, rlim_t open_files) {
  RankConfinement confinement;
  // No higher than the agent's own hard limit, which only a privileged process could raise.
  rlimit own{};
  confinement.open_files = ::getrlimit(RLIMIT_NOFILE, &own) == 0 && own.rlim_max < open_files
                               ? own.rlim_max
                               : open_files;
  if (run_as.empty()) return confinement;
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  const int error = ::getpwnam_r(run_as.c_str(), &entry, buffer.data(), buffer.size(), &found);
  if (error != 0 || found == nullptr) {
    return notFound("--run-as: no user '" + run_as + "' on this host" +
                    (error ? std::string(" (") + std::strerror(error) + ")" : ""));
  }
  if (found->pw_uid == 0) return invalidArgument("--run-as: '" + run_as + "' is root");
  confinement.switch_user = true;
  confinement.uid = found->pw_uid;
  confinement.gid = found->pw_gid;
  confinement.user = run_as;
  confinement.home = found->pw_dir ? found->pw_dir : "/";
  int count = 64;
  confinement.groups.resize(static_cast<size_t>(count));
  if (::getgrouplist(run_as.c_str(), found->pw_gid, confinement.groups.data(), &count) < 0) {
    confinement.groups.resize(static_cast<size_t>(count));
    ::getgrouplist(run_as.c_str(), found->pw_gid, confinement.groups.data(), &count);
  }
  confinement.groups.resize(static_cast<size_t>(count));
  return confinement;
}

Status giveToRanks(const RankConfinement& confinement, const std::string& path) {
  if (!confinement.switch_user) return Status::ok();
  if (::chown(path.c_str(), confinement.uid, confinement.gid) != 0) {
    return ioError("cannot give " + path + " to user " + confinement.user + ": " +
                   std::strerror(errno));
  }
  return Status::ok();
}

void setUserEnvironment(const RankConfinement& confinement, std::vector<std::string>* env) {
  if (!confinement.switch_user) return;
  std::erase_if(*env, [](const std::string& entry) {
    return entry.rfind("HOME=", 0) == 0 || entry.rfind("USER=", 0) == 0 ||
           entry.rfind("LOGNAME=", 0) == 0;
  });
  env->push_back("HOME=" + confinement.home);
  env->push_back("USER=" + confinement.user);
  env->push_back("LOGNAME=" + confinement.user);
}

int applyConfinement(const RankConfinement& confinement) {
  const rlimit no_core{0, 0};
  const rlimit files{confinement.open_files, confinement.open_files};
  if (::setrlimit(RLIMIT_CORE, &no_core) != 0) return errno;
  if (confinement.open_files > 0 && ::setrlimit(RLIMIT_NOFILE, &files) != 0) return errno;
  const rlimit processes{confinement.processes, confinement.processes};
  if (confinement.processes > 0 && ::setrlimit(RLIMIT_NPROC, &processes) != 0) return errno;
  // Ranks never keep the agent's own, lower nice value (takeAgentNice), only ever a higher one.
  errno = 0;
  const int inherited = ::getpriority(PRIO_PROCESS, 0);
  if (errno == 0 && inherited < confinement.nice &&
      ::setpriority(PRIO_PROCESS, 0, confinement.nice) != 0) {
    return errno;
  }
  // Raw system calls: the child shares the agent's memory until it execs (rank_process.cpp),
  // and glibc's setgroups/setgid/setuid would signal every thread of the agent to change its
  // credentials too (they keep a process's threads alike). The kernel's own change only this
  // task's, with the same semantics (as root: real, effective and saved ids).
  if (confinement.switch_user) {
    if (::syscall(SYS_setgroups, confinement.groups.size(), confinement.groups.data()) != 0) {
      return errno;
    }
    if (::syscall(SYS_setgid, confinement.gid) != 0) return errno;
    if (::syscall(SYS_setuid, confinement.uid) != 0) return errno;
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  return 0;
}

}  // namespace ringmaster::agent
