#include "ringmaster/client/agent_connection.h"

#include <sys/resource.h>
#include <zmq.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>

#include "ringmaster/net/socket_options.h"
#include "ringmaster/protocol/codec.h"

namespace ringmaster::client {
namespace {

using Clock = std::chrono::steady_clock;

int64_t msSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

constexpr int kMonitoredEvents =
    ZMQ_EVENT_CONNECTED | ZMQ_EVENT_CONNECT_RETRIED | ZMQ_EVENT_DISCONNECTED |
    ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
    ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL;

std::atomic<uint64_t> monitor_counter{0};

// The errno of a handshake that failed because the peer closed the connection (libzmq reports
// EPIPE for an orderly close, ECONNRESET for a reset); any other value is a handshake timeout.
bool peerHungUp(uint32_t error) { return error == EPIPE || error == ECONNRESET; }

}  // namespace

// libzmq allows 1,023 sockets a context unless told otherwise, and each AgentConnection takes
// three (its DEALER and the monitor's pair): a cluster session of 256 agents (two connections
// each) could open only 170 and never heard the others' metrics. The process's open-file limit
// is the real bound.
ZmqContext::ZmqContext() : context_(zmq_ctx_new()) {
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur == RLIM_INFINITY) return;
  const rlim_t wanted = std::min<rlim_t>(files.rlim_cur, zmq_ctx_get(context_, ZMQ_SOCKET_LIMIT));
  if (wanted > 1023) zmq_ctx_set(context_, ZMQ_MAX_SOCKETS, static_cast<int>(wanted));
}
ZmqContext::~ZmqContext() { zmq_ctx_term(context_); }

AgentConnection::AgentConnection(AgentEndpoint agent, std::string client_key, void* socket,
                                 void* monitor)
    : agent_(std::move(agent)),
      client_public_key_(std::move(client_key)),
      socket_(socket),
      monitor_(monitor) {}

AgentConnection::~AgentConnection() {
  zmq_socket_monitor(socket_, nullptr, 0);
  zmq_close(monitor_);
  zmq_close(socket_);
}

Result<std::unique_ptr<AgentConnection>> AgentConnection::connect(
    const ZmqContext& context, const AgentEndpoint& agent, const security::KeyPair& client_keys,
    int heartbeat_ms) {
  void* socket = zmq_socket(context.get(), ZMQ_DEALER);
  if (!socket) return net::zmqError("zmq_socket(DEALER)");
  auto fail = [&](Status status) {
    zmq_close(socket);
    return Status(status.code(), "agent '" + agent.name + "': " + status.message());
  };
  if (Status s = net::applyCommonOptions(socket, heartbeat_ms); !s.isOk()) return fail(s);
  if (Status s = net::makeCurveClient(socket, client_keys, agent.server_key); !s.isOk()) {
    return fail(s);
  }
  std::string monitor_endpoint =
      "inproc://ringmaster-monitor-" + std::to_string(monitor_counter.fetch_add(1));
  if (zmq_socket_monitor(socket, monitor_endpoint.c_str(), kMonitoredEvents) != 0) {
    return fail(net::zmqError("zmq_socket_monitor"));
  }
  void* monitor = zmq_socket(context.get(), ZMQ_PAIR);
  int linger = 0;
  zmq_setsockopt(monitor, ZMQ_LINGER, &linger, sizeof linger);
  if (zmq_connect(monitor, monitor_endpoint.c_str()) != 0) {
    zmq_close(monitor);
    return fail(net::zmqError("connecting the socket monitor"));
  }
  if (zmq_connect(socket, agent.endpoint.c_str()) != 0) {
    zmq_close(monitor);
    return fail(net::zmqError("endpoint '" + agent.endpoint + "'"));
  }
  return std::unique_ptr<AgentConnection>(
      new AgentConnection(agent, client_keys.public_key, socket, monitor));
}

void AgentConnection::drainMonitor() {
  while (std::optional<net::MonitorEvent> event = net::readMonitorEvent(monitor_)) {
    if (event->event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
      handshake_ok_ = true;
      handshake_failure_ = 0;
    }
    // libzmq reports CONNECT_RETRIED whenever it schedules a reconnect: after a dropped
    // connection, and after a refused one. Two in a row with no connection between them mean
    // that nothing listens now, whatever the last handshake said.
    if (event->event == ZMQ_EVENT_CONNECTED) connected_since_retry_ = true;
    if (event->event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) up_ = true;
    if (event->event == ZMQ_EVENT_DISCONNECTED) {
      ++drops_;
      up_ = false;
    }
    if (event->event == ZMQ_EVENT_CONNECT_RETRIED) {
      if (!connected_since_retry_) handshake_failure_ = 0;
      connected_since_retry_ = false;
    }
    if (event->event & (ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                        ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)) {
      handshake_ok_ = false;
      handshake_failure_ = event->event;
      handshake_errno_ = event->value;
    }
  }
}

