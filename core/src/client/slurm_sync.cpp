#include "ringmaster/client/slurm_sync.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "ringmaster/slurm/queries.h"

namespace ringmaster::client {
namespace {

constexpr size_t kHeaderBytes = 8;
constexpr size_t kReadChunk = 4 << 20;

double unixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

SlurmJobSync::SlurmJobSync(slurm::JobDir dir, store::Store* store, store::BatchWriter* writer,
                           const slurm::Where& where)
    : dir_(std::move(dir)), store_(store), writer_(writer), files_(slurm::jobFilesAt(where)) {}

Status SlurmJobSync::takeFrames(const std::string& path, const std::string& data, Reader& reader,
                                std::vector<proto::JournalRecord>* out) {
  size_t at = 0;
  while (at + kHeaderBytes <= data.size()) {
    uint32_t header[2];
    std::memcpy(header, data.data() + at, kHeaderBytes);
    if (at + kHeaderBytes + header[0] > data.size()) break;  // still being written
    proto::JournalRecord record;
    if (!record.ParseFromArray(data.data() + at + kHeaderBytes, static_cast<int>(header[0]))) {
      return protocolError(path + ": a record at byte " + std::to_string(reader.offset + at) +
                           " does not parse");
    }
    at += kHeaderBytes + header[0];
    if (record.seq() >= reader.next_seq) out->push_back(std::move(record));
  }
  reader.offset += at;
  return Status::ok();
}

void SlurmJobSync::deliver(
    Reader& reader, std::vector<proto::JournalRecord> records,
    const std::function<void(const std::string&, const proto::JournalRecord&)>& on_record) {
  const uint64_t next_seq = records.back().seq() + 1;
  if (on_record) {
    for (const auto& record : records) on_record(reader.agent, record);
  }
  reader.next_seq = next_seq;
  writer_->enqueue(reader.agent, reader.journal_id, std::move(records), next_seq);
}

Result<uint64_t> SlurmJobSync::poll(
    const std::function<void(const std::string&, const proto::JournalRecord&)>& on_record) {
  RM_ASSIGN_OR_RETURN(const std::vector<slurm::NodeJournal> journals, files_->journals(dir_));
  for (const auto& journal : journals) {
    Reader& reader = readers_[journal.node_dir];
    if (!reader.agent.empty()) continue;
    reader.agent = journal.agent;
    reader.journal_id = journal.journal_id;
    RM_ASSIGN_OR_RETURN(reader.next_seq, store_->cursor(reader.agent, reader.journal_id));
  }
  // Every journal's new bytes, a chunk each at a time, until no whole frame is left to read.
  uint64_t added = 0;
  while (true) {
    std::vector<slurm::FileRange> ranges;
    std::vector<Reader*> readers;
    for (const auto& journal : journals) {
      Reader& reader = readers_[journal.node_dir];
      if (journal.size <= reader.offset) continue;
      ranges.push_back({journal.node_dir + "/journal/journal.log", reader.offset,
                        std::min<uint64_t>(journal.size - reader.offset, kReadChunk)});
      readers.push_back(&reader);
    }
    if (ranges.empty()) return added;
    RM_ASSIGN_OR_RETURN(const std::vector<std::string> chunks, files_->read(ranges));
    bool moved = false;
    for (size_t i = 0; i < ranges.size(); ++i) {
      Reader& reader = *readers[i];
      const uint64_t before = reader.offset;
      std::vector<proto::JournalRecord> records;
      RM_RETURN_IF_ERROR(takeFrames(ranges[i].path, chunks[i], reader, &records));
      moved = moved || reader.offset != before;
      if (records.empty()) continue;
      added += records.size();
      deliver(reader, std::move(records), on_record);
    }
    if (!moved) return added;  // only frames still being written are left
  }
}

std::optional<job::JobPhase> endedBySlurm(slurm::Phase phase) {
  if (!slurm::isFinished(phase) || phase == slurm::Phase::kCompleted) return std::nullopt;
  return phase == slurm::Phase::kCancelled ? job::JobPhase::kStopped : job::JobPhase::kFailed;
}

Result<slurm::JobState> refreshSlurmState(store::BatchWriter* writer, const slurm::Where& where,
                                          store::SlurmJobRow* row) {
  RM_ASSIGN_OR_RETURN(slurm::JobState state, slurm::queryJob(where, row->slurm_job_id));
  if (state.slurm_state != row->state || state.reason != row->reason) {
    row->state = state.slurm_state;
    row->reason = state.reason;
    row->updated_at = unixNow();
    writer->enqueueWrite([row = *row](store::Store& s) { return s.recordSlurmJob(row); });
  }
  if (const std::optional<job::JobPhase> ended = endedBySlurm(state.phase)) {
    // Slurm ended it, and its agents may not have lived to say so (a node that failed, scancel
    // before the ranks started, an agent that never came up).
    writer->enqueueWrite([job_id = row->job_id, ended = job::phaseName(*ended), at = unixNow()](
                             store::Store& s) { return s.endUnfinishedJob(job_id, ended, at); });
  }
  return state;
}

}  // namespace ringmaster::client
