#include "repeat_filter.h"

namespace ringmaster::agent {
namespace {

std::string repeatedLine(long times) {
  return "(the line above repeated " + std::to_string(times) + " more time" +
         (times == 1 ? "" : "s") + ")";
}

}  // namespace

std::vector<std::string> RepeatFilter::take(const std::string& line, Clock::time_point now) {
  std::vector<std::string> out;
  if (line == last_ && !last_.empty()) {
    ++repeats_;
    if (now >= say_repeats_at_) {
      out.push_back(repeatedLine(repeats_));
      repeats_ = 0;
      say_repeats_at_ = now + every_;
    }
    return out;
  }
  if (repeats_ > 0) out.push_back(repeatedLine(repeats_));
  out.push_back(line);
  last_ = line;
  repeats_ = 0;
  say_repeats_at_ = now + every_;
  return out;
}

}  // namespace ringmaster::agent
