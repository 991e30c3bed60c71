#include "job_identity.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "durable_file.h"
#include "uid_cleanup.h"

namespace ringmaster::agent {
namespace {

bool inPasswd(uid_t uid) {
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  return ::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr;
}

bool inGroups(uid_t gid) {
  std::vector<char> buffer(16384);
  group entry{};
  group* found = nullptr;
  return ::getgrgid_r(static_cast<gid_t>(gid), &entry, buffer.data(), buffer.size(), &found) == 0 &&
         found != nullptr;
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
    return invalidArgument(
        "--job-uids: '" + text +
        "' is not a range of uids FIRST-LAST (e.g. 1879048192-1879113727, not 0)");
  }
  return range;
}

std::vector<HostId> hostUsers() {
  std::vector<HostId> users;
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  ::setpwent();
  while (::getpwent_r(&entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr) {
    users.push_back({found->pw_name, found->pw_uid});
  }
  ::endpwent();
  return users;
}

std::vector<HostId> hostGroups() {
  std::vector<HostId> groups;
  std::vector<char> buffer(65536);  // a group lists its members
  group entry{};
  group* found = nullptr;
  ::setgrent();
  while (::getgrent_r(&entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr) {
    groups.push_back({found->gr_name, found->gr_gid});
  }
  ::endgrent();
  return groups;
}

Status checkUidRangeIsFree(UidRange range, const std::vector<HostId>& users,
                           const std::vector<HostId>& groups) {
  const std::string text = std::to_string(range.first) + "-" + std::to_string(range.last);
  const std::string way_out =
      std::string(": choose a range no user or group of the host is in, e.g. ") + kDefaultJobUids +
      " (the installers' default)";
  if (range.first < kLowestJobUid) {
    return invalidArgument("--job-uids " + text + " reaches below " +
                           std::to_string(kLowestJobUid) +
                           ", where the host's own users are (system accounts, logins, systemd's "
                           "DynamicUser services at 61184-65519, nobody)" +
                           way_out);
  }
  for (const auto& [ids, what] : {std::pair{&users, "user"}, std::pair{&groups, "group"}}) {
    for (const HostId& id : *ids) {
      if (id.id >= range.first && id.id <= range.last) {
        return invalidArgument("--job-uids " + text + " holds " + what + " " + id.name + " (" +
                               std::to_string(id.id) + "): a job given that id would act as it" +
                               way_out);
      }
    }
  }
  return Status::ok();
}

JobIdentities::JobIdentities(UidRange range, RankConfinement base, std::string ledger_path,
                             std::string lock_dir)
    : range_(range),
      base_(std::move(base)),
      ledger_path_(std::move(ledger_path)),
      lock_dir_(std::move(lock_dir)),
      next_(range.first) {}

JobIdentities::~JobIdentities() {
  for (const auto& [uid, fd] : locks_) ::close(fd);
}

Result<std::unique_ptr<JobIdentities>> JobIdentities::open(UidRange range, RankConfinement base,
                                                           std::string ledger_path,
                                                           std::string lock_dir) {
  std::error_code ec;
  std::filesystem::create_directories(lock_dir, ec);
  if (ec || ::chmod(lock_dir.c_str(), 0700) != 0) {
    return ioError("cannot make the uid lock directory " + lock_dir + ": " +
                   (ec ? ec.message() : std::strerror(errno)));
  }
  std::unique_ptr<JobIdentities> identities(
      new JobIdentities(range, std::move(base), std::move(ledger_path), std::move(lock_dir)));
  RM_RETURN_IF_ERROR(identities->loadLedger());
  return identities;
}

// Lines "next UID", "held UID JOB", "quarantined UID".
Status JobIdentities::loadLedger() {
  std::ifstream in(ledger_path_);
  if (!in) return Status::ok();  // nothing given out yet
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string kind, job;
    uint64_t uid = 0;
    fields >> kind >> uid >> job;
    if (uid < range_.first || uid > range_.last) continue;  // another range's: not ours now
    if (kind == "next") next_ = static_cast<uid_t>(uid);
    if (kind == "held" && !job.empty()) held_[job] = static_cast<uid_t>(uid);
    if (kind == "quarantined") quarantined_.insert(static_cast<uid_t>(uid));
  }
  return Status::ok();
}

Status JobIdentities::saveLedger() {
  std::string text = "next " + std::to_string(next_) + "\n";
  for (const auto& [job, uid] : held_) text += "held " + std::to_string(uid) + " " + job + "\n";
  for (uid_t uid : quarantined_) text += "quarantined " + std::to_string(uid) + "\n";
  return writeFileDurably(ledger_path_, text);
}

bool JobIdentities::lock(uid_t uid) {
  if (locks_.count(uid)) return true;
  const std::string path = lock_dir_ + "/" + std::to_string(uid);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return false;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return false;  // another agent of this host holds it
  }
  locks_[uid] = fd;
  return true;
}

void JobIdentities::unlock(uid_t uid) {
  auto held = locks_.find(uid);
  if (held == locks_.end()) return;
  ::close(held->second);
  locks_.erase(held);
}

Result<RankConfinement> JobIdentities::take(const std::string& job_id, const std::string& home) {
  uid_t uid = 0;
  if (auto held = held_.find(job_id); held != held_.end()) {
    uid = held->second;
  } else {
    const uint64_t size = uint64_t{range_.last} - range_.first + 1;
    std::string last_busy;
    for (uint64_t tried = 0; tried < size && uid == 0; ++tried) {
      const uid_t candidate = next_;
      next_ = next_ == range_.last ? range_.first : next_ + 1;
      bool ours = false;
      for (const auto& [other, taken] : held_) ours = ours || taken == candidate;
      if (ours || quarantined_.count(candidate) || inPasswd(candidate) || inGroups(candidate) ||
          !lock(candidate)) {
        continue;
      }
      // Someone else's (a user started a process as it, an earlier agent's leftovers this
      // agent has no record of): never touched, never given out.
      if (std::string why = uidInUse(candidate); !why.empty()) {
        last_busy = "uid " + std::to_string(candidate) + ": " + why;
        unlock(candidate);
        continue;
      }
      uid = candidate;
    }
    if (uid == 0) {
      return Status(ErrorCode::kResourceExhausted,
                    "no uid of --job-uids " + std::to_string(range_.first) + "-" +
                        std::to_string(range_.last) +
                        " is free: each is held by a running job, quarantined, another agent's "
                        "or in use" +
                        (last_busy.empty() ? "" : " (" + last_busy + ")"));
    }
    held_[job_id] = uid;
    if (Status saved = saveLedger(); !saved.isOk()) {
      held_.erase(job_id);
      unlock(uid);
      return saved;
    }
  }
  RankConfinement confinement = base_;
  confinement.switch_user = true;
  confinement.uid = uid;
  confinement.gid = static_cast<gid_t>(uid);
  confinement.user = "ringmaster-job-" + std::to_string(uid);
  confinement.home = home;
  return confinement;
}

Status JobIdentities::cleanUp(uid_t uid, const std::vector<std::string>& dirs) {
  // Its processes first (they could write on), then its job directories back to the agent
  // (before the sweep: a state dir may lie under /tmp), then everything else it owns.
  killEveryProcessOf(uid);
  Status cleaned = Status::ok();
  for (const std::string& dir : dirs) {
    if (!cleaned.isOk() || !std::filesystem::exists(dir)) continue;
    cleaned = chownTree(dir, ::geteuid(), ::getegid());
  }
  if (cleaned.isOk()) cleaned = removeEverythingOf(uid);
  if (cleaned.isOk()) {
    unlock(uid);
    return cleaned;
  }
  quarantined_.insert(uid);  // its lock stays held: no agent of this host gives it out
  return Status(cleaned.code(),
                "uid " + std::to_string(uid) + " is not given out again: " + cleaned.message());
}

Status JobIdentities::release(const std::string& job_id, const std::vector<std::string>& dirs) {
  auto held = held_.find(job_id);
  if (held == held_.end()) return Status::ok();
  const uid_t uid = held->second;
  held_.erase(held);
  const Status cleaned = cleanUp(uid, dirs);
  const Status saved = saveLedger();
  return cleaned.isOk() ? saved : cleaned;
}

std::vector<std::string> JobIdentities::recover(
    const std::function<std::vector<std::string>(const std::string&)>& dirs_of) {
  std::vector<std::string> problems;
  const std::map<std::string, uid_t> held = std::move(held_);
  held_.clear();
  for (const auto& [job, uid] : held) {
    if (!lock(uid)) continue;  // another agent took it since: it found the uid clean
    if (Status cleaned = cleanUp(uid, dirs_of(job)); !cleaned.isOk()) {
      problems.push_back(cleaned.message());
    }
  }
  for (uid_t uid : quarantined_) lock(uid);
  if (Status saved = saveLedger(); !saved.isOk()) problems.push_back(saved.message());
  return problems;
}

void JobIdentities::quarantine(uid_t uid) {
  quarantined_.insert(uid);
  lock(uid);
  (void)saveLedger();  // best effort: the uid stays out of use in this run either way
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
