#include "journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "durable_file.h"
#include "ringmaster/protocol/journal_frame.h"
#include "ringmaster/util/crc32.h"
#include "ringmaster/util/wall_clock.h"

namespace ringmaster::agent {
namespace {

using protocol::appendFrame;
using protocol::intactRecordAt;
using protocol::kFrameHeaderBytes;
using protocol::kMaxFramePayload;
using protocol::leadingSeq;
using protocol::nextIntactFrame;

constexpr size_t kFlushThreshold = 1u << 20;

std::string randomId() {
  std::random_device device;
  std::mt19937_64 rng(device());
  char buffer[33];
  std::snprintf(buffer, sizeof buffer, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return buffer;
}

Status preadAll(int fd, void* buffer, size_t size, uint64_t offset) {
  auto* out = static_cast<char*>(buffer);
  while (size > 0) {
    ssize_t n = ::pread(fd, out, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ioError(std::string("journal read failed: ") + std::strerror(errno));
    out += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return Status::ok();
}

Result<std::string> readWholeFile(int fd, uint64_t from, uint64_t size) {
  std::string data(static_cast<size_t>(size - from), '\0');
  RM_RETURN_IF_ERROR(preadAll(fd, data.data(), data.size(), from));
  return data;
}

}  // namespace

Journal::Journal(std::string dir, std::string id, int fd)
    : dir_(std::move(dir)), id_(std::move(id)), fd_(fd) {}

Journal::~Journal() {
  (void)flush();  // nothing is left to tell: the owner's last flush reported any failure
  ::close(fd_);
}

Result<std::unique_ptr<Journal>> Journal::open(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return ioError("cannot create journal directory " + dir + ": " + ec.message());
  std::string id_path = dir + "/journal.id";
  std::string id;
  {
    std::ifstream in(id_path);
    in >> id;
  }
  if (id.empty()) {
    id = randomId();
    RM_RETURN_IF_ERROR(writeFileDurably(id_path, id + "\n"));
  }
  std::string log_path = dir + "/journal.log";
  int fd = ::open(log_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return ioError("cannot open " + log_path + ": " + std::strerror(errno));
  std::unique_ptr<Journal> journal(new Journal(dir, id, fd));
  RM_RETURN_IF_ERROR(journal->scanExisting());
  return journal;
}

Status Journal::scanExisting() {
  struct stat st;
  if (::fstat(fd_, &st) != 0) return ioError(std::string("fstat: ") + std::strerror(errno));
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  last_seq_ = 0;
  index_.clear();
  uint64_t offset = 0;
  std::string payload;
  while (offset + kFrameHeaderBytes <= size) {
    uint32_t header[2];
    RM_RETURN_IF_ERROR(preadAll(fd_, header, kFrameHeaderBytes, offset));
    if (header[0] > kMaxFramePayload || offset + kFrameHeaderBytes + header[0] > size) break;
    payload.resize(header[0]);
    RM_RETURN_IF_ERROR(preadAll(fd_, payload.data(), header[0], offset + kFrameHeaderBytes));
    if (crc32(payload.data(), payload.size()) != header[1]) break;
    // An intact frame out of place (not the next seq: a file pieced together, a writer's bug) is
    // damage too: clients rely on dense seqs.
    if (leadingSeq(payload) != last_seq_ + 1) break;
    if (last_seq_ % kIndexStride == 0) index_.push_back(offset);
    ++last_seq_;
    offset += kFrameHeaderBytes + header[0];
  }
  file_size_ = offset;
  flushed_seq_ = last_seq_;
  if (offset == size) return Status::ok();
  // A crash mid-write tears only the tail: nothing intact follows it. Intact records after the
  // bad frame mean damage (a flipped bit, a bad sector), and cutting there would drop them.
  RM_ASSIGN_OR_RETURN(std::string rest, readWholeFile(fd_, offset, size));
  if (nextIntactFrame(rest, 1, last_seq_)) return repair();
  if (::ftruncate(fd_, static_cast<off_t>(offset)) != 0) {
    return ioError(std::string("cannot cut a torn journal tail: ") + std::strerror(errno));
  }
  report_ = "cut a torn tail of " + std::to_string(size - offset) + " bytes after record " +
            std::to_string(last_seq_) + " (a write that a crash interrupted)";
  return Status::ok();
}

Status Journal::repair() {
  struct stat st;
  if (::fstat(fd_, &st) != 0) return ioError(std::string("fstat: ") + std::strerror(errno));
  RM_ASSIGN_OR_RETURN(std::string data, readWholeFile(fd_, 0, static_cast<uint64_t>(st.st_size)));
  const std::string log_path = dir_ + "/journal.log";
  const std::string kept =
      log_path + ".damaged-" + std::to_string(static_cast<long long>(unixSeconds()));

  // Every intact record in order under its own seq; a JournalDamage in place of each lost one.
  std::string repaired;
  uint64_t seq = 0, lost = 0, first_lost = 0;
  std::string detail;
  size_t at = 0, frame_bytes = 0;
  while (at < data.size()) {
    auto record = intactRecordAt(data, at, &frame_bytes);
    if (record && record->seq() == seq + 1) {
      repaired.append(data, at, frame_bytes);
      seq = record->seq();
      at += frame_bytes;
      continue;
    }
    auto next = nextIntactFrame(data, at + 1, seq);
    if (!next) break;  // a torn tail after the damage
    const uint64_t resumes_at = next->seq;
    if (!detail.empty()) detail += "; ";
    detail += "bytes " + std::to_string(at) + "-" + std::to_string(next->offset) + " unreadable";
    for (uint64_t missing = seq + 1; missing < resumes_at; ++missing) {
      if (first_lost == 0) first_lost = missing;
      ++lost;
      proto::JournalRecord marker;
      marker.set_seq(missing);
      marker.set_time(unixSeconds());
      marker.set_source("journal");
      auto* damage = marker.mutable_journal_damage();
      damage->set_first_lost_seq(missing);
      damage->set_lost_records(1);
      damage->set_kept_at(kept);
      appendFrame(&repaired, marker);
    }
    seq = resumes_at - 1;
    at = next->offset;
  }

  const std::string repaired_path = log_path + ".repaired";
  RM_RETURN_IF_ERROR(writeFileDurably(repaired_path, repaired));
  if (::rename(log_path.c_str(), kept.c_str()) != 0 ||
      ::rename(repaired_path.c_str(), log_path.c_str()) != 0) {
    return ioError("cannot replace the damaged journal " + log_path + ": " + std::strerror(errno));
  }
  const int fd = ::open(log_path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return ioError("cannot open " + log_path + ": " + std::strerror(errno));
  ::close(fd_);
  fd_ = fd;
  id_ = randomId();
  RM_RETURN_IF_ERROR(writeFileDurably(dir_ + "/journal.id", id_ + "\n"));
  RM_RETURN_IF_ERROR(scanExisting());

  // For clients that had read past the damage before it happened.
  proto::JournalRecord summary;
  summary.set_source("journal");
  auto* damage = summary.mutable_journal_damage();
  damage->set_first_lost_seq(first_lost);
  damage->set_lost_records(lost);
  damage->set_kept_at(kept);
  damage->set_detail(detail);
  RM_RETURN_IF_ERROR(append(summary).status());
  RM_RETURN_IF_ERROR(flush());
  report_ = "the journal was damaged (" + detail + "): " + std::to_string(lost) +
            " record(s) lost" +
            (lost ? " (from seq " + std::to_string(first_lost) + ")" : std::string()) +
            ", every other record kept; the damaged file is kept at " + kept +
            ", and the journal continues as " + id_;
  return Status::ok();
}

Result<uint64_t> Journal::append(proto::JournalRecord& record) {
  record.set_seq(last_seq_ + 1);
  if (record.time() == 0) record.set_time(unixSeconds());
  const size_t size = record.ByteSizeLong();
  if (size > kMaxFramePayload) return invalidArgument("journal record too large");
  if (last_seq_ % kIndexStride == 0) index_.push_back(file_size_ + pending_.size());
  const uint32_t length = static_cast<uint32_t>(size);
  const size_t at = pending_.size();
  pending_.resize(at + kFrameHeaderBytes + size);
  char* frame = pending_.data() + at;
  record.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(frame + kFrameHeaderBytes));
  const uint32_t crc = crc32(frame + kFrameHeaderBytes, size);
  std::memcpy(frame, &length, 4);
  std::memcpy(frame + 4, &crc, 4);
  if (at == 0) pending_since_ = Clock::now();
  if (!record.has_metric() && !record.has_health()) pending_urgent_ = true;
  ++last_seq_;
  if (pending_.size() >= kFlushThreshold) RM_RETURN_IF_ERROR(flush());
  return last_seq_;
}

Status Journal::flush() {
  auto failed = [this](const char* what) {
    write_error_ = std::string(what) + std::strerror(errno);
    return ioError(write_error_);
  };
  size_t done = 0;
  while (done < pending_.size()) {
    ssize_t n = ::pwrite(fd_, pending_.data() + done, pending_.size() - done,
                         static_cast<off_t>(file_size_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return failed("journal write failed: ");
    done += static_cast<size_t>(n);
  }
  if (!pending_.empty() && ::fdatasync(fd_) != 0) return failed("journal sync failed: ");
  file_size_ += pending_.size();
  pending_.clear();
  pending_urgent_ = false;
  flushed_seq_ = last_seq_;
  write_error_.clear();
  return Status::ok();
}

Journal::Clock::time_point Journal::flushDueAt() const {
  if (pending_.empty()) return Clock::time_point::max();
  return pending_urgent_ ? pending_since_ : pending_since_ + kSampleDelay;
}

uint64_t Journal::offsetForSeq(uint64_t seq) {
  if (hint_seq_ != 0 && hint_seq_ <= seq && seq - hint_seq_ < kIndexStride) return hint_offset_;
  hint_seq_ = ((seq - 1) / kIndexStride) * kIndexStride + 1;
  hint_offset_ = index_[(seq - 1) / kIndexStride];
  return hint_offset_;
}

Status Journal::read(uint64_t from_seq, size_t max_records, size_t max_bytes,
                     std::vector<std::string>* out) {
  if (from_seq == 0) from_seq = 1;
  if (from_seq > last_seq_ || max_records == 0) return Status::ok();
  RM_RETURN_IF_ERROR(flush());
  uint64_t seq_at = 0;
  uint64_t offset = offsetForSeq(from_seq);
  seq_at = hint_seq_;
  size_t bytes = 0;
  // Read ahead in large chunks: records are small, syscalls are not.
  std::string chunk;
  uint64_t chunk_start = 0;
  auto ensure = [&](uint64_t at, size_t length) -> Status {
    if (at >= chunk_start && at + length <= chunk_start + chunk.size()) return Status::ok();
    if (at + length > file_size_) return ioError("journal frame runs past the end of the file");
    size_t want = std::max<size_t>(length, 1u << 20);
    want = static_cast<size_t>(std::min<uint64_t>(want, file_size_ - at));
    chunk.resize(want);
    chunk_start = at;
    return preadAll(fd_, chunk.data(), want, at);
  };
  while (seq_at <= last_seq_ && out->size() < max_records) {
    RM_RETURN_IF_ERROR(ensure(offset, kFrameHeaderBytes));
    uint32_t length;
    std::memcpy(&length, chunk.data() + (offset - chunk_start), 4);
    if (seq_at >= from_seq) {
      if (!out->empty() && bytes + length > max_bytes) break;
      RM_RETURN_IF_ERROR(ensure(offset + kFrameHeaderBytes, length));
      out->emplace_back(chunk.data() + (offset + kFrameHeaderBytes - chunk_start), length);
      bytes += length;
    }
    offset += kFrameHeaderBytes + length;
    ++seq_at;
  }
  hint_seq_ = seq_at;
  hint_offset_ = offset;
  return Status::ok();
}

void forEachRecord(Journal& journal,
                   const std::function<void(const proto::JournalRecord&)>& visit) {
  std::vector<std::string> batch;
  proto::JournalRecord record;
  for (uint64_t seq = 1; seq <= journal.lastSeq(); seq += batch.size()) {
    batch.clear();
    if (!journal.read(seq, 100000, 64u << 20, &batch).isOk() || batch.empty()) return;
    for (const auto& bytes : batch) {
      if (record.ParseFromString(bytes)) visit(record);
    }
  }
}

}  // namespace ringmaster::agent