uint64_t AgentConnection::drops() {
  drainMonitor();
  return drops_;
}

bool AgentConnection::up() {
  drainMonitor();
  return up_;
}

bool AgentConnection::alive() { return up() || handshaking(); }

std::string AgentConnection::describeState() {
  drainMonitor();
  if (up_) return "its connection is up";
  if (handshaking()) return "its connection is in its handshake";
  if (handshake_failure_ != 0) return "its handshake failed (" + explainSilence(0).message() + ")";
  if (drops_ > 0) {
    return "its connection dropped " + std::to_string(drops_) +
           " time(s): no answer to heartbeats, or closed";
  }
  return "its connection never came up";
}

bool AgentConnection::handshaking() {
  drainMonitor();
  return connected_since_retry_ && !up_ && handshake_failure_ == 0;
}

bool AgentConnection::handshakeRefused() {
  drainMonitor();
  return !handshake_ok_ && handshake_failure_ == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
}

Status AgentConnection::explainSilence(int timeout_ms) const {
  std::string who = "agent '" + agent_.name + "' at " + agent_.endpoint;
  switch (handshake_failure_) {
    case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
      return Status(ErrorCode::kUnauthorized,
                    who + " rejected this client's key " + client_public_key_ +
                        " (on that host run: ringmaster-agent authorize --state-dir DIR -- " +
                        client_public_key_ + ")");
    case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
      // A peer that is alive and holds another key reads our HELLO and hangs up at once; a
      // stopped, hung or overloaded agent (its kernel still accepts the connection) lets the
      // handshake time out. Only the first is a changed key.
      if (!peerHungUp(handshake_errno_)) {
        return timeoutError(who + " is not answering: it accepts the connection but completes no " +
                            "handshake within " + std::to_string(net::kHandshakeIntervalMs) +
                            " ms (stopped, hung or overloaded?)");
      }
      [[fallthrough]];
    case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
      return Status(ErrorCode::kUnauthorized,
                    who + " failed the CURVE handshake: its key does not match server_key " +
                        agent_.server_key +
                        " in the cluster file (check `ringmaster-agent "
                        "pubkey` on that host)");
    default:
      break;
  }
  if (!handshake_ok_) {
    return unavailable("cannot reach " + who + " within " + std::to_string(timeout_ms) +
                       " ms (is ringmaster-agent running and listening there?)");
  }
  return timeoutError(who + " did not answer within " + std::to_string(timeout_ms) + " ms");
}

Status AgentConnection::explainDrop() const {
  return unavailable("agent '" + agent_.name + "' at " + agent_.endpoint +
                     " dropped the connection before it answered (it stopped answering " +
                     "heartbeats for " + std::to_string(3 * net::kClientHeartbeatMs / 1000) +
                     " s: restarted, stopped or overloaded?)");
}

Status AgentConnection::send(proto::Envelope& request, int timeout_ms) {
  request.set_request_id(next_request_id_++);
  std::string frame = protocol::encode(request);
  if (static_cast<int64_t>(frame.size()) > protocol::kMaxRequestBytes) {
    return invalidArgument("a '" + std::string(protocol::bodyName(request)) + "' request of " +
                           std::to_string(frame.size() >> 10) + " KiB is larger than the " +
                           std::to_string(protocol::kMaxRequestBytes >> 20) +
                           " MiB an agent accepts");
  }
  // With ZMQ_IMMEDIATE the send waits until the CURVE handshake has completed.
  zmq_setsockopt(socket_, ZMQ_SNDTIMEO, &timeout_ms, sizeof timeout_ms);
  if (zmq_send(socket_, frame.data(), frame.size(), timeout_ms == 0 ? ZMQ_DONTWAIT : 0) < 0) {
    const int error = zmq_errno();
    drainMonitor();
    if (error == EAGAIN) {
      return timeout_ms == 0 ? unavailable("not connected yet") : explainSilence(timeout_ms);
    }
    return net::zmqError("sending to agent '" + agent_.name + "'");
  }
  return Status::ok();
}

std::optional<Result<proto::Envelope>> AgentConnection::receive(uint64_t request_id) {
  zmq_msg_t frame;
  zmq_msg_init(&frame);
  if (zmq_msg_recv(&frame, socket_, ZMQ_DONTWAIT) < 0) {
    zmq_msg_close(&frame);
    return std::nullopt;
  }
  bool more = zmq_msg_more(&frame);
  auto decoded = protocol::decode(zmq_msg_data(&frame), zmq_msg_size(&frame));
  zmq_msg_close(&frame);
  while (more) {  // agents send single frames; drop anything else
    zmq_msg_t extra;
    zmq_msg_init(&extra);
    zmq_msg_recv(&extra, socket_, ZMQ_DONTWAIT);
    more = zmq_msg_more(&extra);
    zmq_msg_close(&extra);
  }
  if (!decoded.isOk()) {
    return Result<proto::Envelope>(
        Status(decoded.status().code(),
               "agent '" + agent_.name + "' sent a bad reply: " + decoded.status().message()));
  }
  if (decoded->request_id() != request_id) return std::nullopt;
  if (decoded->has_error()) {
    return Result<proto::Envelope>(protocol::statusFromError(decoded->error()));
  }
  return decoded;
}

