#pragma once
// The journal's file format, for everyone who reads or writes journal files: the agent's own
// journal (agent/src/journal.h) and the clients that read a Slurm job's journals from its
// directory (client/slurm_sync.h).
//
// A journal file is frames of [u32 payload length][u32 CRC-32 of payload][payload] (host byte
// order), payload = a serialized proto::JournalRecord whose seq (never 0) is one more than the
// frame's before it.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ringmaster/protocol/ringmaster.pb.h"

namespace ringmaster::protocol {

constexpr size_t kFrameHeaderBytes = 8;
constexpr uint32_t kMaxFramePayload = 16u << 20;  // a larger record is refused when appended

// Appends `record` framed.
void appendFrame(std::string* out, const proto::JournalRecord& record);

// The payload length the header at `at` claims; nullopt when the header is not all in `data`.
std::optional<uint32_t> framePayloadBytes(std::string_view data, size_t at);

// The record framed at `at` when the frame is all in `data`, its length is possible, its CRC
// matches and its payload parses with a seq; nullopt otherwise. `frame_bytes` gets the frame's
// size (header and payload).
std::optional<proto::JournalRecord> intactRecordAt(std::string_view data, size_t at,
                                                   size_t* frame_bytes);

// The first intact frame at or after `from` whose record's seq is above `after_seq`: where a
// reader resumes after damage. Nothing intact after a bad frame means a tail still being written
// (or torn by a crash), not damage.
struct IntactFrame {
  size_t offset;
  uint64_t seq;
};
std::optional<IntactFrame> nextIntactFrame(std::string_view data, size_t from, uint64_t after_seq);

// The seq of a serialized record without parsing all of it: protobuf writes fields in number
// order, so a record's seq (field 1, a varint) is its first bytes. 0 when it is not there.
uint64_t leadingSeq(std::string_view payload);

}  // namespace ringmaster::protocol
