#include "ringmaster/client/slurm_sync.h"

#include <algorithm>

#include "ringmaster/protocol/journal_frame.h"
#include "ringmaster/slurm/queries.h"
#include "ringmaster/util/wall_clock.h"

namespace ringmaster::client {
namespace {

constexpr size_t kReadChunk = 4 << 20;

// Placeholders for the records of seqs [first, end) that damage at bytes [from, to) of `path`
// lost, as the agent's own repair writes them: the first one names the damage (the history shows
// it as a problem), the others only keep the seqs dense.
void markLost(const std::string& path, uint64_t from, uint64_t to, uint64_t first, uint64_t end,
              std::vector<proto::JournalRecord>* out) {
  for (uint64_t seq = first; seq < end; ++seq) {
    proto::JournalRecord& marker = out->emplace_back();
    marker.set_seq(seq);
    marker.set_time(unixSeconds());
    marker.set_source("journal");
    proto::JournalDamage* damage = marker.mutable_journal_damage();
    damage->set_first_lost_seq(first);
    damage->set_lost_records(seq == first ? end - first : 1);
    damage->set_kept_at(path);
    if (seq == first) {
      damage->set_detail("bytes " + std::to_string(from) + "-" + std::to_string(to) +
                         " unreadable");
    }
  }
}

}  // namespace

SlurmJobSync::SlurmJobSync(slurm::JobDir dir, store::Reader* store, store::BatchWriter* writer,
                           const slurm::Where& where)
    : dir_(std::move(dir)), store_(store), writer_(writer), files_(slurm::jobFilesAt(where)) {}

void SlurmJobSync::takeFrames(const std::string& path, std::string_view data, bool at_end,
                              Reader& reader, std::vector<proto::JournalRecord>* out) {
  size_t at = 0;
  reader.want = 0;
  while (true) {
    const std::optional<uint32_t> payload = protocol::framePayloadBytes(data, at);
    if (!payload) break;  // not even a header left
    const size_t frame_end = at + protocol::kFrameHeaderBytes + *payload;
    if (*payload <= protocol::kMaxFramePayload && frame_end > data.size()) {
      reader.want = frame_end - at;  // a frame longer than what was read, or being written
      break;
    }
    size_t frame_bytes = 0;
    if (auto record = protocol::intactRecordAt(data, at, &frame_bytes)) {
      reader.last_seq = record->seq();
      if (record->seq() >= reader.next_seq) out->push_back(std::move(*record));
      at += frame_bytes;
      continue;
    }
    // A bad frame: damage when an intact record follows it, else a tail still being written.
    const auto resume = protocol::nextIntactFrame(data, at + 1, reader.last_seq);
    if (!resume) {
      // Read more to find out (the damage may be longer than what was read).
      if (!at_end) reader.want = 2 * (data.size() - at);
      break;
    }
    const uint64_t from = std::max(reader.next_seq, reader.last_seq + 1);
    markLost(path, reader.offset + at, reader.offset + resume->offset, from, resume->seq, out);
    reader.last_seq = resume->seq - 1;
    at = resume->offset;
  }
  reader.offset += at;
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
  // Every journal's new bytes, a chunk each at a time (or a whole frame, when one is longer),
  // until no whole frame is left to read.
  uint64_t added = 0;
  while (true) {
    std::vector<slurm::FileRange> ranges;
    std::vector<Reader*> readers;
    std::vector<bool> to_end;
    for (const auto& journal : journals) {
      Reader& reader = readers_[journal.node_dir];
      if (journal.size <= reader.offset) continue;
      const uint64_t left = journal.size - reader.offset;
      ranges.push_back({journal.node_dir + "/journal/journal.log", reader.offset,
                        std::min<uint64_t>(left, std::max<uint64_t>(kReadChunk, reader.want))});
      readers.push_back(&reader);
      to_end.push_back(ranges.back().length == left);
    }
    if (ranges.empty()) return added;
    RM_ASSIGN_OR_RETURN(const std::vector<std::string> chunks, files_->read(ranges));
    bool again = false;
    for (size_t i = 0; i < ranges.size(); ++i) {
      Reader& reader = *readers[i];
      const uint64_t before = reader.offset;
      std::vector<proto::JournalRecord> records;
      takeFrames(ranges[i].path, chunks[i], to_end[i], reader, &records);
      // Read again when frames were taken, or when what is wanted lies past what was read.
      again = again || reader.offset != before || (!to_end[i] && reader.want > chunks[i].size());
      if (records.empty()) continue;
      added += records.size();
      deliver(reader, std::move(records), on_record);
    }
    if (!again) return added;  // only frames still being written are left
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
    row->updated_at = unixSeconds();
    writer->enqueueWrite([row = *row](store::Writer& s) { return s.recordSlurmJob(row); });
  }
  if (const std::optional<job::JobPhase> ended = endedBySlurm(state.phase)) {
    // Slurm ended it, and its agents may not have lived to say so (a node that failed, scancel
    // before the ranks started, an agent that never came up).
    writer->enqueueWrite([job_id = row->job_id, ended = job::phaseName(*ended), at = unixSeconds()](
                             store::Writer& s) { return s.endUnfinishedJob(job_id, ended, at); });
  }
  return state;
}

}  // namespace ringmaster::client
