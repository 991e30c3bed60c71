#pragma once
// Follows one job attempt through journal records as they arrive (from any of its agents):
// which ranks have exited and how, and whether the attempt is over.

#include <map>
#include <string>

#include "ringmaster/protocol/ringmaster.pb.h"

namespace ringmaster::client {

class JobProgress {
 public:
  explicit JobProgress(std::string job_id) : job_id_(std::move(job_id)) {}

  void observe(const proto::JournalRecord& record);

  // Every rank of the newest attempt seen has exited.
  bool finished() const;
  bool anyFailed() const;
  // Every rank exited and succeeded.
  bool succeeded() const;
  int worldSize() const { return world_size_; }
  uint32_t attempt() const { return attempt_; }
  const std::map<int, proto::RankExited>& exits() const { return exits_; }

 private:
  std::string job_id_;
  uint32_t attempt_ = 0;
  int world_size_ = 0;
  std::map<int, proto::RankExited> exits_;  // of the newest attempt
};

}  // namespace ringmaster::client
