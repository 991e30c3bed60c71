#include "job_owners.h"

#include <vector>

#include "journal.h"
#include "ringmaster/protocol/ringmaster.pb.h"

namespace ringmaster::agent {

void JobOwners::load(Journal& journal) {
  std::vector<std::string> batch;
  proto::JournalRecord record;
  for (uint64_t seq = 1; seq <= journal.lastSeq(); seq += batch.size()) {
    batch.clear();
    if (!journal.read(seq, 100000, 64u << 20, &batch).isOk() || batch.empty()) break;
    for (const auto& bytes : batch) {
      if (record.ParseFromString(bytes)) note(record);
    }
  }
}

void JobOwners::note(const proto::JournalRecord& record) {
  if (record.has_job_accepted()) note(record.job(), record.job_accepted().owner());
}

void JobOwners::note(const std::string& job, const std::string& owner_key) {
  // The first submission owns the id; later attempts carry the same owner.
  owners_.try_emplace(job, owner_key);
}

std::optional<std::string> JobOwners::ownerOf(const std::string& job) const {
  auto it = owners_.find(job);
  if (it == owners_.end()) return std::nullopt;
  return it->second;
}

}  // namespace ringmaster::agent
