#include "peer_probe.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "ringmaster/client/cluster_config.h"

namespace ringmaster::agent {

bool refusesConnections(const std::string& endpoint, std::chrono::milliseconds timeout) {
  const std::string host = client::endpointHost(endpoint);
  const size_t colon = endpoint.rfind(':');
  if (host.empty() || colon < std::string("tcp://").size()) return false;  // "tcp:" is no port
  const std::string port = endpoint.substr(colon + 1);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0 || !found) return false;
  bool refused = false;
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    int error = 0;
    if (::connect(fd, found->ai_addr, found->ai_addrlen) != 0) error = errno;
    if (error == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      error = ETIMEDOUT;
      if (::poll(&p, 1, static_cast<int>(timeout.count())) == 1) {
        socklen_t length = sizeof error;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
      }
    }
    refused = error == ECONNREFUSED;
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return refused;
}

}  // namespace ringmaster::agent
