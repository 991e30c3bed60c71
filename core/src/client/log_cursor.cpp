#include "ringmaster/client/log_cursor.h"

#include <algorithm>

namespace ringmaster::client {

std::optional<LogStream> parseLogStream(const std::string& name) {
  if (name == "stdout") return LogStream::kStdout;
  if (name == "stderr") return LogStream::kStderr;
  return std::nullopt;
}

std::string bytesOfStream(const proto::LogChunk& chunk, LogStream stream) {
  const std::string& data = chunk.data();
  if (stream == LogStream::kBoth) return data;
  const uint64_t first = chunk.offset(), last = first + data.size();
  std::string out;
  uint64_t at = first;  // the stdout bytes from here to the next stderr range
  const auto keep = [&](uint64_t begin, uint64_t end) {
    if (begin < end) out.append(data, static_cast<size_t>(begin - first), end - begin);
  };
  const auto& ranges = chunk.stderr_ranges();
  for (int i = 0; i + 1 < ranges.size(); i += 2) {
    // Clipped to the chunk and to what is left of it: an agent's ranges are not trusted blindly.
    const uint64_t begin = std::clamp(ranges[i], at, last);
    const uint64_t end = std::clamp(ranges[i + 1], begin, last);
    if (stream == LogStream::kStdout) {
      keep(at, begin);
    } else {
      keep(begin, end);
    }
    at = end;
  }
  if (stream == LogStream::kStdout) keep(at, last);
  return out;
}

std::optional<Result<std::string>> LogCursor::take(uint64_t token,
                                                   const Result<proto::LogChunk>& chunk) {
  if (token == 0 || token != in_flight_) return std::nullopt;
  in_flight_ = 0;
  if (!chunk.isOk()) return Result<std::string>(chunk.status());
  if (chunk->offset() != offset_) {
    // The agent answers from where it was asked; anything else is not this cursor's read.
    return Result<std::string>(protocolError("log chunk of rank " + std::to_string(rank_) +
                                             " starts at " + std::to_string(chunk->offset()) +
                                             ", expected " + std::to_string(offset_)));
  }
  answered_ = true;
  offset_ += chunk->data().size();
  size_ = std::max(chunk->size(), offset_);
  complete_ = chunk->finished() && offset_ >= size_;
  return Result<std::string>(bytesOfStream(*chunk, stream_));
}

}  // namespace ringmaster::client
