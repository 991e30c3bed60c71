#pragma once
// A Unix identity of its own for each job (--job-uids FIRST-LAST, the agent as root), as
// systemd's DynamicUser gives one to a service: its ranks run as a uid (and a group of the same
// number) that no other job holds while it runs, so a rank of one job can neither signal another
// job's ranks nor open its directory (0700, owned by that uid). Between jobs a uid owns nothing:
// when a job's ranks are gone its processes are ended by uid and its checkpoints and work
// directory go back to the agent, so the next job given the same uid finds nothing of it.
//
// Not thread-safe: the supervisor's loop owns it.

#include <sys/types.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "rank_confinement.h"
#include "ringmaster/util/result.h"

namespace ringmaster::agent {

struct UidRange {
  uid_t first = 0, last = 0;
};

// "61184-65519": both ends inclusive, first <= last, neither 0; else an error naming the text.
Result<UidRange> parseUidRange(const std::string& text);

class JobIdentities {
 public:
  // Ranks take the limits of `base` (and its supplementary groups: those of --run-as, so GPU
  // device groups carry over); its user is replaced per job.
  JobIdentities(UidRange range, RankConfinement base);

  // The identity of `job_id`'s ranks: the one it holds, or the next free uid of the range (not a
  // user of this host's passwd, not held by a running job). Its processes of an earlier holder
  // are ended first. RESOURCE_EXHAUSTED when every uid is held.
  Result<RankConfinement> take(const std::string& job_id, const std::string& home);
  // The job's ranks are gone: its uid's processes are ended, `dirs` (those of them that exist)
  // are given back to the agent, and the uid is free again. When a directory cannot be taken
  // back the uid still owns files of the job: it is quarantined (never given out again by this
  // agent) and the error says which uid and why.
  [[nodiscard]] Status release(const std::string& job_id, const std::vector<std::string>& dirs = {});
  // `uid` still owns files of an earlier job: it is never given out again by this agent.
  void quarantine(uid_t uid) { quarantined_.insert(uid); }
  // Any process still running as a uid of the range (an agent restarted under running ranks).
  void endEveryProcess() const;
  const UidRange& range() const { return range_; }

 private:
  UidRange range_;
  RankConfinement base_;
  uid_t next_;
  std::map<std::string, uid_t> held_;  // job id -> uid
  std::set<uid_t> quarantined_;        // whose files a release could not take back
};

// SIGKILL to every process running as `uid` (a child that becomes `uid` and kills -1, the only
// way that cannot miss a process forked meanwhile). Returns at once; the child is reaped.
void killEveryProcessOf(uid_t uid);

// `path` and everything under it owned by uid:gid (links themselves, never followed).
Status chownTree(const std::string& path, uid_t uid, gid_t gid);

}  // namespace ringmaster::agent
