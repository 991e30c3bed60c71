#include "job_identity.h"

#include <dirent.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

namespace ringmaster::agent {
namespace {

bool inPasswd(uid_t uid) {
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  return ::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr;
}

// The uids of the processes running now, from /proc.
std::vector<uid_t> runningUids() {
  std::vector<uid_t> uids;
  DIR* proc = ::opendir("/proc");
  if (!proc) return uids;
  while (const dirent* entry = ::readdir(proc)) {
    if (entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
    struct stat st {};
    if (::stat((std::string("/proc/") + entry->d_name).c_str(), &st) == 0)
      uids.push_back(st.st_uid);
  }
  ::closedir(proc);
  return uids;
}

}  // namespace

Result<UidRange> parseUidRange(const std::string& text) {
  const size_t dash = text.find('-');
  UidRange range;
  auto number = [](std::string_view s, uid_t* out) {
    const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return error == std::errc() && end == s.data() + s.size() && !s.empty();
  };
  if (dash == std::string::npos || !number(std::string_view(text).substr(0, dash), &range.first) ||
      !number(std::string_view(text).substr(dash + 1), &range.last) || range.first == 0 ||
      range.first > range.last) {
    return invalidArgument("--job-uids: '" + text +
                           "' is not a range of uids FIRST-LAST (e.g. 61184-65519, not 0)");
  }
  return range;
}

JobIdentities::JobIdentities(UidRange range, RankConfinement base)
    : range_(range), base_(std::move(base)), next_(range.first) {}

Result<RankConfinement> JobIdentities::take(const std::string& job_id, const std::string& home) {
  uid_t uid = 0;
  if (auto held = held_.find(job_id); held != held_.end()) {
    uid = held->second;
  } else {
    const uint64_t size = uint64_t{range_.last} - range_.first + 1;
    for (uint64_t tried = 0; tried < size && uid == 0; ++tried) {
      const uid_t candidate = next_;
      next_ = next_ == range_.last ? range_.first : next_ + 1;  // round robin: reuse comes late
      bool busy = inPasswd(candidate) || quarantined_.count(candidate) > 0;
      for (const auto& [other, taken] : held_) busy = busy || taken == candidate;
      if (!busy) uid = candidate;
    }
    if (uid == 0) {
      return Status(ErrorCode::kResourceExhausted,
                    "every uid of --job-uids " + std::to_string(range_.first) + "-" +
                        std::to_string(range_.last) + " is held by a running job");
    }
    killEveryProcessOf(uid);  // whatever an earlier job of this uid left running
    held_[job_id] = uid;
  }
  RankConfinement confinement = base_;
  confinement.switch_user = true;
  confinement.uid = uid;
  confinement.gid = static_cast<gid_t>(uid);
  confinement.user = "ringmaster-job-" + std::to_string(uid);
  confinement.home = home;
  return confinement;
}

Status JobIdentities::release(const std::string& job_id, const std::vector<std::string>& dirs) {
  auto held = held_.find(job_id);
  if (held == held_.end()) return Status::ok();
  const uid_t uid = held->second;
  killEveryProcessOf(uid);
  held_.erase(held);
  for (const std::string& dir : dirs) {
    if (!std::filesystem::exists(dir)) continue;
    if (Status taken = chownTree(dir, ::geteuid(), ::getegid()); !taken.isOk()) {
      quarantined_.insert(uid);
      return Status(taken.code(), "uid " + std::to_string(uid) + " of job " + job_id +
                                      " is not given out again: " + taken.message());
    }
  }
  return Status::ok();
}

void JobIdentities::endEveryProcess() const {
  for (uid_t uid : runningUids()) {
    if (uid >= range_.first && uid <= range_.last) killEveryProcessOf(uid);
  }
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

Status chownTree(const std::string& path, uid_t uid, gid_t gid) {
  namespace fs = std::filesystem;
  if (::lchown(path.c_str(), uid, gid) != 0) {
    return ioError("cannot give " + path + " to uid " + std::to_string(uid) + ": " +
                   std::strerror(errno));
  }
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::none, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    // lchown: a link a rank planted is the link's, never what it points to.
    if (::lchown(it->path().c_str(), uid, gid) != 0 && errno != ENOENT) {
      return ioError("cannot give " + it->path().string() + " to uid " + std::to_string(uid) +
                     ": " + std::strerror(errno));
    }
  }
  return ec ? ioError("cannot walk " + path + ": " + ec.message()) : Status::ok();
}

}  // namespace ringmaster::agent
