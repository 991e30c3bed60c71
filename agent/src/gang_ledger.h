#pragma once
// What an agent needs to take up its jobs' gangs again after it restarted (SIGTERM, kill -9, a
// reboot of its host): its share of each job's current attempt and the gang's restart counts,
// one file per job in STATE_DIR/gangs, written whenever they change and removed the moment this
// agent knows the job's outcome or leaves it. The journal says how far the attempt got; the
// gang coordinator (resume) goes on from there.

#include <functional>
#include <string>
#include <vector>

#include "ringmaster/protocol/ringmaster.pb.h"
#include "ringmaster/util/result.h"

namespace ringmaster::agent {

struct SavedGang {
  proto::JobLaunch launch;  // this agent's share of the current attempt
  uint32_t first_attempt = 1;
  int original_agents = 1;
  uint32_t uncounted_restarts = 0;  // attempts that used none of the policy's restarts
  bool stopping = false;            // a client stopped the job: it is not taken up again
  // The agent shut down on a signal (its ranks were stopped, not lost): the job's next attempt
  // does not count against max_restarts.
  bool stopped_cleanly = false;
};

class GangLedger {
 public:
  // `dir` empty: keeps nothing (a per-job agent under Slurm, whose SIGTERM is the job's stop).
  // Makes `dir` (0700: the jobs' key pairs are in it) when it is not there.
  explicit GangLedger(std::string dir);

  Status save(const SavedGang& gang);
  void remove(const std::string& job_id);
  // Every job saved, oldest attempt first; a file that cannot be read is logged and removed.
  std::vector<SavedGang> load(const std::function<void(const std::string&)>& log) const;

 private:
  std::string pathOf(const std::string& job_id) const { return dir_ + "/" + job_id; }
  std::string dir_;
};

}  // namespace ringmaster::agent
