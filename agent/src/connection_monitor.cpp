#include "connection_monitor.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <zmq.h>

#include <atomic>
#include <cstdio>

#include "ringmaster/net/socket_options.h"

namespace ringmaster::agent {
namespace {

constexpr int kWatchedEvents = ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED |
                               ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL;

std::atomic<unsigned> monitor_counter{0};

std::string protocolFailure(uint32_t code) {
  switch (code) {
    case ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH:
      return "not CURVE (a plaintext client, or another security mechanism)";
    case ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC:
      return "its CURVE hello does not decrypt: it pinned another server key than this agent's";
    default:
      char hex[16];
      std::snprintf(hex, sizeof hex, "0x%08x", code);
      return std::string("ZMTP protocol error ") + hex + " (not a Ringmaster client?)";
  }
}

}  // namespace

std::string peerAddressOf(int fd) {
  sockaddr_storage address{};
  socklen_t size = sizeof address;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) return "";
  char host[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&address);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    return std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (address.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "";
}

Result<std::unique_ptr<ConnectionMonitor>> ConnectionMonitor::attach(void* context, void* socket,
                                                                     RefusalLog::Logger log) {
  const std::string endpoint =
      "inproc://ringmaster-agent-monitor-" + std::to_string(monitor_counter.fetch_add(1));
  if (zmq_socket_monitor(socket, endpoint.c_str(), kWatchedEvents) != 0) {
    return net::zmqError("zmq_socket_monitor");
  }
  void* monitor = zmq_socket(context, ZMQ_PAIR);
  int linger = 0;
  zmq_setsockopt(monitor, ZMQ_LINGER, &linger, sizeof linger);
  if (zmq_connect(monitor, endpoint.c_str()) != 0) {
    Status failed = net::zmqError("connecting the socket monitor");
    zmq_close(monitor);
    zmq_socket_monitor(socket, nullptr, 0);
    return failed;
  }
  return std::unique_ptr<ConnectionMonitor>(new ConnectionMonitor(socket, monitor, std::move(log)));
}

ConnectionMonitor::ConnectionMonitor(void* watched, void* monitor, RefusalLog::Logger log)
    : watched_(watched), monitor_(monitor), refusals_(std::move(log)) {}

ConnectionMonitor::~ConnectionMonitor() {
  zmq_socket_monitor(watched_, nullptr, 0);
  zmq_close(monitor_);
}

void ConnectionMonitor::onReadable() {
  while (std::optional<net::MonitorEvent> event = net::readMonitorEvent(monitor_)) {
    const int fd = static_cast<int>(event->value);
    switch (event->event) {
      case ZMQ_EVENT_ACCEPTED:
        peers_[fd] = peerAddressOf(fd);
        break;
      case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
        failure_ = protocolFailure(event->value);
        break;
      case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
        failure_ = "it closed, or sent no handshake within 5 s";
        break;
      case ZMQ_EVENT_DISCONNECTED: {
        auto peer = peers_.find(fd);
        std::string address = peer == peers_.end() || peer->second.empty()
                                  ? "an address gone before it was read"
                                  : peer->second;
        if (peer != peers_.end()) peers_.erase(peer);
        if (!failure_.empty())
          refusals_.refused("refused a connection from " + address + ": " + failure_);
        failure_.clear();
        if (on_disconnected_) on_disconnected_(fd);
        break;
      }
    }
  }
}

}  // namespace ringmaster::agent
