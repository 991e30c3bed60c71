#pragma once
// LogMatcher: where a text occurs in a log read chunk by chunk (a rank's log of hundreds of
// megabytes, paged from its agent), ignoring ASCII case as the log pane's search does. A match
// cut between two chunks is found when the second arrives. Matches do not overlap ("aaaa" holds
// "aa" twice), as a find-next walk would step through them.
//
// Not thread-safe; feed chunks in order from one thread at a time (the app feeds it on a worker
// thread, one chunk after another).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ringmaster::client {

class LogMatcher {
 public:
  explicit LogMatcher(std::string_view needle);

  // The log's next bytes, which start at `offset` (the end of the previous chunk). Appends to
  // `matches` the log offsets at which the matches they complete start.
  void feed(uint64_t offset, std::string_view bytes, std::vector<uint64_t>* matches);
  const std::string& needle() const { return needle_; }

 private:
  std::string needle_;      // lower-cased
  std::string carry_;       // the previous chunk's last bytes (lower-cased): a cut match's start
  uint64_t carry_at_ = 0;   // the log offset of carry_[0]
  uint64_t next_free_ = 0;  // matches start here or later (no overlap with the last one)
  std::string buffer_;      // carry_ + the chunk, lower-cased; kept to reuse its memory
};

}  // namespace ringmaster::client
