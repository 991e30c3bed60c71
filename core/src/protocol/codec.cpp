#include "ringmaster/protocol/codec.h"

namespace ringmaster::protocol {

std::string encode(proto::Envelope& envelope) {
  envelope.set_version(kProtocolVersion);
  std::string out;
  envelope.SerializeToString(&out);
  return out;
}

Result<proto::Envelope> decode(const void* data, size_t size) {
  if (size == 0) return protocolError("empty frame");
  if (static_cast<int64_t>(size) > kMaxFrameBytes) {
    return protocolError("frame of " + std::to_string(size) + " bytes exceeds the limit of " +
                         std::to_string(kMaxFrameBytes));
  }
  proto::Envelope envelope;
  if (!envelope.ParseFromArray(data, static_cast<int>(size))) {
    return protocolError("frame of " + std::to_string(size) +
                         " bytes is not a valid envelope (truncated or garbage)");
  }
  if (envelope.version() != kProtocolVersion) {
    return Status(ErrorCode::kUnsupportedVersion,
                  "protocol version " + std::to_string(envelope.version()) +
                      " is not supported (this side speaks version " +
                      std::to_string(kProtocolVersion) + ")");
  }
  if (envelope.body_case() == proto::Envelope::BODY_NOT_SET) {
    return protocolError("envelope has no body (unknown message type from a newer peer?)");
  }
  return envelope;
}

proto::Envelope makeError(uint64_t request_id, ErrorCode code, const std::string& message,
                          const std::string& host, const std::string& job, int rank) {
  proto::Envelope envelope;
  envelope.set_request_id(request_id);
  proto::Error* error = envelope.mutable_error();
  error->set_code(static_cast<proto::ErrorCode>(code));
  error->set_message(message);
  error->set_host(host);
  error->set_job(job);
  error->set_rank(rank);
  return envelope;
}

Status statusFromError(const proto::Error& error) {
  std::string message;
  if (!error.host().empty()) message += "agent '" + error.host() + "': ";
  message += error.message();
  auto code = static_cast<ErrorCode>(error.code());
  if (code == ErrorCode::kOk) code = ErrorCode::kInternal;  // an error frame always means failure
  return Status(code, message);
}

const char* bodyName(const proto::Envelope& envelope) {
  const auto* field =
      proto::Envelope::descriptor()->FindFieldByNumber(static_cast<int>(envelope.body_case()));
  return field ? field->name().c_str() : "none";
}

}  // namespace ringmaster::protocol
