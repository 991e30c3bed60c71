#include "ringmaster/util/half.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define RM_HALF_F16C 1
#endif

#include <bit>
#include <cmath>

namespace ringmaster {
namespace {

#if RM_HALF_F16C
// F16C and AVX, and an OS that saves the AVX registers (which __builtin_cpu_supports("avx")
// checks). The F16C bit is read from CPUID itself: GCC 10, which builds the bundle for older
// glibc, has no __builtin_cpu_supports("f16c").
bool hasF16c() {
  static const bool yes = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0 &&
           __builtin_cpu_supports("avx");
  }();
  return yes;
}

constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

// Eight at a time with F16C; the caller finishes the last n % 8 in software. Returns how many
// were done.
__attribute__((target("avx,f16c"))) size_t floatsToHalvesF16c(const float* in, uint16_t* out,
                                                              size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), kRound);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  return i;
}

__attribute__((target("avx,f16c"))) size_t halvesToFloatsF16c(const uint16_t* in, float* out,
                                                              size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  return i;
}

__attribute__((target("avx,f16c"))) size_t sumHalvesF16c(uint16_t* out, const uint16_t* a,
                                                         const uint16_t* b, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256 y = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_add_ps(x, y), kRound));
  }
  return i;
}

__attribute__((target("avx,f16c"))) size_t scaleHalvesF16c(uint16_t* data, size_t n, float scale) {
  const __m256 s = _mm256_set1_ps(scale);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    auto* at = reinterpret_cast<__m128i*>(data + i);
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(at));
    _mm_storeu_si128(at, _mm256_cvtps_ph(_mm256_mul_ps(x, s), kRound));
  }
  return i;
}

#else
bool hasF16c() { return false; }
size_t floatsToHalvesF16c(const float*, uint16_t*, size_t) { return 0; }
size_t halvesToFloatsF16c(const uint16_t*, float*, size_t) { return 0; }
size_t sumHalvesF16c(uint16_t*, const uint16_t*, const uint16_t*, size_t) { return 0; }
size_t scaleHalvesF16c(uint16_t*, size_t, float) { return 0; }
#endif

}  // namespace

uint16_t floatToHalf(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN (a quiet NaN keeps a payload bit)
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (abs < 0x38800000u) {  // below the smallest normal half: a subnormal (or zero)
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // under half the smallest
    const uint32_t exponent = abs >> 23;
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - exponent;  // 14..24
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  // Normal: rebias the exponent (127 -> 15), round the mantissa's 13 dropped bits to even.
  uint32_t half = ((abs - 0x38000000u) >> 13);
  const uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // may carry into the exponent
  return static_cast<uint16_t>(sign | half);
}

float halfToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  const uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1fu) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

void floatsToHalves(const float* in, uint16_t* out, size_t n) {
  for (size_t i = hasF16c() ? floatsToHalvesF16c(in, out, n) : 0; i < n; ++i) {
    out[i] = floatToHalf(in[i]);
  }
}

void halvesToFloats(const uint16_t* in, float* out, size_t n) {
  for (size_t i = hasF16c() ? halvesToFloatsF16c(in, out, n) : 0; i < n; ++i) {
    out[i] = halfToFloat(in[i]);
  }
}

void sumHalves(uint16_t* out, const uint16_t* a, const uint16_t* b, size_t n) {
  for (size_t i = hasF16c() ? sumHalvesF16c(out, a, b, n) : 0; i < n; ++i) {
    out[i] = floatToHalf(halfToFloat(a[i]) + halfToFloat(b[i]));
  }
}

void scaleHalves(uint16_t* data, size_t n, float scale) {
  for (size_t i = hasF16c() ? scaleHalvesF16c(data, n, scale) : 0; i < n; ++i) {
    data[i] = floatToHalf(halfToFloat(data[i]) * scale);
  }
}

}  // namespace ringmaster
