#include "ringmaster/protocol/journal_frame.h"

#include <cstring>

#include "ringmaster/util/crc32.h"

namespace ringmaster::protocol {

void appendFrame(std::string* out, const proto::JournalRecord& record) {
  const std::string payload = record.SerializeAsString();
  const uint32_t header[2] = {static_cast<uint32_t>(payload.size()),
                              crc32(payload.data(), payload.size())};
  out->append(reinterpret_cast<const char*>(header), kFrameHeaderBytes);
  out->append(payload);
}

std::optional<uint32_t> framePayloadBytes(std::string_view data, size_t at) {
  if (at + kFrameHeaderBytes > data.size()) return std::nullopt;
  uint32_t length;
  std::memcpy(&length, data.data() + at, sizeof length);
  return length;
}

std::optional<proto::JournalRecord> intactRecordAt(std::string_view data, size_t at,
                                                   size_t* frame_bytes) {
  const std::optional<uint32_t> length = framePayloadBytes(data, at);
  if (!length || *length < 2 || *length > kMaxFramePayload ||
      at + kFrameHeaderBytes + *length > data.size()) {
    return std::nullopt;
  }
  uint32_t crc;
  std::memcpy(&crc, data.data() + at + 4, sizeof crc);
  const char* payload = data.data() + at + kFrameHeaderBytes;
  if (crc32(payload, *length) != crc) return std::nullopt;
  proto::JournalRecord record;
  if (!record.ParseFromArray(payload, static_cast<int>(*length)) || record.seq() == 0) {
    return std::nullopt;
  }
  *frame_bytes = kFrameHeaderBytes + *length;
  return record;
}

std::optional<IntactFrame> nextIntactFrame(std::string_view data, size_t from, uint64_t after_seq) {
  size_t frame_bytes;
  for (size_t at = from; at + kFrameHeaderBytes <= data.size(); ++at) {
    auto record = intactRecordAt(data, at, &frame_bytes);
    if (record && record->seq() > after_seq) return IntactFrame{at, record->seq()};
  }
  return std::nullopt;
}

uint64_t leadingSeq(std::string_view payload) {
  if (payload.size() < 2 || payload[0] != 0x08) return 0;
  uint64_t value = 0;
  for (size_t i = 1; i < payload.size() && i <= 10; ++i) {
    const auto byte = static_cast<uint8_t>(payload[i]);
    value |= static_cast<uint64_t>(byte & 0x7f) << (7 * (i - 1));
    if (!(byte & 0x80)) return value;
  }
  return 0;
}

}  // namespace ringmaster::protocol
