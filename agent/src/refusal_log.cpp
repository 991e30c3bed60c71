#include "refusal_log.h"

namespace ringmaster::agent {

RefusalLog::RefusalLog(Logger log, int lines_per_window, Clock::duration window)
    : log_(std::move(log)), lines_per_window_(lines_per_window), window_(window) {}

void RefusalLog::refused(const std::string& line, Clock::time_point now) {
  if (now - window_start_ >= window_) {
    window_start_ = now;
    logged_ = 0;
  }
  if (logged_ >= lines_per_window_) {
    ++left_out_;
    return;
  }
  ++logged_;
  if (left_out_ == 0) return log_(line);
  log_(line + " (and " + std::to_string(left_out_) +
       " more refused connection(s) before it, not logged)");
  left_out_ = 0;
}

}  // namespace ringmaster::agent
