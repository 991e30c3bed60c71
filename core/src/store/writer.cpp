#include "ringmaster/store/writer.h"

#include <filesystem>
#include <mutex>
#include <set>
#include <system_error>
#include <utility>

#include "store/database.h"

namespace ringmaster::store {
namespace {

// The history files that have a Writer in this process, by their canonical path.
std::mutex claims_mutex;
std::set<std::string> claims;  // GUARDED_BY(claims_mutex)

Result<std::string> claim(const std::string& path) {
  std::string key = historyFileKey(path);
  std::lock_guard<std::mutex> lock(claims_mutex);
  if (!claims.insert(key).second) {
    return Status(ErrorCode::kAlreadyExists,
                  "history file " + path +
                      " already has a writer in this process: write through it (its BatchWriter)");
  }
  return key;
}

}  // namespace

std::string historyFileKey(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path canonical = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : canonical.string();
}

Writer::Writer(std::unique_ptr<Database> db, std::string claim)
    : Reader(std::move(db)), claim_(std::move(claim)) {}

Writer::~Writer() {
  std::lock_guard<std::mutex> lock(claims_mutex);
  claims.erase(claim_);
}

Result<std::unique_ptr<Writer>> Writer::open(const std::string& path) {
  RM_ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::open(path, /*read_only=*/false));
  RM_ASSIGN_OR_RETURN(std::string claimed, claim(path));
  return std::unique_ptr<Writer>(new Writer(std::move(db), std::move(claimed)));
}

Status Writer::applyJournal(const std::string& agent, const std::string& journal_id,
                            const std::vector<proto::JournalRecord>& records, uint64_t next_seq) {
  const JournalChunk chunk{&agent, &journal_id, &records, next_seq};
  return db_->applyChunks(&chunk, 1);
}
Status Writer::recordSubmission(const JobRow& job) {
  return db_->durably([&] { return db_->recordSubmission(job); });
}
Status Writer::recordAgent(const std::string& name, const std::string& endpoint,
                           const proto::Inventory& inv) {
  return db_->recordAgent(name, endpoint, inv);
}
Status Writer::recordWatchEvent(const EventRow& event) { return db_->recordWatchEvent(event); }
Status Writer::recordSlurmJob(const SlurmJobRow& row) {
  return db_->durably([&] { return db_->recordSlurmJob(row); });
}
Result<int64_t> Writer::recordPreflight(const PreflightReport& report) {
  return db_->durably([&] { return db_->recordPreflight(report); });
}
Status Writer::endUnfinishedJob(const std::string& job_id, const std::string& state, double at) {
  return db_->durably([&] { return db_->endUnfinishedJob(job_id, state, at); });
}
Status Writer::setArchived(const std::vector<std::string>& job_ids, bool archived) {
  return db_->durably([&] { return db_->setArchived(job_ids, archived); });
}
Status Writer::markDeleted(const std::vector<std::string>& job_ids, double at) {
  return db_->durably([&] { return db_->markDeleted(job_ids, at); });
}
Status Writer::undelete(const std::vector<std::string>& job_ids) {
  return db_->durably([&] { return db_->undelete(job_ids); });
}
Result<int> Writer::purgeDeleted(const std::vector<std::string>& job_ids) {
  return db_->durably([&] { return db_->purgeDeleted(&job_ids); });
}
Result<int> Writer::purgeAllDeleted() {
  return db_->durably([&] { return db_->purgeDeleted(nullptr); });
}

}  // namespace ringmaster::store
