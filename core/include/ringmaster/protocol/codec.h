#pragma once
// Envelope framing: every message on the wire is one ZeroMQ frame holding a serialized
// proto::Envelope that carries the protocol version and a request id.

#include <cstddef>
#include <cstdint>
#include <string>

#include "ringmaster/protocol/ringmaster.pb.h"
#include "ringmaster/util/result.h"

namespace ringmaster::protocol {

inline constexpr uint32_t kProtocolVersion = 1;
// ZMQ_MAXMSGSIZE on every socket: a larger frame closes the connection before it is buffered.
inline constexpr int64_t kMaxFrameBytes = 64ll << 20;
// Replies stay well under the frame limit (journal batches, log chunks).
inline constexpr uint32_t kMaxReplyBytes = 16u << 20;
// Requests are small: the largest, a launch, carries a job of at most 4 MiB (its spec and
// command line). Agents take no larger frame (ZMQ_MAXMSGSIZE on their client socket), so that
// a client cannot make one hold 64 MiB per frame; clients refuse to send one.
inline constexpr int64_t kMaxRequestBytes = 8ll << 20;

// Serializes with the current version stamped in.
std::string encode(proto::Envelope& envelope);

// Parses one frame. Garbage, truncation, a missing body or another protocol version give an
// error naming what is wrong; never throws, never aborts.
Result<proto::Envelope> decode(const void* data, size_t size);

proto::Envelope makeError(uint64_t request_id, ErrorCode code, const std::string& message,
                          const std::string& host = "", const std::string& job = "", int rank = -1);

// An error envelope as a Status: "host 'a1': NOT_FOUND: no such job 'x'".
Status statusFromError(const proto::Error& error);

const char* bodyName(const proto::Envelope& envelope);

}  // namespace ringmaster::protocol
