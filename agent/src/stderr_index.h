#pragma once
// Which bytes of a rank's log it wrote to stderr. The log holds stdout and stderr as they came
// (each read from a pipe of its own); the index beside it ("<log>.stderr") holds the [begin, end)
// log offsets of the stderr bytes as little-endian uint64 pairs, in order, touching ranges merged
// (a traceback written in pieces is one range). An empty or missing index: no stderr byte.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ringmaster::agent {

std::string stderrIndexPath(const std::string& log_path);

class StderrIndexWriter {
 public:
  StderrIndexWriter() = default;
  ~StderrIndexWriter();
  StderrIndexWriter(StderrIndexWriter&& other) noexcept;
  StderrIndexWriter& operator=(StderrIndexWriter&& other) noexcept;
  StderrIndexWriter(const StderrIndexWriter&) = delete;
  StderrIndexWriter& operator=(const StderrIndexWriter&) = delete;

  // Creates (empties) the index of the log at `log_path`; not through a symbolic link (ranks may
  // own their job's directory). False when it cannot: the log is then all stdout to readers.
  bool open(const std::string& log_path);
  // The log's bytes [begin, end) came from stderr; begin is at or after the last range's end.
  void add(uint64_t begin, uint64_t end);
  void close();

 private:
  int fd_ = -1;
  uint64_t last_begin_ = 0, last_end_ = 0;
  int64_t last_at_ = -1;  // file offset of the last pair; -1 before the first
};

// The stderr ranges of the log at `log_path` that overlap [from, to), clipped to it, in order:
// a binary search in the index, then a read of the ranges in the window.
std::vector<std::pair<uint64_t, uint64_t>> readStderrRanges(const std::string& log_path,
                                                            uint64_t from, uint64_t to);

}  // namespace ringmaster::agent
