#include "ringmaster/net/socket_options.h"

#include <zmq.h>

#include <cstdint>
#include <cstring>

#include "ringmaster/protocol/codec.h"

namespace ringmaster::net {
namespace {

Status setInt(void* socket, int option, int value, const char* name) {
  if (zmq_setsockopt(socket, option, &value, sizeof value) != 0) {
    return zmqError(std::string("zmq_setsockopt(") + name + ")");
  }
  return Status::ok();
}

Status setString(void* socket, int option, const std::string& value, const char* name) {
  if (zmq_setsockopt(socket, option, value.data(), value.size()) != 0) {
    return zmqError(std::string("zmq_setsockopt(") + name + ")");
  }
  return Status::ok();
}

}  // namespace

Status zmqError(const std::string& what) {
  return Status(ErrorCode::kIo, what + ": " + zmq_strerror(zmq_errno()));
}

std::optional<MonitorEvent> readMonitorEvent(void* monitor) {
  zmq_msg_t frame;
  zmq_msg_init(&frame);
  if (zmq_msg_recv(&frame, monitor, ZMQ_DONTWAIT) < 0) {
    zmq_msg_close(&frame);
    return std::nullopt;
  }
  MonitorEvent event;
  if (zmq_msg_size(&frame) >= 6) {  // uint16 event, uint32 value (libzmq's byte order)
    std::memcpy(&event.event, zmq_msg_data(&frame), 2);
    std::memcpy(&event.value, static_cast<const char*>(zmq_msg_data(&frame)) + 2, 4);
  }
  bool more = zmq_msg_more(&frame);
  while (more) {  // the endpoint
    zmq_msg_close(&frame);
    zmq_msg_init(&frame);
    if (zmq_msg_recv(&frame, monitor, ZMQ_DONTWAIT) < 0) break;
    more = zmq_msg_more(&frame);
  }
  zmq_msg_close(&frame);
  return event;
}

Status applyCommonOptions(void* socket, int heartbeat_ms) {
  RM_RETURN_IF_ERROR(setInt(socket, ZMQ_LINGER, 0, "ZMQ_LINGER"));
  int64_t max_size = protocol::kMaxFrameBytes;
  if (zmq_setsockopt(socket, ZMQ_MAXMSGSIZE, &max_size, sizeof max_size) != 0) {
    return zmqError("zmq_setsockopt(ZMQ_MAXMSGSIZE)");
  }
  if (heartbeat_ms > 0) {
    RM_RETURN_IF_ERROR(setInt(socket, ZMQ_HEARTBEAT_IVL, heartbeat_ms, "ZMQ_HEARTBEAT_IVL"));
    RM_RETURN_IF_ERROR(
        setInt(socket, ZMQ_HEARTBEAT_TIMEOUT, 3 * heartbeat_ms, "ZMQ_HEARTBEAT_TIMEOUT"));
    RM_RETURN_IF_ERROR(setInt(socket, ZMQ_HEARTBEAT_TTL, 5 * heartbeat_ms, "ZMQ_HEARTBEAT_TTL"));
  }
  RM_RETURN_IF_ERROR(setInt(socket, ZMQ_HANDSHAKE_IVL, kHandshakeIntervalMs, "ZMQ_HANDSHAKE_IVL"));
  RM_RETURN_IF_ERROR(setInt(socket, ZMQ_RECONNECT_IVL, 1000, "ZMQ_RECONNECT_IVL"));
  RM_RETURN_IF_ERROR(setInt(socket, ZMQ_RECONNECT_IVL_MAX, 30000, "ZMQ_RECONNECT_IVL_MAX"));
  return Status::ok();
}

Status makeCurveServer(void* socket, const security::KeyPair& server) {
  RM_RETURN_IF_ERROR(setInt(socket, ZMQ_CURVE_SERVER, 1, "ZMQ_CURVE_SERVER"));
  RM_RETURN_IF_ERROR(
      setString(socket, ZMQ_CURVE_SECRETKEY, server.secret_key, "ZMQ_CURVE_SECRETKEY"));
  RM_RETURN_IF_ERROR(setString(socket, ZMQ_ZAP_DOMAIN, kZapDomain, "ZMQ_ZAP_DOMAIN"));
  return setInt(socket, kZapEnforceDomainOption, 1, "ZMQ_ZAP_ENFORCE_DOMAIN");
}

Status makeCurveClient(void* socket, const security::KeyPair& client,
                       const std::string& server_public_key) {
  if (!security::isValidKey(server_public_key)) {
    return invalidArgument("server key '" + server_public_key +
                           "' is not a CURVE public key (40 characters of Z85)");
  }
  RM_RETURN_IF_ERROR(
      setString(socket, ZMQ_CURVE_SERVERKEY, server_public_key, "ZMQ_CURVE_SERVERKEY"));
  RM_RETURN_IF_ERROR(
      setString(socket, ZMQ_CURVE_PUBLICKEY, client.public_key, "ZMQ_CURVE_PUBLICKEY"));
  RM_RETURN_IF_ERROR(
      setString(socket, ZMQ_CURVE_SECRETKEY, client.secret_key, "ZMQ_CURVE_SECRETKEY"));
  return setInt(socket, ZMQ_IMMEDIATE, 1, "ZMQ_IMMEDIATE");
}

}  // namespace ringmaster::net
