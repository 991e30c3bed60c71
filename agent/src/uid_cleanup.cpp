#include "uid_cleanup.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
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

// What `uid` owns under the directory open as `dir_fd` (named `dir`), into `found` (links are not
// followed; a directory of its is listed, not what is in it). Only directories it could write in
// are entered: one all may write in (/tmp itself, a drop directory) or its group may; a
// directory another user keeps to themselves holds nothing the uid made, and a host's /tmp
// may hold whole build trees. An entry that vanishes or cannot be read while walking (a busy
// /tmp) is passed over: it ended the whole walk, and a job's files beyond it were left behind.
void collectFilesOf(int dir_fd, const fs::path& dir, uid_t uid, size_t at_most, int depth,
                    std::vector<fs::path>* found) {
  DIR* listing = ::fdopendir(dir_fd);
  if (listing == nullptr) {
    ::close(dir_fd);
    return;
  }
  while (found->size() < at_most) {
    const dirent* entry = ::readdir(listing);
    if (entry == nullptr) break;
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(dir_fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (st.st_uid == uid) {
      found->push_back(dir / name);
      continue;
    }
    const bool writable_to_it =
        (st.st_mode & S_IWOTH) || ((st.st_mode & S_IWGRP) && st.st_gid == uid);
    if (!S_ISDIR(st.st_mode) || !writable_to_it || depth >= 32) continue;
    const int child =
        ::openat(dir_fd, entry->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (child >= 0) collectFilesOf(child, dir / name, uid, at_most, depth + 1, found);
  }
  ::closedir(listing);
}

// Every entry under the shared temporary directories that `uid` owns, at most `at_most`.
std::vector<fs::path> filesOf(uid_t uid, size_t at_most) {
  std::vector<fs::path> found;
  for (const std::string& root : sharedTempDirs()) {
    const int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) collectFilesOf(fd, root, uid, at_most, 0, &found);
  }
  return found;
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
  static const std::vector<std::string> dirs = {"/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue"};
  return dirs;
}

std::string uidInUse(uid_t uid) {
  if (const pid_t pid = processOf(uid))
    return "a process runs as it (pid " + std::to_string(pid) + ")";
  if (auto files = filesOf(uid, 1); !files.empty()) return files[0].string() + " is its";
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

Status removeEverythingOf(uid_t uid) {
  killEveryProcessOf(uid);
  std::string failed;
  for (const fs::path& path : filesOf(uid, SIZE_MAX)) {
    std::error_code ec;
    fs::remove_all(path, ec);
    if (ec && failed.empty()) failed = "cannot remove " + path.string() + ": " + ec.message();
  }
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
