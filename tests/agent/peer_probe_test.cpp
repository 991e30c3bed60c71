// refusesConnections tells an agent that is down (nothing listens on its port) from one that may
// only be cut off. Real sockets on loopback.
#include "peer_probe.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace ringmaster::agent {
namespace {

// A loopback TCP socket bound to a free port; listening when asked.
struct BoundSocket {
  explicit BoundSocket(bool listening) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
    port = ntohs(address.sin_port);
    if (listening) {
      EXPECT_EQ(::listen(fd, 4), 0);
    }
  }
  ~BoundSocket() { ::close(fd); }
  std::string endpoint() const { return "tcp://127.0.0.1:" + std::to_string(port); }
  int fd = -1;
  int port = 0;
};

constexpr auto kTimeout = std::chrono::milliseconds(500);

TEST(PeerProbe, APortNobodyListensOnRefuses) {
  BoundSocket closed(false);  // bound, not listening: the kernel refuses connections
  EXPECT_TRUE(refusesConnections(closed.endpoint(), kTimeout));
}

TEST(PeerProbe, AListeningAgentDoesNotRefuse) {
  BoundSocket open(true);
  EXPECT_FALSE(refusesConnections(open.endpoint(), kTimeout));
}

TEST(PeerProbe, WhatCannotBeProbedIsNotCalledDown) {
  EXPECT_FALSE(refusesConnections("ipc:///tmp/agent.sock", kTimeout));
  EXPECT_FALSE(refusesConnections("tcp://127.0.0.1", kTimeout));
}

}  // namespace
}  // namespace ringmaster::agent
