#pragma once
// The arithmetic of the shared-memory allreduce: the ranks' buffers summed in rank order and
// scaled, so that every rank that sums the same values gets the same floats, bit for bit.
// Compiled at -O3 apart from the rest (core/CMakeLists.txt): at -O2 GCC 12 leaves these loops
// scalar, and a 64 KB allreduce of 2 ranks then took 26 us instead of 11.

#include <cstddef>

namespace ringmaster::comm::shm {

// out[i] = (in[0][i] + in[1][i] + ... + in[k-1][i]) * scale, summed left to right, for k >= 2,
// and the same into also[i] unless `also` is null. `out` may be one of the inputs (element i
// is read before it is written); otherwise no two of the buffers overlap.
void sumScaled(float* out, float* also, const float* const* in, int k, size_t n, float scale);

}  // namespace ringmaster::comm::shm
