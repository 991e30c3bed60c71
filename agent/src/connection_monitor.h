#pragma once
// Watches the connections of the agent's client socket (zmq_socket_monitor) and logs each one
// refused before ZAP could see its key, with the peer's address and why: a plaintext client, a
// client that pinned another server key, a handshake never finished. (Keys not in
// authorized_keys are logged by the ZAP handler, which sees them.) Lines go through a
// RefusalLog, so a flood of such connections cannot fill the disk.
//
// Driven by the agent's loop: poll socket() for ZMQ_POLLIN, then call onReadable().

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "refusal_log.h"
#include "ringmaster/util/result.h"

namespace ringmaster::agent {

// "address:port" of the peer of a connected socket; empty when it has none (closed).
std::string peerAddressOf(int fd);

class ConnectionMonitor {
 public:
  // Call before `socket` binds, so that no connection goes unseen.
  static Result<std::unique_ptr<ConnectionMonitor>> attach(void* context, void* socket,
                                                           RefusalLog::Logger log);
  ~ConnectionMonitor();

  void* socket() const { return monitor_; }
  void onReadable();
  // Told the fd of each connection libzmq closed.
  void setOnDisconnected(std::function<void(int fd)> on_disconnected) {
    on_disconnected_ = std::move(on_disconnected);
  }

 private:
  ConnectionMonitor(void* watched, void* monitor, RefusalLog::Logger log);

  void* watched_;
  void* monitor_;
  RefusalLog refusals_;
  // fd -> "address:port", read when libzmq reports the connection accepted. The fd may be gone
  // by then (a handshake that fails at once): the address is then unknown.
  std::map<int, std::string> peers_;
  // Why the last handshake failed. libzmq has one I/O thread here, which reports a failure and
  // then its connection's DISCONNECTED (carrying the fd) with nothing in between.
  std::string failure_;
  std::function<void(int fd)> on_disconnected_;
};

}  // namespace ringmaster::agent
