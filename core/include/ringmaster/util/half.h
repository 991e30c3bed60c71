#pragma once
// IEEE 754 binary16 ("half"), rounding to nearest even; overflow gives +-inf, NaN stays NaN.
// The bulk functions convert eight at a time with F16C (every x86-64 CPU since 2012: checked at
// run time) and one at a time in software otherwise, with the same bits either way, NaN payloads
// aside (F16C keeps a NaN's payload, the software path only its quiet bit). One at a time, the
// fp16 strategy's conversions cost it 16 ms a step of 1.3 M gradients, three times the step of
// plain allreduce.

#include <cstddef>
#include <cstdint>

namespace ringmaster {

uint16_t floatToHalf(float value);
float halfToFloat(uint16_t half);

void floatsToHalves(const float* in, uint16_t* out, size_t n);
void halvesToFloats(const uint16_t* in, float* out, size_t n);
// out[i] = half(float(a[i]) + float(b[i])): Gloo's float16 sum. `out` may be `a` or `b`.
void sumHalves(uint16_t* out, const uint16_t* a, const uint16_t* b, size_t n);
// data[i] = half(float(data[i]) * scale).
void scaleHalves(uint16_t* data, size_t n, float scale);

}  // namespace ringmaster
