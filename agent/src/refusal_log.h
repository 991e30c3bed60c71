#pragma once
// Refused connections are logged one line each, with the peer's address and the reason, but at
// most `lines_per_window` lines per window: a flood of them cannot fill the disk. How many were
// left out is said on the next line that is logged.
//
// Not thread-safe: each thread that refuses connections (the ZAP handler, the agent's loop) has
// its own.

#include <chrono>
#include <functional>
#include <string>

namespace ringmaster::agent {

class RefusalLog {
 public:
  using Logger = std::function<void(const std::string&)>;
  using Clock = std::chrono::steady_clock;

  explicit RefusalLog(Logger log, int lines_per_window = 20,
                      Clock::duration window = std::chrono::seconds(10));

  void refused(const std::string& line, Clock::time_point now = Clock::now());

 private:
  Logger log_;
  int lines_per_window_;
  Clock::duration window_;
  Clock::time_point window_start_{};
  int logged_ = 0;
  long left_out_ = 0;
};

}  // namespace ringmaster::agent
