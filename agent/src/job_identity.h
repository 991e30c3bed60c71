#pragma once
// A Unix identity of its own for each job (--job-uids FIRST-LAST, the agent as root), as
// systemd's DynamicUser gives one to a service: its ranks run as a uid (and a group of the same
// number) that no other job holds while it runs, so that a rank of one job can neither signal
// another job's ranks nor open its directory (0700, owned by that uid).
//
// A uid carries nothing from one job to the next, and the agent touches only what it started:
// - a uid is given out only when nothing on the host uses it (no passwd or group entry, no
//   process, no file in /tmp, /var/tmp, /dev/shm, /dev/mqueue, no System V IPC object: see
//   uid_cleanup.h), and only while this agent holds its lock in a directory every agent of the
//   host shares, so that two agents with overlapping ranges never hand out the same uid;
// - when a job's ranks are gone its uid's processes are ended, its files in the shared
//   directories and its IPC objects removed, and its checkpoints and work directory go back to
//   the agent; a uid where any of that fails is quarantined (never given out again, and said);
// - the uids given out are recorded in a ledger in the agent's state dir, so that an agent
//   restarted under running ranks ends and cleans those uids, and only those.
//
// Not thread-safe: the supervisor's loop owns it.

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "rank_confinement.h"
#include "ringmaster/util/result.h"

namespace ringmaster::agent {

struct UidRange {
  uid_t first = 0, last = 0;
};

// "1879048192-1879113727": both ends inclusive, first <= last, neither 0; else an error naming
// the text.
Result<UidRange> parseUidRange(const std::string& text);

// The range the installers give the agent (the .deb's agent.toml, install-agent.sh): above every
// range a host uses for its own users (system accounts, logins, systemd's DynamicUser 61184-65519,
// nobody), below 2^31 (what some tools take for a signed number).
inline constexpr const char* kDefaultJobUids = "1879048192-1879113727";
// No uid of --job-uids may be below this: the host's own users live there.
inline constexpr uid_t kLowestJobUid = 65536;

// A user or group of the host, as passwd or group names it.
struct HostId {
  std::string name;
  uint32_t id = 0;
};
std::vector<HostId> hostUsers();   // every passwd entry (getpwent)
std::vector<HostId> hostGroups();  // every group entry (getgrent)
// Whether the range is safe to give jobs: above kLowestJobUid, and no user or group of the host
// in it (its ranks would run as that user, or with that group's files). The error names the
// first one found and the way out.
Status checkUidRangeIsFree(UidRange range, const std::vector<HostId>& users,
                           const std::vector<HostId>& groups);

// Where every agent of a host locks the uids it holds.
inline constexpr const char* kUidLockDir = "/run/ringmaster/uids";

class JobIdentities {
 public:
  // Ranks take the limits of `base` (and its supplementary groups: those of --run-as, so GPU
  // device groups carry over); its user is replaced per job. `ledger_path` is this agent's
  // record of the uids it gave out (read back here: see recover()).
  static Result<std::unique_ptr<JobIdentities>> open(UidRange range, RankConfinement base,
                                                     std::string ledger_path,
                                                     std::string lock_dir = kUidLockDir);
  ~JobIdentities();
  JobIdentities(const JobIdentities&) = delete;
  JobIdentities& operator=(const JobIdentities&) = delete;

  // The identity of `job_id`'s ranks: the one it holds, or the next free uid of the range after
  // the last one given out (round robin, so reuse comes late). RESOURCE_EXHAUSTED when none is
  // free, naming why.
  Result<RankConfinement> take(const std::string& job_id, const std::string& home);
  // The job's ranks are gone: its uid's processes end, what it owns in the shared directories is
  // removed, `dirs` (those of them that exist) go back to the agent, and the uid is free again.
  // When any of that fails the uid is quarantined and the error says which uid and why.
  [[nodiscard]] Status release(const std::string& job_id,
                               const std::vector<std::string>& dirs = {});
  // At start: the uids the ledger says this agent gave out (an agent that crashed or was
  // restarted under running ranks) are ended, cleaned and freed as release() does, with the
  // directories `dirs_of(job id)`. One line per uid quarantined on the way.
  std::vector<std::string> recover(
      const std::function<std::vector<std::string>(const std::string&)>& dirs_of);
  // `uid` still owns files of an earlier job: it is never given out again by this agent.
  void quarantine(uid_t uid);
  const UidRange& range() const { return range_; }
  bool quarantined(uid_t uid) const { return quarantined_.count(uid) > 0; }

 private:
  JobIdentities(UidRange range, RankConfinement base, std::string ledger_path,
                std::string lock_dir);
  Status loadLedger();
  Status saveLedger();
  // Whether this agent holds (or now takes) the host-wide lock of `uid`.
  bool lock(uid_t uid);
  void unlock(uid_t uid);
  // Processes, shared files and IPC of `uid` removed and `dirs` taken back; quarantined if not.
  Status cleanUp(uid_t uid, const std::vector<std::string>& dirs);

  UidRange range_;
  RankConfinement base_;
  std::string ledger_path_;
  std::string lock_dir_;
  uid_t next_;
  std::map<std::string, uid_t> held_;  // job id -> uid
  std::set<uid_t> quarantined_;        // whose clean-up failed
  std::map<uid_t, int> locks_;         // uid -> the open, flock()ed lock file
};

// `path` and everything under it owned by uid:gid (links themselves, never followed).
Status chownTree(const std::string& path, uid_t uid, gid_t gid);

}  // namespace ringmaster::agent
