#pragma once
// The agent's log writes a line that repeats the one before only once: while it repeats (a full
// disk failing every flush, several times a second) it is counted, and "(the line above repeated
// N more times)" is written when another line comes, and every `every` while it goes on, so the
// log still says that it is happening without filling the disk it is about.
//
// Not thread-safe: its owner serializes take().

#include <chrono>
#include <string>
#include <vector>

namespace ringmaster::agent {

class RepeatFilter {
 public:
  using Clock = std::chrono::steady_clock;

  explicit RepeatFilter(Clock::duration every = std::chrono::seconds(30)) : every_(every) {}

  // What to write for `line` now: nothing while it repeats the previous one.
  std::vector<std::string> take(const std::string& line, Clock::time_point now = Clock::now());

 private:
  Clock::duration every_;
  std::string last_;
  long repeats_ = 0;  // of last_, not yet said
  Clock::time_point say_repeats_at_{};
};

}  // namespace ringmaster::agent
