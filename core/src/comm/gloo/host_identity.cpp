#include "comm/gloo/host_identity.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

namespace ringmaster::comm::gloo {
namespace {

std::string namespaceOf(const char* path) {
  struct stat info {};
  if (stat(path, &info) != 0) return "?";
  return std::to_string(info.st_dev) + ":" + std::to_string(info.st_ino);
}

}  // namespace

std::string hostIdentity() {
  char host[65] = {};
  gethostname(host, sizeof host - 1);
  std::string boot;
  std::getline(std::ifstream("/proc/sys/kernel/random/boot_id"), boot);
  // The network namespace too: ranks whose agents stand apart on the network (containers, a
  // test's partitioned agents) must fail apart as their TCP would, not go on through memory.
  std::string identity = std::string(host) + "|" + boot + "|" + namespaceOf("/proc/self/ns/ipc") +
                         "|" + namespaceOf("/proc/self/ns/pid") + "|" +
                         namespaceOf("/proc/self/ns/net");
  identity.resize(std::min(identity.size(), kHostIdentityBytes));
  return identity;
}

}  // namespace ringmaster::comm::gloo
