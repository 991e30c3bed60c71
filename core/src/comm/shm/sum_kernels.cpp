#include "comm/shm/sum_kernels.h"

#include <algorithm>

namespace ringmaster::comm::shm {
namespace {

// Elements per block: the partial sums of a block stay in L1 while the inputs stream past.
constexpr size_t kBlock = 1024;

// The last step of a sum: out[i] = (sum[i] + last[i]) * scale (and also[i]). `ivdep`: `out`
// may be `last` itself, which GCC would otherwise only vectorize behind an overlap check that
// fails for exactly that case.
void finish(float* out, float* also, const float* sum, const float* last, size_t n, float scale) {
  if (also == nullptr) {
#pragma GCC ivdep
    for (size_t i = 0; i < n; ++i) out[i] = (sum[i] + last[i]) * scale;
    return;
  }
#pragma GCC ivdep
  for (size_t i = 0; i < n; ++i) {
    const float value = (sum[i] + last[i]) * scale;
    out[i] = value;
    also[i] = value;
  }
}

}  // namespace

void sumScaled(float* out, float* also, const float* const* in, int k, size_t n, float scale) {
  if (k == 2) {  // the common case: one pass
    finish(out, also, in[0], in[1], n, scale);
    return;
  }
  for (size_t lo = 0; lo < n; lo += kBlock) {
    const size_t m = std::min(kBlock, n - lo);
    float sum[kBlock];
    const float* a = in[0] + lo;
    const float* b = in[1] + lo;
    for (size_t i = 0; i < m; ++i) sum[i] = a[i] + b[i];
    for (int r = 2; r + 1 < k; ++r) {
      const float* c = in[r] + lo;
      for (size_t i = 0; i < m; ++i) sum[i] += c[i];
    }
    finish(out + lo, also == nullptr ? nullptr : also + lo, sum, in[k - 1] + lo, m, scale);
  }
}

}  // namespace ringmaster::comm::shm
