// Gradient compression's math: half conversion, the bytes each scheme sends, top-k selection and
// error feedback (nothing is lost, only delayed).
#include "ringmaster/train/compression.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace ringmaster::train {
namespace {

// The digits MLP of resources/jobs/strategies: 64-128-64-10.
constexpr size_t kDigitsParams = 64 * 128 + 128 + 128 * 64 + 64 + 64 * 10 + 10;

std::vector<float> randomGradient(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1e-2f);
  std::vector<float> g(n);
  for (float& v : g) v = normal(rng);
  return g;
}

TEST(Half, ConvertsExactlyAndRoundsToNearestEven) {
  for (float v : {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f /* smallest normal */,
                  5.9604645e-08f /* smallest subnormal */, 0.333251953125f}) {
    EXPECT_EQ(halfToFloat(floatToHalf(v)), v) << v;
  }
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: to even (1).
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);  // rounds past the largest half: inf
  EXPECT_TRUE(std::isinf(halfToFloat(floatToHalf(std::numeric_limits<float>::infinity()))));
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(floatToHalf(1e-9f), 0);
  // Every half survives the round trip.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = halfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(floatToHalf(f), h) << h;
  }
}

TEST(CompressionBytes, Fp16SendsExactlyHalfAndTopkOnePercentAtLeastTwentyTimesLess) {
  for (int world : {2, 4}) {
    const double plain = allreduceBytesSent(kDigitsParams, sizeof(float), world);
    GradientCompressor fp16(Compression::kFp16, kDigitsParams);
    GradientCompressor topk(Compression::kTopK, kDigitsParams, 0.01);
    EXPECT_EQ(fp16.bytesSent(world) * 2.0, plain) << world;
    // k = round(0.01 * 17226) = 172 pairs of (uint32 index, float32 value).
    EXPECT_EQ(topk.payloadBytes(), 172u * 8u);
    EXPECT_EQ(topk.bytesSent(world), (world - 1) * 172.0 * 8.0);
    EXPECT_GE(plain / topk.bytesSent(world), 20.0) << world;
  }
  // On 4 ranks: 2 * 3/4 * 4 * 17226 = 103356 bytes against 3 * 1376 = 4128 (25x).
  EXPECT_EQ(allreduceBytesSent(kDigitsParams, 4, 4), 103356.0);
  EXPECT_EQ(allreduceBytesSent(kDigitsParams, 4, 1), 0.0);
  EXPECT_EQ(allgatherBytesSent(1376, 4), 4128.0);
  EXPECT_EQ(topkCount(1000, 0.0001), 1u);  // at least one entry
  EXPECT_EQ(topkCount(1000, 1.0), 1000u);
}

TEST(Topk, SendsTheLargestMagnitudesInIndexOrderAndKeepsTheRest) {
  GradientCompressor topk(Compression::kTopK, 8, 0.25);  // k = 2
  const std::vector<float> g = {0.1f, -5.0f, 0.2f, 0.0f, 3.0f, -0.3f, 0.0f, 1.0f};
  const std::span<TopkEntry> sent = topk.encodeTopk(g);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].index, 1u);
  EXPECT_EQ(sent[0].value, -5.0f);
  EXPECT_EQ(sent[1].index, 4u);
  EXPECT_EQ(sent[1].value, 3.0f);
  const std::vector<float> kept = {0.1f, 0.0f, 0.2f, 0.0f, 0.0f, -0.3f, 0.0f, 1.0f};
  EXPECT_EQ(topk.residual(), kept);
  // Relative norm of what was held back: sqrt(1.14 / 35.14).
  EXPECT_NEAR(topk.lastError(), std::sqrt(1.14 / 35.14), 1e-6);
  // Next step, the residual joins the gradient: index 7 (1.0 + 1.0) now wins a place.
  const std::vector<float> g2 = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 1.0f};
  const std::span<TopkEntry> sent2 = topk.encodeTopk(g2);
  EXPECT_EQ(sent2[1].index, 7u);
  EXPECT_EQ(sent2[1].value, 2.0f);

  // Ranks' entries are summed index by index and scaled.
  std::vector<float> out(8, 99.0f);
  const std::vector<TopkEntry> all = {{1, -5.0f}, {4, 3.0f}, {4, 1.0f}, {7, 2.0f}};
  sumTopk(all, 0.5f, out);
  EXPECT_EQ(out, (std::vector<float>{0, -2.5f, 0, 0, 2.0f, 0, 0, 1.0f}));
}

// Error feedback: over any number of steps, what was sent plus what is still held back adds up
// to the sum of the gradients (up to float rounding of the running sums).
TEST(ErrorFeedback, SentPlusResidualEqualsTheSumOfTheGradients) {
  for (Compression kind : {Compression::kTopK, Compression::kFp16}) {
    const size_t n = 4096;
    GradientCompressor compressor(kind, n, 0.01);
    std::vector<double> grad_sum(n, 0.0);
    std::vector<double> sent_sum(n, 0.0);
    for (uint32_t step = 0; step < 50; ++step) {
      const std::vector<float> g = randomGradient(n, step);
      for (size_t i = 0; i < n; ++i) grad_sum[i] += g[i];
      if (kind == Compression::kTopK) {
        for (const TopkEntry& e : compressor.encodeTopk(g)) sent_sum[e.index] += e.value;
      } else {
        const std::span<uint16_t> halves = compressor.encodeFp16(g);
        for (size_t i = 0; i < n; ++i) sent_sum[i] += halfToFloat(halves[i]);
      }
    }
    double worst = 0.0;
    double scale = 0.0;
    for (size_t i = 0; i < n; ++i) {
      worst = std::max(worst, std::abs(sent_sum[i] + compressor.residual()[i] - grad_sum[i]));
      scale = std::max(scale, std::abs(grad_sum[i]));
    }
    EXPECT_LT(worst, 1e-5 * scale) << (kind == Compression::kTopK ? "topk" : "fp16");
    // top-k holds most of the gradient back; fp16 only its rounding.
    if (kind == Compression::kTopK) {
      EXPECT_GT(compressor.lastError(), 0.5);
    } else {
      EXPECT_LT(compressor.lastError(), 1e-3);
      EXPECT_GT(compressor.lastError(), 0.0);
    }
  }
}

}  // namespace
}  // namespace ringmaster::train
