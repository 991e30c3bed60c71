#include "stderr_index.h"

#include <endian.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace ringmaster::agent {
namespace {

constexpr size_t kPairBytes = 16;

void encodePair(uint64_t begin, uint64_t end, unsigned char* out) {
  const uint64_t le[2] = {htole64(begin), htole64(end)};
  std::copy_n(reinterpret_cast<const unsigned char*>(le), kPairBytes, out);
}

bool readPair(int fd, uint64_t index, uint64_t* begin, uint64_t* end) {
  uint64_t le[2];
  if (::pread(fd, le, kPairBytes, static_cast<off_t>(index * kPairBytes)) !=
      static_cast<ssize_t>(kPairBytes)) {
    return false;
  }
  *begin = le64toh(le[0]);
  *end = le64toh(le[1]);
  return true;
}

}  // namespace

std::string stderrIndexPath(const std::string& log_path) { return log_path + ".stderr"; }

StderrIndexWriter::~StderrIndexWriter() { close(); }

StderrIndexWriter::StderrIndexWriter(StderrIndexWriter&& other) noexcept {
  *this = std::move(other);
}

StderrIndexWriter& StderrIndexWriter::operator=(StderrIndexWriter&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    last_begin_ = other.last_begin_;
    last_end_ = other.last_end_;
    last_at_ = std::exchange(other.last_at_, -1);
  }
  return *this;
}

bool StderrIndexWriter::open(const std::string& log_path) {
  close();
  fd_ = ::open(stderrIndexPath(log_path).c_str(),
               O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
  return fd_ >= 0;
}

void StderrIndexWriter::add(uint64_t begin, uint64_t end) {
  if (fd_ < 0 || end <= begin) return;
  unsigned char pair[kPairBytes];
  if (last_at_ >= 0 && begin == last_end_) {
    last_end_ = end;  // the same stream went on: one range
    encodePair(last_begin_, last_end_, pair);
    (void)::pwrite(fd_, pair, kPairBytes, static_cast<off_t>(last_at_));
    return;
  }
  last_at_ = last_at_ < 0 ? 0 : last_at_ + static_cast<int64_t>(kPairBytes);
  last_begin_ = begin;
  last_end_ = end;
  encodePair(begin, end, pair);
  (void)::pwrite(fd_, pair, kPairBytes, static_cast<off_t>(last_at_));
}

void StderrIndexWriter::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  last_at_ = -1;
}

std::vector<std::pair<uint64_t, uint64_t>> readStderrRanges(const std::string& log_path,
                                                            uint64_t from, uint64_t to) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  const int fd = ::open(stderrIndexPath(log_path).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return out;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || from >= to) {
    ::close(fd);
    return out;
  }
  const uint64_t pairs = static_cast<uint64_t>(st.st_size) / kPairBytes;
  // The first range that ends after `from`: ranges are in order and do not overlap.
  uint64_t lo = 0, hi = pairs;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    uint64_t begin = 0, end = 0;
    if (!readPair(fd, mid, &begin, &end)) break;
    if (end <= from) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  uint64_t block[2 * 256];  // read 256 pairs at a time
  for (uint64_t i = lo; i < pairs;) {
    const uint64_t n = std::min<uint64_t>(256, pairs - i);
    const ssize_t got = ::pread(fd, block, n * kPairBytes, static_cast<off_t>(i * kPairBytes));
    if (got != static_cast<ssize_t>(n * kPairBytes)) break;
    for (uint64_t k = 0; k < n; ++k) {
      const uint64_t begin = le64toh(block[2 * k]), end = le64toh(block[2 * k + 1]);
      if (begin >= to) {
        ::close(fd);
        return out;
      }
      if (end > begin) out.emplace_back(std::max(begin, from), std::min(end, to));
    }
    i += n;
  }
  ::close(fd);
  return out;
}

}  // namespace ringmaster::agent
