#pragma once
// The ZeroMQ socket settings of DESIGN.md §4 and the CurveZMQ roles of §5, in one place.

#include <cstdint>
#include <optional>
#include <string>

#include "ringmaster/security/keys.h"
#include "ringmaster/util/result.h"

namespace ringmaster::net {

// ZAP domain every Ringmaster CURVE server authenticates in.
inline constexpr const char* kZapDomain = "ringmaster";
// libzmq's DRAFT option ZMQ_ZAP_ENFORCE_DOMAIN: with it a CURVE server whose ZAP handler is
// missing refuses every client instead of admitting any key (checked with libzmq 4.3.4).
inline constexpr int kZapEnforceDomainOption = 93;

// How long a connection may take to complete its ZMTP/CURVE handshake before it is dropped.
inline constexpr int kHandshakeIntervalMs = 5000;

// ZMTP heartbeats: a PING every interval, a connection silent for 3 intervals after one (or for
// 5 of the peer's intervals, its TTL) is dropped. A client's pings let the agent drop a dead
// client within 5 s; the agent's own, rarer, cover peers that send none.
inline constexpr int kClientHeartbeatMs = 1000;
inline constexpr int kServerHeartbeatMs = 5000;

// LINGER 0, MAXMSGSIZE, ZMTP heartbeats every `heartbeat_ms` (0: none), HANDSHAKE_IVL,
// RECONNECT_IVL/MAX.
Status applyCommonOptions(void* socket, int heartbeat_ms = kClientHeartbeatMs);

// CURVE server with the agent's key pair, ZAP domain set and enforced.
Status makeCurveServer(void* socket, const security::KeyPair& server);

// CURVE client pinned to `server_public_key`; IMMEDIATE so nothing queues for a dead peer.
Status makeCurveClient(void* socket, const security::KeyPair& client,
                       const std::string& server_public_key);

// One event from a zmq_socket_monitor PAIR socket (both its frames read), without waiting;
// nullopt when none is queued. `value` is the fd, error or protocol code the event carries.
struct MonitorEvent {
  uint16_t event = 0;
  uint32_t value = 0;
};
std::optional<MonitorEvent> readMonitorEvent(void* monitor);

// "zmq_setsockopt(ZMQ_LINGER): Invalid argument"-style status from zmq_errno().
Status zmqError(const std::string& what);

}  // namespace ringmaster::net
