#pragma once
// Writer: the history's one writing connection in a process (see reader.h). A second Writer of
// the same file in the same process is refused: a process writes through its BatchWriter
// (batch_writer.h), which owns one, so that its writes never wait on each other's file lock.
// Tools and tests that write without a BatchWriter open one directly.

#include <memory>
#include <string>
#include <vector>

#include "ringmaster/store/reader.h"

namespace ringmaster::store {

class Writer : public Reader {
 public:
  // As Reader::open; kAlreadyExists when this process has a Writer of the file already.
  static Result<std::unique_ptr<Writer>> open(const std::string& path);
  ~Writer() override;

  // Applies pulled journal records of one agent and advances that agent's cursor to next_seq, in
  // ONE transaction, so a crash can never store records without the cursor or vice versa.
  // Idempotent: records already stored are skipped. The cursor never moves backwards.
  Status applyJournal(const std::string& agent, const std::string& journal_id,
                      const std::vector<proto::JournalRecord>& records, uint64_t next_seq);

  // The writes below are the client's own rows, which exist nowhere else: each is committed
  // durably (synchronous=FULL), so that a power cut right after it returns does not lose it.

  // The submitting client's view (state "submitted"), before any record arrives; later records
  // fill in the rest. Fields the records already set are kept, except submitted_at (the client's
  // time of submission wins); job.state is ignored. Replaying a submission changes nothing.
  Status recordSubmission(const JobRow& job);
  // Remembers an agent's endpoint and latest inventory; last_seen is now.
  Status recordAgent(const std::string& name, const std::string& endpoint,
                     const proto::Inventory& inv);

  // An event a client saw rather than an agent journaled (source "watch": an agent that stopped
  // answering while it ran the job's ranks, and answered again). One that is stored already
  // (same job, attempt, source and seq) is skipped.
  Status recordWatchEvent(const EventRow& event);
  // Keeps a cluster preflight's report (its started_at set), numbered after the newest kept:
  // its id.
  Result<int64_t> recordPreflight(const PreflightReport& report);
  // Inserts or replaces the job's Slurm row.
  Status recordSlurmJob(const SlurmJobRow& row);
  // A job that its scheduler ended while the history still has it submitted or running (its
  // agents were killed before they could say how it ended): the job, and its ranks that are
  // still pending or running, get `state` ("failed", "stopped"). Other jobs are left alone.
  Status endUnfinishedJob(const std::string& job_id, const std::string& state, double at);

  // Archives or unarchives the jobs (ids not in the history are skipped), in one transaction.
  Status setArchived(const std::vector<std::string>& job_ids, bool archived);
  // Deleting is two steps, so that undo costs nothing and a crash between them loses nothing
  // half-deleted: markDeleted hides the jobs from jobs() and job() at once; undelete shows them
  // again, whole; purgeDeleted removes those of `job_ids` still marked, with everything recorded
  // of them (ranks, attempts, events, metrics, the Slurm row), and purgeAllDeleted every marked
  // job (a client's next start, after a crash inside the undo window). Each one transaction;
  // the purges return how many jobs they removed.
  Status markDeleted(const std::vector<std::string>& job_ids, double at);
  Status undelete(const std::vector<std::string>& job_ids);
  Result<int> purgeDeleted(const std::vector<std::string>& job_ids);
  Result<int> purgeAllDeleted();

 private:
  friend class BatchWriter;
  Writer(std::unique_ptr<Database> db, std::string claim);
  std::string claim_;  // this process's claim on the file (see open)
};

}  // namespace ringmaster::store
