#include "user_connections.h"

#include <sys/socket.h>

#include "connection_monitor.h"

namespace ringmaster::agent {

void UserConnections::seen(const std::string& user, int fd) {
  if (user.empty() || fd < 0) return;
  std::string& peer = by_user_[user][fd];
  if (peer.empty()) peer = peerAddressOf(fd);
}

void UserConnections::closeWhere(const std::function<bool(const std::string&)>& revoked,
                                 const std::function<void(const std::string&, size_t)>& closed) {
  std::erase_if(by_user_, [&](const auto& entry) {
    if (!revoked(entry.first)) return false;
    size_t count = 0;
    for (const auto& [fd, peer] : entry.second) {
      // libzmq owns the socket: shutting it down makes libzmq drop the connection.
      if (!peer.empty() && peerAddressOf(fd) == peer && ::shutdown(fd, SHUT_RDWR) == 0) ++count;
    }
    closed(entry.first, count);
    return true;
  });
}

}  // namespace ringmaster::agent
