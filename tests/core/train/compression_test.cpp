// Gradient compression's math: half conversion, the bytes each scheme sends, top-k selection and
// error feedback (nothing is lost, only delayed).
#include "ringmaster/train/compression.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "ringmaster/train/powersgd.h"

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

// --- PowerSGD ----------------------------------------------------------------------------------

// The digits MLP's layers: 64-128-64-10, weights then bias, one after the other.
std::vector<LayerView> digitsLayers() {
  std::vector<LayerView> layers;
  size_t offset = 0;
  for (auto [in, out] : {std::pair<size_t, size_t>{64, 128}, {128, 64}, {64, 10}}) {
    layers.push_back({in, out, offset, in * out + out});
    offset += in * out + out;
  }
  return layers;
}

TEST(PowerSgd, OrthonormalizesColumnsAndDropsDependentOnes) {
  std::vector<float> m = randomGradient(20 * 3, 5);
  for (size_t r = 0; r < 20; ++r) m[r * 3 + 2] = 2.0f * m[r * 3 + 0];  // column 2 = 2 x column 0
  orthonormalizeColumns(m.data(), 20, 3);
  for (size_t a = 0; a < 2; ++a) {
    for (size_t b = 0; b < 2; ++b) {
      double dot = 0.0;
      for (size_t r = 0; r < 20; ++r) dot += double{m[r * 3 + a]} * m[r * 3 + b];
      EXPECT_NEAR(dot, a == b ? 1.0 : 0.0, 1e-5) << a << "," << b;
    }
  }
  for (size_t r = 0; r < 20; ++r) EXPECT_NEAR(m[r * 3 + 2], 0.0f, 1e-3f) << "row " << r;
}

// A gradient whose every weight matrix has rank 1 is sent exactly at rank 1 (one step of the
// power iteration finds its column space), so nothing is held back.
TEST(PowerSgd, SendsARankOneGradientExactly) {
  const std::vector<LayerView> layers = digitsLayers();
  PowerSgdCompressor power(layers, 1);
  std::vector<float> grads(power.size());
  std::vector<float> u = randomGradient(128, 1), v = randomGradient(128, 2);
  for (const LayerView& layer : layers) {
    for (size_t o = 0; o < layer.outputs; ++o) {
      for (size_t i = 0; i < layer.inputs; ++i) {
        grads[layer.weightOffset() + o * layer.inputs + i] = 100.0f * u[o] * v[i];
      }
      grads[layer.biasOffset() + o] = u[o];
    }
  }
  std::vector<float> out(grads.size());
  power.encodeP(grads);
  power.encodeQ(1.0f);
  power.decode(out, 1.0f);
  for (size_t i = 0; i < grads.size(); ++i) ASSERT_NEAR(out[i], grads[i], 1e-6f) << i;
  EXPECT_LT(power.lastError(), 1e-4);
}

// Error feedback: over steps, what was sent plus what is held back is the sum of the gradients.
TEST(PowerSgd, SentPlusResidualEqualsTheSumOfTheGradients) {
  PowerSgdCompressor power(digitsLayers(), 2);
  std::vector<double> sent(power.size(), 0.0), total(power.size(), 0.0);
  std::vector<float> out(power.size());
  double first_error = 0.0;
  for (uint32_t step = 0; step < 6; ++step) {
    const std::vector<float> g = randomGradient(power.size(), 10 + step);
    for (size_t i = 0; i < g.size(); ++i) total[i] += g[i];
    power.encodeP(g);
    power.encodeQ(1.0f);
    power.decode(out, 1.0f);
    for (size_t i = 0; i < out.size(); ++i) sent[i] += out[i];
    if (step == 0) first_error = power.lastError();
  }
  for (size_t i = 0; i < total.size(); ++i) {
    ASSERT_NEAR(sent[i] + power.residual()[i], total[i], 1e-4) << i;
  }
  // A random full-rank gradient is mostly held back at rank 2 (the biases go exactly).
  EXPECT_GT(first_error, 0.5);
  EXPECT_LT(first_error, 1.0);
}

// Two ranks: each compresses its own gradient; with the sums of both buffers they decode the
// same gradient, bit for bit, and the bytes are far fewer than float32's allreduce.
TEST(PowerSgd, RanksDecodeTheSameGradientFromTheSummedBuffers) {
  const std::vector<LayerView> layers = digitsLayers();
  PowerSgdCompressor a(layers, 2), b(layers, 2);
  const std::vector<float> ga = randomGradient(a.size(), 21), gb = randomGradient(b.size(), 22);
  std::span<float> pa = a.encodeP(ga), pb = b.encodeP(gb);
  for (size_t i = 0; i < pa.size(); ++i) pa[i] = pb[i] = pa[i] + pb[i];
  std::span<float> qa = a.encodeQ(0.5f), qb = b.encodeQ(0.5f);
  for (size_t i = 0; i < qa.size(); ++i) qa[i] = qb[i] = qa[i] + qb[i];
  std::vector<float> outa(a.size()), outb(b.size());
  a.decode(outa, 0.5f);
  b.decode(outb, 0.5f);
  EXPECT_EQ(outa, outb);
  // Biases are averaged exactly.
  const size_t bias = layers[2].biasOffset();
  EXPECT_FLOAT_EQ(outa[bias], 0.5f * (ga[bias] + gb[bias]));
  // P: 128x2 + 64x2 + 10x2, Q: 64x2 + 128x2 + 64x2; the 266 biases raw; all three matrices gain.
  EXPECT_EQ(a.firstFloats(), (128 + 64 + 10) * 2 + 128 + 64 + 10u);
  EXPECT_EQ(a.secondFloats(), (64 + 128 + 64) * 2u);
  EXPECT_GT(allreduceBytesSent(kDigitsParams, 4, 4) / a.bytesSent(4), 15.0);
}

TEST(PowerSgd, SmallMatricesGoUncompressed) {
  // 4x3 at rank 2: 2 x (4 + 3) = 14 floats would not be fewer than 12.
  PowerSgdCompressor power({{3, 4, 0, 16}}, 2);
  EXPECT_EQ(power.firstFloats(), 16u);
  EXPECT_EQ(power.secondFloats(), 0u);
  std::vector<float> g = randomGradient(16, 3), out(16);
  power.encodeP(g);
  power.encodeQ(1.0f);
  power.decode(out, 1.0f);
  EXPECT_EQ(out, g);
  EXPECT_EQ(power.lastError(), 0.0);
}

}  // namespace
}  // namespace ringmaster::train
