#pragma once
// The Slurm jobs a session follows (cluster_session.h): every job of the history that Slurm has
// not finished, whether this client submitted it or another did. Its journals are read from its
// job directory every second into the history (through the session's writer) and handed to the
// session's sink; Slurm's state is asked every few seconds, and a change is reported. A job
// Slurm has finished is read one last time and then left alone.
//
// Thread safety: none; a session's Slurm worker thread (history_worker.h) owns it. Asking Slurm
// and reading the job directory run squeue and file reads (or ssh to the login node) on that
// thread, bounded by their timeouts; a login node that does not answer is left alone for a while.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ringmaster/client/cluster_config.h"
#include "ringmaster/client/slurm_sync.h"
#include "ringmaster/store/store.h"

namespace ringmaster::client {

class SlurmWatch {
 public:
  using Clock = std::chrono::steady_clock;
  using RecordsFn =
      std::function<void(const std::string& agent, std::vector<proto::JournalRecord> records)>;
  using ChangedFn = std::function<void(const store::SlurmJobRow& row)>;

  SlurmWatch(store::Reader* history, store::BatchWriter* writer)
      : history_(history), writer_(writer) {}

  // The cluster file's Slurm clusters (their login nodes).
  void setClusters(std::vector<SlurmCluster> clusters) { clusters_ = std::move(clusters); }
  // Reads and asks what is due; returns whether any record was handed to `records`.
  bool tick(const RecordsFn& records, const ChangedFn& changed);

 private:
  struct Followed {
    store::SlurmJobRow row;
    std::unique_ptr<SlurmJobSync> sync;
  };
  std::string loginOf(const std::string& cluster) const;
  // A login node that did not answer is left alone for a while (5 s, doubling to 60 s), so that
  // ssh's connect timeout does not hold up the other clusters' jobs every second.
  bool resting(const std::string& cluster, Clock::time_point now) const;
  void noteAnswer(const std::string& cluster, const Status& status, Clock::time_point now);
  struct Rest {
    Clock::time_point until{};
    std::chrono::seconds length{0};
  };

  store::Reader* history_;
  store::BatchWriter* writer_;
  std::vector<SlurmCluster> clusters_;
  std::map<std::string, Followed> jobs_;  // by job id
  std::set<std::string> forgotten_;       // Slurm no longer knows them: not followed again
  std::map<std::string, Rest> rests_;     // by cluster, for login nodes that did not answer
  Clock::time_point next_list_{};
  Clock::time_point next_read_{};
  Clock::time_point next_state_{};
};

}  // namespace ringmaster::client
