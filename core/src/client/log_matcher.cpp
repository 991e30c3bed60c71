#include "ringmaster/client/log_matcher.h"

#include <algorithm>
#include <cstring>

namespace ringmaster::client {
namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

LogMatcher::LogMatcher(std::string_view needle) : needle_(needle) {
  std::transform(needle_.begin(), needle_.end(), needle_.begin(), lower);
}

void LogMatcher::feed(uint64_t offset, std::string_view bytes, std::vector<uint64_t>* matches) {
  if (needle_.empty() || bytes.empty()) return;
  if (offset != carry_at_ + carry_.size()) carry_.clear();  // not the next chunk: start afresh
  const uint64_t buffer_at = offset - carry_.size();
  buffer_.assign(carry_);
  const size_t chunk_start = buffer_.size();
  buffer_.resize(chunk_start + bytes.size());
  std::transform(bytes.begin(), bytes.end(), buffer_.begin() + chunk_start, lower);

  // memmem finds the first byte with memchr (vectorised): a few GB/s on plain text.
  const char* data = buffer_.data();
  size_t from = next_free_ > buffer_at ? static_cast<size_t>(next_free_ - buffer_at) : 0;
  while (from + needle_.size() <= buffer_.size()) {
    const void* hit = memmem(data + from, buffer_.size() - from, needle_.data(), needle_.size());
    if (!hit) break;
    const size_t at = static_cast<size_t>(static_cast<const char*>(hit) - data);
    matches->push_back(buffer_at + at);
    from = at + needle_.size();
  }
  next_free_ = std::max(next_free_, buffer_at + from);
  // A match cut at the end starts in the last needle-1 bytes: keep them for the next chunk.
  const size_t keep = std::min(buffer_.size(), needle_.size() - 1);
  carry_.assign(buffer_, buffer_.size() - keep, keep);
  carry_at_ = buffer_at + buffer_.size() - keep;
}

}  // namespace ringmaster::client
