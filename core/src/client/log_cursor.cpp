#include "ringmaster/client/log_cursor.h"

#include <algorithm>

namespace ringmaster::client {

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
  return Result<std::string>(chunk->data());
}

}  // namespace ringmaster::client
