#include "ringmaster/client/slurm_sync.h"

#include <chrono>
#include <cstring>
#include <fstream>

#include "ringmaster/slurm/queries.h"

namespace ringmaster::client {
namespace {

constexpr size_t kHeaderBytes = 8;
constexpr size_t kReadChunk = 4 << 20;

double unixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string firstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

SlurmJobSync::SlurmJobSync(slurm::JobDir dir, store::Store* store, store::BatchWriter* writer)
    : dir_(std::move(dir)), store_(store), writer_(writer) {}

Status SlurmJobSync::read(const std::string& node_dir, Reader& reader,
                          std::vector<proto::JournalRecord>* out) {
  std::ifstream log(node_dir + "/journal/journal.log", std::ios::binary);
  if (!log) return Status::ok();  // the agent has not opened it yet
  log.seekg(static_cast<std::streamoff>(reader.offset));
  std::string data(kReadChunk, '\0');
  log.read(data.data(), static_cast<std::streamsize>(data.size()));
  data.resize(static_cast<size_t>(log.gcount()));
  size_t at = 0;
  while (at + kHeaderBytes <= data.size()) {
    uint32_t header[2];
    std::memcpy(header, data.data() + at, kHeaderBytes);
    if (at + kHeaderBytes + header[0] > data.size()) break;  // still being written
    proto::JournalRecord record;
    if (!record.ParseFromArray(data.data() + at + kHeaderBytes, static_cast<int>(header[0]))) {
      return protocolError(node_dir + "/journal/journal.log: a record at byte " +
                           std::to_string(reader.offset + at) + " does not parse");
    }
    at += kHeaderBytes + header[0];
    if (record.seq() >= reader.next_seq) out->push_back(std::move(record));
  }
  reader.offset += at;
  return Status::ok();
}

Result<uint64_t> SlurmJobSync::poll(
    const std::function<void(const std::string&, const proto::JournalRecord&)>& on_record) {
  uint64_t added = 0;
  for (int run : dir_.runs()) {
    for (int node : dir_.nodes(run)) {
      const std::string node_dir = dir_.nodeDir(run, node);
      Reader& reader = readers_[node_dir];
      if (reader.agent.empty()) {
        auto address = slurm::readNodeAddress(dir_.addressFile(run, node));
        reader.journal_id = firstLine(node_dir + "/journal/journal.id");
        if (!address.isOk() || reader.journal_id.empty()) continue;  // not started yet
        reader.agent = address->agent;
        RM_ASSIGN_OR_RETURN(reader.next_seq, store_->cursor(reader.agent, reader.journal_id));
      }
      // A chunk at a time, until no whole frame is left to read.
      for (uint64_t before = ~0ull; reader.offset != before;) {
        before = reader.offset;
        std::vector<proto::JournalRecord> records;
        RM_RETURN_IF_ERROR(read(node_dir, reader, &records));
        if (records.empty()) continue;
        const uint64_t next_seq = records.back().seq() + 1;
        if (on_record) {
          for (const auto& record : records) on_record(reader.agent, record);
        }
        reader.next_seq = next_seq;
        added += records.size();
        if (writer_) {
          writer_->enqueue(reader.agent, reader.journal_id, std::move(records), next_seq);
        } else {
          RM_RETURN_IF_ERROR(
              store_->applyJournal(reader.agent, reader.journal_id, records, next_seq));
        }
      }
    }
  }
  return added;
}

Result<slurm::JobState> refreshSlurmState(store::Store* store, const slurm::Where& where,
                                          store::SlurmJobRow* row) {
  RM_ASSIGN_OR_RETURN(slurm::JobState state, slurm::queryJob(where, row->slurm_job_id));
  if (state.slurm_state != row->state || state.reason != row->reason) {
    row->state = state.slurm_state;
    row->reason = state.reason;
    row->updated_at = unixNow();
    RM_RETURN_IF_ERROR(store->recordSlurmJob(*row));
  }
  if (slurm::isFinished(state.phase) && state.phase != slurm::Phase::kCompleted) {
    // Slurm ended it, and its agents may not have lived to say so (a node that failed, scancel
    // before the ranks started, an agent that never came up). A completed job's journals say
    // how it ended.
    RM_RETURN_IF_ERROR(store->endUnfinishedJob(
        row->job_id, state.phase == slurm::Phase::kCancelled ? "stopped" : "failed", unixNow()));
  }
  return state;
}

}  // namespace ringmaster::client
