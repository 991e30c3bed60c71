#pragma once
// CRC-32 (IEEE 802.3, as zlib's crc32()): the journal's frames and the checkpoints' trailers.

#include <cstddef>
#include <cstdint>

namespace ringmaster {

uint32_t crc32(const void* data, size_t size);

}  // namespace ringmaster