Result<proto::Envelope> AgentConnection::call(proto::Envelope request, int timeout_ms) {
  std::vector<AgentConnection*> one{this};
  std::vector<proto::Envelope> requests;
  requests.push_back(std::move(request));
  return std::move(callAll(one, std::move(requests), timeout_ms)[0]);
}

std::vector<Result<proto::Envelope>> callAll(const std::vector<AgentConnection*>& connections,
                                             std::vector<proto::Envelope> requests, int timeout_ms,
                                             const Patience& patience) {
  // Every agent is handled at its own pace: a request goes out as soon as that agent's
  // connection is up (POLLOUT; ZMQ_IMMEDIATE queues nothing for a peer that is not connected),
  // and one unreachable agent never delays the others' replies.
  enum class Phase { kUnsent, kSent, kDone };
  const auto start = Clock::now();
  const size_t n = connections.size();
  std::vector<Result<proto::Envelope>> results(n, Result<proto::Envelope>(timeoutError("pending")));
  std::vector<Phase> phase(n, Phase::kUnsent);
  std::vector<uint64_t> drops_at_send(n, 0);
  size_t open = n;
  std::vector<zmq_pollitem_t> items;
  std::vector<size_t> owner;
  int64_t next_report = timeout_ms;
  while (open > 0) {
    const int64_t elapsed = msSince(start);
    int64_t remaining = timeout_ms - elapsed;
    if (remaining <= 0) {
      // Past the timeout only a busy agent is waited for (see Patience).
      if (elapsed >= patience.bound_ms) break;
      std::vector<std::string> busy;
      for (size_t i = 0; i < n; ++i) {
        if (phase[i] == Phase::kDone) continue;
        const bool busy_here = phase[i] == Phase::kSent
                                   ? connections[i]->drops() == drops_at_send[i]
                                   : connections[i]->handshaking();
        if (busy_here) {
          busy.push_back(connections[i]->agent().name);
          continue;
        }
        results[i] = phase[i] == Phase::kSent ? connections[i]->explainDrop()
                                              : connections[i]->explainSilence(timeout_ms);
        phase[i] = Phase::kDone;
        --open;
      }
      if (open == 0) break;
      if (patience.waiting && elapsed >= next_report) {
        patience.waiting(busy, n, elapsed);
        next_report = elapsed + patience.report_every_ms;
      }
      remaining = std::min<int64_t>(patience.bound_ms - elapsed, next_report - elapsed);
    }
    items.clear();
    owner.clear();
    for (size_t i = 0; i < n; ++i) {
      if (phase[i] == Phase::kDone) continue;
      short events = phase[i] == Phase::kUnsent ? ZMQ_POLLOUT : ZMQ_POLLIN;
      items.push_back({connections[i]->socket(), 0, events, 0});
      owner.push_back(i);
    }
    if (zmq_poll(items.data(), static_cast<int>(items.size()), remaining) < 0) {
      if (zmq_errno() == EINTR) continue;
      break;
    }
    for (size_t k = 0; k < items.size(); ++k) {
      const size_t i = owner[k];
      if (phase[i] == Phase::kUnsent && (items[k].revents & ZMQ_POLLOUT)) {
        Status sent = connections[i]->send(requests[i], 0);
        if (sent.isOk()) {
          phase[i] = Phase::kSent;
          drops_at_send[i] = connections[i]->drops();
        } else if (sent.code() != ErrorCode::kUnavailable) {
          results[i] = sent;
          phase[i] = Phase::kDone;
          --open;
        }
      } else if (phase[i] == Phase::kSent && (items[k].revents & ZMQ_POLLIN)) {
        auto reply = connections[i]->receive(requests[i].request_id());
        if (!reply) continue;
        results[i] = std::move(*reply);
        phase[i] = Phase::kDone;
        --open;
      }
    }
  }
  const int waited_ms = std::max(timeout_ms, patience.bound_ms);
  for (size_t i = 0; i < n; ++i) {
    if (phase[i] == Phase::kDone) continue;
    connections[i]->drainMonitor();
    results[i] = connections[i]->explainSilence(waited_ms);
    if (waited_ms > timeout_ms && phase[i] == Phase::kSent) {
      results[i] = Status(results[i].status().code(),
                          results[i].status().message() +
                              " (its connection stayed up: it is alive but too busy to answer)");
    }
  }
  return results;
}

}  // namespace ringmaster::client
