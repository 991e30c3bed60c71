#pragma once
// One authenticated DEALER connection from a client to one agent, with request/reply calls that
// time out and explain why (unreachable, key rejected, wrong server key, no answer).
// Not thread-safe: one thread owns a connection (and its socket), as ZeroMQ requires.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/net/socket_options.h"
#include "ringmaster/protocol/ringmaster.pb.h"
#include "ringmaster/security/keys.h"
#include "ringmaster/util/result.h"

namespace ringmaster::client {

struct AgentEndpoint {
  std::string name;
  std::string endpoint;    // tcp://HOST:PORT
  std::string server_key;  // the agent's public key (pinned)
};

// Owns a zmq context; share one per thread that makes connections.
class ZmqContext {
 public:
  ZmqContext();
  ~ZmqContext();
  ZmqContext(const ZmqContext&) = delete;
  ZmqContext& operator=(const ZmqContext&) = delete;
  void* get() const { return context_; }

 private:
  void* context_;
};

class AgentConnection {
 public:
  // `heartbeat_ms`: ZMTP pings (see applyCommonOptions); 0 for a connection whose user sends
  // its own beats (an agent's to the other agents of a job, see gang_coordinator.h).
  static Result<std::unique_ptr<AgentConnection>> connect(
      const ZmqContext& context, const AgentEndpoint& agent, const security::KeyPair& client_keys,
      int heartbeat_ms = net::kClientHeartbeatMs);
  ~AgentConnection();

  // Sends `request` (request id and version filled in) and waits for its reply. A reply that is
  // an error envelope comes back as its Status. Stale replies of earlier calls are dropped.
  Result<proto::Envelope> call(proto::Envelope request, int timeout_ms);

  // Split form of call() so one thread can keep several agents busy at once (see callAll).
  // Stamps a fresh request id. With timeout_ms == 0 it never blocks: kUnavailable (EAGAIN) means
  // the connection is not up yet; poll the socket for ZMQ_POLLOUT and try again.
  Status send(proto::Envelope& request, int timeout_ms);
  // Reads one frame without blocking: the reply to `request_id` (or its error), or nullopt when
  // nothing was there or the frame answered an earlier, abandoned request.
  std::optional<Result<proto::Envelope>> receive(uint64_t request_id);

  const AgentEndpoint& agent() const { return agent_; }
  void* socket() const { return socket_; }
  void* monitor() const { return monitor_; }
  // Reads pending monitor events; remembers the last handshake outcome for diagnostics.
  void drainMonitor();
  // The Status explaining why no reply came within `timeout_ms`.
  Status explainSilence(int timeout_ms) const;
  // Whether the agent's ZAP refused this connection's handshake and none succeeded since
  // (drains the monitor). libzmq never retries a refused handshake: the connection is dead until
  // it is opened again. A gang peer refuses until it has admitted the job's key.
  bool handshakeRefused();

 private:
  AgentConnection(AgentEndpoint agent, std::string client_key, void* socket, void* monitor);

  AgentEndpoint agent_;
  std::string client_public_key_;
  void* socket_;
  void* monitor_;
  uint64_t next_request_id_ = 1;
  // The last ZMQ_EVENT_HANDSHAKE_FAILED_* and its errno, until a handshake succeeds or a connect
  // is refused.
  int handshake_failure_ = 0;
  uint32_t handshake_errno_ = 0;
  bool handshake_ok_ = false;
  bool connected_since_retry_ = false;  // a CONNECTED event since the last CONNECT_RETRIED
};

// One request per connection, sent together, replies gathered until `timeout_ms`. Result i
// answers request i.
std::vector<Result<proto::Envelope>> callAll(const std::vector<AgentConnection*>& connections,
                                             std::vector<proto::Envelope> requests, int timeout_ms);

}  // namespace ringmaster::client
