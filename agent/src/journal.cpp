#include "journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

namespace ringmaster::agent {
namespace {

constexpr size_t kHeaderBytes = 8;
constexpr uint32_t kMaxRecordBytes = 16u << 20;
constexpr size_t kFlushThreshold = 1u << 20;

std::array<uint32_t, 256> makeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

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

}  // namespace

uint32_t crc32(const void* data, size_t size) {
  static const std::array<uint32_t, 256> table = makeCrcTable();
  uint32_t c = 0xFFFFFFFFu;
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < size; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

Journal::Journal(std::string id, int fd) : id_(std::move(id)), fd_(fd) {}

Journal::~Journal() {
  flush();
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
    std::ofstream out(id_path);
    out << id << "\n";
    if (!out) return ioError("cannot write " + id_path);
  }
  std::string log_path = dir + "/journal.log";
  int fd = ::open(log_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return ioError("cannot open " + log_path + ": " + std::strerror(errno));
  std::unique_ptr<Journal> journal(new Journal(id, fd));
  RM_RETURN_IF_ERROR(journal->scanExisting());
  return journal;
}

Status Journal::scanExisting() {
  struct stat st;
  if (::fstat(fd_, &st) != 0) return ioError(std::string("fstat: ") + std::strerror(errno));
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  uint64_t offset = 0;
  std::string payload;
  while (offset + kHeaderBytes <= size) {
    uint32_t header[2];
    RM_RETURN_IF_ERROR(preadAll(fd_, header, kHeaderBytes, offset));
    if (header[0] > kMaxRecordBytes || offset + kHeaderBytes + header[0] > size) break;
    payload.resize(header[0]);
    RM_RETURN_IF_ERROR(preadAll(fd_, payload.data(), header[0], offset + kHeaderBytes));
    if (crc32(payload.data(), payload.size()) != header[1]) break;
    if (last_seq_ % kIndexStride == 0) index_.push_back(offset);
    ++last_seq_;
    offset += kHeaderBytes + header[0];
  }
  if (offset != size && ::ftruncate(fd_, static_cast<off_t>(offset)) != 0) {
    return ioError(std::string("cannot cut a torn journal tail: ") + std::strerror(errno));
  }
  file_size_ = offset;
  return Status::ok();
}

Result<uint64_t> Journal::append(proto::JournalRecord& record) {
  record.set_seq(last_seq_ + 1);
  if (record.time() == 0) record.set_time(nowSeconds());
  const size_t size = record.ByteSizeLong();
  if (size > kMaxRecordBytes) return invalidArgument("journal record too large");
  if (last_seq_ % kIndexStride == 0) index_.push_back(file_size_ + pending_.size());
  const uint32_t length = static_cast<uint32_t>(size);
  const size_t at = pending_.size();
  pending_.resize(at + kHeaderBytes + size);
  char* frame = pending_.data() + at;
  record.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(frame + kHeaderBytes));
  const uint32_t crc = crc32(frame + kHeaderBytes, size);
  std::memcpy(frame, &length, 4);
  std::memcpy(frame + 4, &crc, 4);
  ++last_seq_;
  if (pending_.size() >= kFlushThreshold) RM_RETURN_IF_ERROR(flush());
  return last_seq_;
}

Status Journal::flush() {
  size_t done = 0;
  while (done < pending_.size()) {
    ssize_t n = ::pwrite(fd_, pending_.data() + done, pending_.size() - done,
                         static_cast<off_t>(file_size_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ioError(std::string("journal write failed: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  file_size_ += pending_.size();
  pending_.clear();
  return Status::ok();
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
    RM_RETURN_IF_ERROR(ensure(offset, kHeaderBytes));
    uint32_t length;
    std::memcpy(&length, chunk.data() + (offset - chunk_start), 4);
    if (seq_at >= from_seq) {
      if (!out->empty() && bytes + length > max_bytes) break;
      RM_RETURN_IF_ERROR(ensure(offset + kHeaderBytes, length));
      out->emplace_back(chunk.data() + (offset + kHeaderBytes - chunk_start), length);
      bytes += length;
    }
    offset += kHeaderBytes + length;
    ++seq_at;
  }
  hint_seq_ = seq_at;
  hint_offset_ = offset;
  return Status::ok();
}

}  // namespace ringmaster::agent
