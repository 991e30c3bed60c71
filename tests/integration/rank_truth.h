#pragma once
// Ground truth for tests of a job's failures: what its rank processes are doing, read from the
// processes themselves (not from `status`) every 200 ms: each ringmaster-worker of the job found
// in /proc, its attempt and agent from its environment, its step from its phase file. A "copy"
// of the job is the attempt its rank started in together with the attempt's rendezvous
// (MASTER_ADDR:MASTER_PORT), so that two copies that both call themselves attempt 2 are told
// apart.
//
// Thread safety: the watcher runs on a thread of its own; every method may be called from any.

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ringmaster::testing {

class RankTruth {
 public:
  struct Advance {
    double time = 0;  // unix seconds of the reading that saw a new step
    std::string agent_dir;
    int attempt = 0;
    std::string copy;  // "attempt@addr:port"
  };

  explicit RankTruth(std::string job_id);
  ~RankTruth();

  std::vector<Advance> advances() const;
  // The first time a rank under `agent_dir` advanced in an attempt of at least `attempt` after
  // `since`; 0 when none did.
  double firstAdvance(const std::string& agent_dir, int attempt, double since) const;
  // The last time a rank under `agent_dir` advanced at all; 0 when none did.
  double lastAdvance(const std::string& agent_dir) const;
  // Two different copies seen advancing within `window` seconds of each other, as text ("" when
  // never): the one thing that must not happen.
  std::string twoCopiesAdvancing(double window = 1.0) const;
  // Worker processes of the job that exist now, anywhere.
  int processes() const;

 private:
  void watch();

  const std::string job_id_;
  mutable std::mutex mutex_;
  std::vector<Advance> advances_;  // REQUIRES: mutex_
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace ringmaster::testing
