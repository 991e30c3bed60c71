#pragma once
// Where one reader stands in one rank's log, kept the same way by `ringmasterctl logs/submit
// --follow` and the desktop app's log pane: the offset the next read starts at, the read on its
// way, and whether an exited rank's log has been read to its end.
//
// Reads go out through ClusterSession::postReadLog (or ClusterClient::readLog); their answers
// come back to take(). An answer to another read (a rank switched meanwhile) is ignored.

#include <cstdint>
#include <optional>
#include <string>

#include "ringmaster/protocol/ringmaster.pb.h"
#include "ringmaster/util/result.h"

namespace ringmaster::client {

// Which of a rank's output streams a reader shows: its log holds both as they came, and each
// chunk says which bytes came from stderr (LogChunk.stderr_ranges).
enum class LogStream { kBoth, kStdout, kStderr };
// "stdout", "stderr"; nullopt for anything else.
std::optional<LogStream> parseLogStream(const std::string& name);
// The bytes of chunk.data() that came from `stream`, in order.
std::string bytesOfStream(const proto::LogChunk& chunk, LogStream stream);

class LogCursor {
 public:
  LogCursor() = default;
  LogCursor(std::string agent, int rank) : agent_(std::move(agent)), rank_(rank) {}

  const std::string& agent() const { return agent_; }
  int rank() const { return rank_; }
  uint64_t offset() const { return offset_; }
  // The size of the log when the agent last answered (0 before the first answer).
  uint64_t size() const { return size_; }
  // The rank has exited and every byte of its log has been read: nothing more will come.
  bool complete() const { return complete_; }
  // Read up to the size the agent reported: a new read would only wait for new output.
  bool caughtUp() const { return answered_ && offset_ >= size_; }
  bool reading() const { return in_flight_ != 0; }
  // Whether a read should be sent now: none on its way, and something may still come.
  bool wantsRead() const { return !reading() && !complete_; }

  // A read from offset() went out under `token`.
  void sent(uint64_t token) { in_flight_ = token; }
  // The answer to a read. Returns the new text, or nullopt for an answer to another read. An
  // error ends the read (the next one may be sent) and is returned as the status.
  std::optional<Result<std::string>> take(uint64_t token, const Result<proto::LogChunk>& chunk);
  // Starts reading further on (e.g. the last megabytes of a long log).
  void skipTo(uint64_t offset) { offset_ = offset; }
  // What take() returns from now on: both streams (the default), or one. Offsets stay the log's.
  void setStream(LogStream stream) { stream_ = stream; }
  LogStream stream() const { return stream_; }

 private:
  std::string agent_;
  int rank_ = -1;
  uint64_t offset_ = 0;
  uint64_t size_ = 0;
  uint64_t in_flight_ = 0;
  bool answered_ = false;
  bool complete_ = false;
  LogStream stream_ = LogStream::kBoth;
};

}  // namespace ringmaster::client
