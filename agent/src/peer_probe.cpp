#include "peer_probe.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace ringmaster::agent {

bool refusesConnections(const std::string& endpoint, std::chrono::milliseconds timeout) {
  const std::string scheme = "tcp://";
  if (endpoint.rfind(scheme, 0) != 0) return false;
  const std::string address = endpoint.substr(scheme.size());
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);  // [::1]
  }
  const std::string port = address.substr(colon + 1);
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
