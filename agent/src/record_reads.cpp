#include "record_reads.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "job_supervisor.h"
#include "journal.h"
#include "ringmaster/protocol/codec.h"
#include "stderr_index.h"

namespace ringmaster::agent {
namespace {

constexpr uint32_t kDefaultBatchRecords = 10000;
constexpr uint32_t kMaxBatchRecords = 100000;
constexpr uint32_t kDefaultLogChunk = 1u << 20;

proto::Envelope errorReply(const proto::Envelope& request, const Status& status,
                           const std::string& agent_name) {
  return protocol::makeError(request.request_id(), status.code(), status.message(), agent_name);
}

}  // namespace

std::optional<proto::Envelope> answerJournalRead(Journal& journal, const proto::Envelope& request,
                                                 bool final, const std::string& agent_name,
                                                 const JobFilter& visible) {
  const proto::ReadJournal& read = request.read_journal();
  if (!read.journal_id().empty() && read.journal_id() != journal.id()) {
    return errorReply(request,
                      notFound("journal '" + read.journal_id() + "' is not this agent's (it has '" +
                               journal.id() + "'; was its state dir replaced?)"),
                      agent_name);
  }
  const uint64_t from = std::max<uint64_t>(1, read.from_seq());
  // Parked until records are flushed (Journal::flushDueAt), not as each is appended.
  if (from > journal.flushedSeq() && read.wait_ms() > 0 && !final) return std::nullopt;
  const uint32_t max_records =
      read.max_records() ? std::min(read.max_records(), kMaxBatchRecords) : kDefaultBatchRecords;
  const uint32_t max_bytes = read.max_bytes() ? std::min(read.max_bytes(), protocol::kMaxReplyBytes)
                                              : protocol::kMaxReplyBytes / 2;
  std::vector<std::string> records;
  if (Status status = journal.read(from, max_records, max_bytes, &records); !status.isOk()) {
    return errorReply(request, status, agent_name);
  }
  proto::Envelope response;
  response.set_request_id(request.request_id());
  proto::JournalBatch* batch = response.mutable_journal_batch();
  batch->set_journal_id(journal.id());
  batch->set_next_seq(from + records.size());
  batch->set_last_seq(journal.lastSeq());
  proto::JournalRecord record;
  for (auto& r : records) {
    if (visible && (!record.ParseFromString(r) || !visible(record.job()))) continue;
    batch->add_records(std::move(r));
  }
  return response;
}

uint64_t mostReplyBytes(const proto::Envelope& request) {
  if (request.has_read_log()) {
    const uint32_t asked = request.read_log().max_bytes();
    return asked ? std::min(asked, protocol::kMaxReplyBytes) : kDefaultLogChunk;
  }
  if (request.has_read_journal()) {
    const uint32_t asked = request.read_journal().max_bytes();
    return asked ? std::min(asked, protocol::kMaxReplyBytes) : protocol::kMaxReplyBytes / 2;
  }
  return 0;
}

std::optional<proto::Envelope> answerLogRead(const JobSupervisor& supervisor,
                                             const proto::Envelope& request, bool final,
                                             const std::string& agent_name) {
  const proto::ReadLog& read = request.read_log();
  auto info = supervisor.logInfo(read.job_id(), read.rank(), read.attempt());
  if (!info.isOk()) return errorReply(request, info.status(), agent_name);
  // Ranks may own their job's directory: a log they replaced with a link (to the agent's key)
  // is not followed, and only a regular file is read.
  const int fd = ::open(info->path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  struct stat st {};
  if (fd >= 0 && (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
    ::close(fd);
    return errorReply(request,
                      invalidArgument("the log of rank " + std::to_string(read.rank()) +
                                      " is not a regular file: it is not read"),
                      agent_name);
  }
  if (fd < 0 && errno == ELOOP) {
    return errorReply(request,
                      invalidArgument("the log of rank " + std::to_string(read.rank()) +
                                      " was replaced by a symbolic link: it is not read"),
                      agent_name);
  }
  const uint64_t size = fd >= 0 ? static_cast<uint64_t>(st.st_size) : 0;
  if (read.offset() >= size && !info->finished && read.wait_ms() > 0 && !final) {
    if (fd >= 0) ::close(fd);
    return std::nullopt;
  }
  proto::Envelope response;
  response.set_request_id(request.request_id());
  proto::LogChunk* chunk = response.mutable_log_chunk();
  const uint64_t offset = std::min<uint64_t>(read.offset(), size);
  const uint32_t want =
      read.max_bytes() ? std::min(read.max_bytes(), protocol::kMaxReplyBytes) : kDefaultLogChunk;
  std::string data(static_cast<size_t>(std::min<uint64_t>(want, size - offset)), '\0');
  if (fd >= 0) {
    const ssize_t n = ::pread(fd, data.data(), data.size(), static_cast<off_t>(offset));
    data.resize(n > 0 ? static_cast<size_t>(n) : 0);
    ::close(fd);
  }
  for (const auto& [begin, end] : readStderrRanges(info->path, offset, offset + data.size())) {
    chunk->add_stderr_ranges(begin);
    chunk->add_stderr_ranges(end);
  }
  chunk->set_offset(offset);
  chunk->set_size(size);
  chunk->set_finished(info->finished && offset + data.size() >= size);
  chunk->set_data(std::move(data));
  return response;
}

}  // namespace ringmaster::agent
