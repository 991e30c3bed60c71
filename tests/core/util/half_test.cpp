// The bulk half conversions (ringmaster/util/half.h) against the one-at-a-time software ones:
// the same bits for every half and for floats at every magnitude, ties and subnormals included,
// whichever path the CPU takes (F16C or software), at lengths that leave a tail.
#include "ringmaster/util/half.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace ringmaster {
namespace {

bool isNanHalf(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

// Every finite and infinite half, twice over at an odd length (a tail after the groups of 8).
std::vector<uint16_t> everyHalf() {
  std::vector<uint16_t> halves;
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    if (!isNanHalf(static_cast<uint16_t>(h))) halves.push_back(static_cast<uint16_t>(h));
  }
  halves.push_back(0x3c00);  // odd length
  return halves;
}

// Floats at every magnitude a half can hold and beyond, with the ties between two halves (a
// half's value plus half a step) that round to even.
std::vector<float> testFloats() {
  std::vector<float> values;
  std::mt19937 random(7);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  for (int exponent = -30; exponent <= 17; ++exponent) {
    for (int i = 0; i < 200; ++i) {
      const float v = std::ldexp(mantissa(random), exponent);
      values.push_back(i % 2 ? v : -v);
    }
  }
  for (uint32_t h = 0; h < 0x7c00u; h += 7) {  // ties: the midpoint between h and h + 1
    const float lo = halfToFloat(static_cast<uint16_t>(h));
    const float hi = halfToFloat(static_cast<uint16_t>(h + 1));
    values.push_back(lo + (hi - lo) / 2);
  }
  for (float v : {0.0f, -0.0f, 65504.0f, 65520.0f, 1e9f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min(),
                  5.96e-8f, 2.98e-8f, 2.99e-8f}) {
    values.push_back(v);
  }
  return values;
}

TEST(Half, BulkConversionsGiveTheSameBitsAsOneAtATime) {
  const std::vector<uint16_t> halves = everyHalf();
  std::vector<float> floats(halves.size());
  halvesToFloats(halves.data(), floats.data(), halves.size());
  for (size_t i = 0; i < halves.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(floats[i]), std::bit_cast<uint32_t>(halfToFloat(halves[i])))
        << "half 0x" << std::hex << halves[i];
  }
  const std::vector<float> values = testFloats();
  std::vector<uint16_t> out(values.size());
  floatsToHalves(values.data(), out.data(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(out[i], floatToHalf(values[i])) << "float " << values[i];
  }
}

TEST(Half, SumsAndScalesRoundOnceFromFloat) {
  std::mt19937 random(11);
  std::uniform_int_distribution<uint32_t> bits(0, 0x7bffu);  // finite, non-negative
  const size_t n = 10'003;
  std::vector<uint16_t> a(n), b(n), sum(n), scaled(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = static_cast<uint16_t>(bits(random) | (i % 3 == 0 ? 0x8000u : 0u));
    b[i] = static_cast<uint16_t>(bits(random));
  }
  sumHalves(sum.data(), a.data(), b.data(), n);
  scaled = a;
  scaleHalves(scaled.data(), n, 0.25f);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(sum[i], floatToHalf(halfToFloat(a[i]) + halfToFloat(b[i]))) << "element " << i;
    ASSERT_EQ(scaled[i], floatToHalf(halfToFloat(a[i]) * 0.25f)) << "element " << i;
  }
  // In place, as Gloo calls it (the output is one of the inputs).
  std::vector<uint16_t> in_place = a;
  sumHalves(in_place.data(), in_place.data(), b.data(), n);
  EXPECT_EQ(in_place, sum);
}

}  // namespace
}  // namespace ringmaster
