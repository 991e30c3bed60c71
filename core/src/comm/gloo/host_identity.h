#pragma once
// What makes two processes able to share memory segments and see each other's pids: the same
// host name, the same boot (/proc/sys/kernel/random/boot_id) and the same IPC, PID and network
// namespaces. Ranks whose identities are equal may use a shared-memory path (ShmGroup).

#include <string>

namespace ringmaster::comm::gloo {

inline constexpr size_t kHostIdentityBytes = 160;

// At most kHostIdentityBytes, as a fixed-size exchange needs.
std::string hostIdentity();

}  // namespace ringmaster::comm::gloo
