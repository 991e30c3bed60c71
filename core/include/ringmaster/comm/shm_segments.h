#pragma once
// The names of the shared-memory segments that ranks on one host share for their collectives
// (comm/shm): "/ringmaster-<pid of the rank that made it>-<random>". Rank 0 unlinks its segment
// as soon as every rank has mapped it, but a rank 0 killed before that leaves it in /dev/shm
// (RAM, reserved by posix_fallocate, until reboot). The agent removes what a rank of its made
// when that rank is gone.

#include <sys/types.h>

#include <string>

namespace ringmaster::comm {

// The name a segment made by process `creator` starts with ("/ringmaster-412-").
std::string segmentPrefix(pid_t creator);

// Unlinks every segment `creator` made that is still named (it has exited: nobody else makes a
// segment under its pid until it is reaped). Returns how many.
int removeSegmentsOf(pid_t creator);

}  // namespace ringmaster::comm
