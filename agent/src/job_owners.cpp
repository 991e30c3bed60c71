#include "job_owners.h"

#include "journal.h"
#include "ringmaster/protocol/ringmaster.pb.h"

namespace ringmaster::agent {

void JobOwners::load(Journal& journal) {
  forEachRecord(journal, [this](const proto::JournalRecord& record) { note(record); });
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
