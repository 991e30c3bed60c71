#pragma once
// The wall clock as the journal, the history and the protocol carry it: seconds since the Unix
// epoch, as a double (microseconds survive until the year 2255).

#include <chrono>

namespace ringmaster {

inline double unixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace ringmaster
