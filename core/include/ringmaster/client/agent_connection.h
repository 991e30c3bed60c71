#pragma once
// One authenticated DEALER connection from a client to one agent, with request/reply calls that
// time out and explain why (unreachable, key rejected, wrong server key, no answer).
// Not thread-safe: one thread owns a connection (and its socket), as ZeroMQ requires.

#include <functional>
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
  // `heartbeat_ms`: ZMTP pings (see applyCommonOptions); 0: none.
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
  // The Status of a request whose connection dropped before its reply came.
  Status explainDrop() const;
  // Whether the agent's ZAP refused this connection's handshake and none succeeded since
  // (drains the monitor). libzmq never retries a refused handshake: the connection is dead until
  // it is opened again. A gang peer refuses until it has admitted the job's key.
  bool handshakeRefused();
  // How often the connection has dropped since it was made (drains the monitor): a request sent
  // before a drop is lost with it, its reply routed to a peer that is gone.
  uint64_t drops();
  // Whether the agent's host accepted the connection and its handshake is under way, none having
  // failed (drains the monitor): the agent is there but slow to complete it. A stopped agent
  // fails it within net::kHandshakeIntervalMs.
  bool handshaking();
  // Whether a handshake succeeded and the connection has not dropped since (drains the monitor).
  // With ZMTP heartbeats on, an agent whose process is stopped or gone drops it within
  // 3 heartbeat intervals; one whose main loop is only busy keeps it (its I/O threads answer).
  bool up();
  // up() or handshaking(): the agent's process holds the connection, however busy its loop.
  bool alive();
  // The state of the connection in a few words, for a message that says why an agent counts as
  // gone: "up", "in its handshake", "dropped (no answer to heartbeats)", "handshake failed", ...
  std::string describeState();

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
  uint64_t drops_ = 0;                  // DISCONNECTED events
  bool up_ = false;                     // a handshake succeeded and no drop since
};

// How callAll waits past its timeout for an agent that is alive but busy: its request went out
// and its connection has stayed up since (libzmq's heartbeats would have dropped it within 3 s
// of silence from its I/O threads), so its main loop is only behind, e.g. on a host loaded with
// a thousand ranks starting; or its handshake is under way (handshaking()). It is waited for up to
// `bound_ms` in all, and `waiting` hears, every `report_every_ms` from the timeout on, which agents
// are still awaited.
struct Patience {
  int bound_ms = 0;  // at most timeout_ms: no waiting past it
  int report_every_ms = 2000;
  std::function<void(const std::vector<std::string>& agents, size_t of, int64_t waited_ms)> waiting;
};

// One request per connection, sent together, replies gathered until `timeout_ms`. Result i
// answers request i.
std::vector<Result<proto::Envelope>> callAll(const std::vector<AgentConnection*>& connections,
                                             std::vector<proto::Envelope> requests, int timeout_ms,
                                             const Patience& patience = {});

}  // namespace ringmaster::client
