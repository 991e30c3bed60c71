#include "uid_cleanup.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/keyctl.h>
#include <signal.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string_view>
#include <thread>

namespace ringmaster::agent {
namespace {

namespace fs = std::filesystem;

bool isZombie(const std::string& proc_dir) {
  std::ifstream in(proc_dir + "/stat");
  std::string stat;
  std::getline(in, stat);
  const size_t after_name = stat.rfind(')');  // the name may hold spaces and parentheses
  return after_name != std::string::npos && after_name + 2 < stat.size() &&
         stat[after_name + 2] == 'Z';
}

// A live process of `uid` (not a zombie, which holds nothing), or 0.
pid_t processOf(uid_t uid) {
  DIR* proc = ::opendir("/proc");
  if (!proc) return 0;
  pid_t found = 0;
  while (const dirent* entry = ::readdir(proc)) {
    if (entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
    const std::string dir = std::string("/proc/") + entry->d_name;
    struct stat st {};
    if (::stat(dir.c_str(), &st) == 0 && st.st_uid == uid && !isZombie(dir)) {
      found = static_cast<pid_t>(std::atoi(entry->d_name));
      break;
    }
  }
  ::closedir(proc);
  return found;
}

uint64_t number(const std::string& text) {
  uint64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

// Called with each entry `uid` owns, as the directory open that holds it and its name there
// (and its path, for messages); false stops the walk.
using EntryVisitor = std::function<bool(int dir_fd, const char* name, const fs::path& path)>;

// Visits what `uid` owns under the directory open as `dir_fd` (named `dir`); links are not
// followed, and a directory of its is visited, not what is in it. Only directories it could
// write in are entered: one all may write in (/tmp itself, a drop directory) or its group may; a
// directory another user keeps to themselves holds nothing the uid made, and a host's /tmp
// may hold whole build trees. An entry that vanishes or cannot be read while walking (a busy
// /tmp) is passed over: it ended the whole walk, and a job's files beyond it were left behind.
// Every directory is entered by its handle (openat, O_NOFOLLOW), never by its path: a path
// walked again later may lead elsewhere once a tenant has swapped a directory for a link.
bool visitFilesOf(int dir_fd, const fs::path& dir, uid_t uid, int depth,
                  const EntryVisitor& visit) {
  DIR* listing = ::fdopendir(dir_fd);
  if (listing == nullptr) {
    ::close(dir_fd);
    return true;
  }
  bool go_on = true;
  while (go_on) {
    const dirent* entry = ::readdir(listing);
    if (entry == nullptr) break;
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(dir_fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (st.st_uid == uid) {
      go_on = visit(dir_fd, entry->d_name, dir / name);
      continue;
    }
    const bool writable_to_it =
        (st.st_mode & S_IWOTH) || ((st.st_mode & S_IWGRP) && st.st_gid == uid);
    if (!S_ISDIR(st.st_mode) || !writable_to_it || depth >= 32) continue;
    const int child =
        ::openat(dir_fd, entry->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (child >= 0) go_on = visitFilesOf(child, dir / name, uid, depth + 1, visit);
  }
  ::closedir(listing);
  return go_on;
}

void visitFilesOf(uid_t uid, const std::vector<std::string>& roots, const EntryVisitor& visit) {
  for (const std::string& root : roots) {
    const int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0 && !visitFilesOf(fd, root, uid, 0, visit)) return;
  }
}

// Removes the entry `name` of the directory open as `dir_fd`, and everything in it when it is a
// directory, without following a link anywhere: a directory is opened by its handle with
// O_NOFOLLOW and emptied through that handle (unlinkat), so a link put in its place removes the
// link, never what it points to. Returns the first error ("" when none).
std::string removeAt(int dir_fd, const char* name, const fs::path& path, int depth) {
  if (::unlinkat(dir_fd, name, 0) == 0 || errno == ENOENT) return "";
  if (errno != EISDIR && errno != EPERM)
    return "cannot remove " + path.string() + ": " + std::strerror(errno);
  const int fd = ::openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    // Not a directory after all (swapped for a file or a link since): remove that entry.
    if ((errno == ENOTDIR || errno == ELOOP) && ::unlinkat(dir_fd, name, 0) == 0) return "";
    return errno == ENOENT ? "" : "cannot open " + path.string() + ": " + std::strerror(errno);
  }
  std::string failed;
  DIR* listing = ::fdopendir(fd);
  if (listing == nullptr) {
    ::close(fd);
    return "cannot list " + path.string() + ": " + std::strerror(errno);
  }
  while (const dirent* entry = ::readdir(listing)) {
    const std::string_view child = entry->d_name;
    if (child == "." || child == "..") continue;
    std::string error = depth >= 256
                            ? "cannot remove " + path.string() + ": nested too deep"
                            : removeAt(::dirfd(listing), entry->d_name, path / child, depth + 1);
    if (failed.empty()) failed = std::move(error);
  }
  ::closedir(listing);
  if (::unlinkat(dir_fd, name, AT_REMOVEDIR) != 0 && errno != ENOENT && failed.empty()) {
    failed = "cannot remove " + path.string() + ": " + std::strerror(errno);
  }
  return failed;
}

struct IpcObject {
  enum Kind { kShm, kMsg, kSem } kind;
  int id;
};

// From /proc/sysvipc/{shm,msg,sem}: each line's id is the second column, the owner's uid the
// column headed "uid".
std::vector<IpcObject> ipcObjectsOf(uid_t uid) {
  std::vector<IpcObject> found;
  const std::pair<const char*, IpcObject::Kind> tables[] = {{"/proc/sysvipc/shm", IpcObject::kShm},
                                                            {"/proc/sysvipc/msg", IpcObject::kMsg},
                                                            {"/proc/sysvipc/sem", IpcObject::kSem}};
  for (const auto& [path, kind] : tables) {
    std::ifstream in(path);
    std::string line;
    if (!std::getline(in, line)) continue;
    std::istringstream header(line);
    std::vector<std::string> columns;
    for (std::string column; header >> column;) columns.push_back(column);
    size_t uid_column = columns.size();
    for (size_t i = 0; i < columns.size(); ++i) uid_column = columns[i] == "uid" ? i : uid_column;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::vector<std::string> values;
      for (std::string value; fields >> value;) values.push_back(value);
      if (uid_column >= values.size() || values.size() < 2) continue;
      if (number(values[uid_column]) == uid) {
        found.push_back({kind, static_cast<int>(number(values[1]))});
      }
    }
  }
  return found;
}

}  // namespace

const std::vector<std::string>& sharedTempDirs() {
  static const std::vector<std::string> dirs = {"/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue",
                                                "/run/lock"};
  return dirs;
}

std::string uidInUse(uid_t uid) {
  if (const pid_t pid = processOf(uid))
    return "a process runs as it (pid " + std::to_string(pid) + ")";
  std::string owned;
  visitFilesOf(uid, sharedTempDirs(), [&](int, const char*, const fs::path& path) {
    owned = path.string() + " is its";
    return false;
  });
  if (!owned.empty()) return owned;
  if (!ipcObjectsOf(uid).empty()) return "it owns System V IPC objects";
  return "";
}

void killEveryProcessOf(uid_t uid) {
  const pid_t child = ::fork();
  if (child == 0) {
    // Only a process of that uid may signal all of them at once; kill(-1) spares the caller.
    if (::setgroups(0, nullptr) == 0 && ::setgid(static_cast<gid_t>(uid)) == 0 &&
        ::setuid(uid) == 0) {
      ::kill(-1, SIGKILL);
    }
    ::_exit(0);
  }
  if (child > 0) {
    while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

std::string removeFilesOf(uid_t uid, const std::vector<std::string>& roots) {
  std::string failed;
  visitFilesOf(uid, roots, [&](int dir_fd, const char* name, const fs::path& path) {
    std::string error = removeAt(dir_fd, name, path, 0);
    if (failed.empty()) failed = std::move(error);
    return true;
  });
  return failed;
}

void clearKeyringsOf(uid_t uid) {
  const pid_t child = ::fork();
  if (child == 0) {
    // Only a process of that uid reaches its user keyrings (they outlive its processes).
    const bool as_it = ::setgroups(0, nullptr) == 0 && ::setgid(static_cast<gid_t>(uid)) == 0 &&
                       ::setuid(uid) == 0;
    const bool cleared = as_it && ::syscall(SYS_keyctl, KEYCTL_CLEAR, KEY_SPEC_USER_KEYRING) == 0 &&
                         ::syscall(SYS_keyctl, KEYCTL_CLEAR, KEY_SPEC_USER_SESSION_KEYRING) == 0;
    ::_exit(cleared ? 0 : 1);
  }
  if (child > 0) {
    while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

Status removeEverythingOf(uid_t uid) {
  killEveryProcessOf(uid);
  clearKeyringsOf(uid);
  std::string failed = removeFilesOf(uid, sharedTempDirs());
  for (const IpcObject& object : ipcObjectsOf(uid)) {
    const int removed = object.kind == IpcObject::kShm   ? ::shmctl(object.id, IPC_RMID, nullptr)
                        : object.kind == IpcObject::kMsg ? ::msgctl(object.id, IPC_RMID, nullptr)
                                                         : ::semctl(object.id, 0, IPC_RMID);
    if (removed != 0 && errno != EINVAL && errno != EIDRM && failed.empty()) {
      failed = "cannot remove System V IPC object " + std::to_string(object.id) + ": " +
               std::strerror(errno);
    }
  }
  // SIGKILL is not instant: a second for the last of them to go.
  for (int i = 0; i < 100 && processOf(uid) != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (const pid_t pid = processOf(uid); pid != 0 && failed.empty()) {
    failed = "process " + std::to_string(pid) + " still runs as it";
  }
  return failed.empty() ? Status::ok() : ioError(failed);
}

}  // namespace ringmaster::agent
