#include "ringmaster/util/crc32.h"

#include <zlib.h>

#include <algorithm>
#include <climits>

namespace ringmaster {

// zlib's CRC-32 (the same polynomial, reflection and final xor as the table-driven loop that was
// here, so every journal frame and checkpoint written before still checks): zlib computes it a
// word at a time, about 5x the bytewise loop, which a 10 MB checkpoint spent 25 ms in.
uint32_t crc32(const void* data, size_t size) {
  uLong c = ::crc32(0L, Z_NULL, 0);
  const auto* p = static_cast<const Bytef*>(data);
  while (size > 0) {
    const auto n = static_cast<uInt>(std::min<size_t>(size, UINT_MAX));
    c = ::crc32(c, p, n);
    p += n;
    size -= n;
  }
  return static_cast<uint32_t>(c);
}

}  // namespace ringmaster
