#include "ringmaster/train/compression.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace ringmaster::train {

double allreduceBytesSent(size_t count, size_t element_bytes, int world) {
  if (world <= 1) return 0.0;
  const double w = world;
  return 2.0 * (w - 1.0) / w * static_cast<double>(count) * static_cast<double>(element_bytes);
}

double allgatherBytesSent(size_t bytes_per_rank, int world) {
  if (world <= 1) return 0.0;
  return static_cast<double>(world - 1) * static_cast<double>(bytes_per_rank);
}

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

size_t topkCount(size_t n, double ratio) {
  const auto k = static_cast<size_t>(std::llround(ratio * static_cast<double>(n)));
  return std::clamp<size_t>(k, n == 0 ? 0 : 1, n);
}

GradientCompressor::GradientCompressor(Compression kind, size_t n, double topk_ratio)
    : kind_(kind), residual_(n, 0.0f), corrected_(n, 0.0f) {
  if (kind_ == Compression::kTopK) {
    k_ = topkCount(n, topk_ratio);
    entries_.resize(k_);
    order_.resize(n);
  } else {
    halves_.resize(n);
  }
}

void GradientCompressor::correct(std::span<const float> grads) {
  double norm_sq = 0.0;
  for (size_t i = 0; i < grads.size(); ++i) {
    corrected_[i] = grads[i] + residual_[i];
    norm_sq += static_cast<double>(corrected_[i]) * corrected_[i];
  }
  corrected_norm_sq_ = norm_sq;
}

void GradientCompressor::finishError() {
  double norm_sq = 0.0;
  for (const float r : residual_) norm_sq += static_cast<double>(r) * r;
  last_error_ = corrected_norm_sq_ > 0.0 ? std::sqrt(norm_sq / corrected_norm_sq_) : 0.0;
}

std::span<uint16_t> GradientCompressor::encodeFp16(std::span<const float> grads) {
  correct(grads);
  for (size_t i = 0; i < corrected_.size(); ++i) {
    halves_[i] = floatToHalf(corrected_[i]);
    residual_[i] = corrected_[i] - halfToFloat(halves_[i]);
  }
  finishError();
  return halves_;
}

std::span<TopkEntry> GradientCompressor::encodeTopk(std::span<const float> grads) {
  correct(grads);
  const size_t n = corrected_.size();
  for (size_t i = 0; i < n; ++i) order_[i] = static_cast<uint32_t>(i);
  // The k largest magnitudes (ties broken by the lower index, so every run picks alike).
  const auto larger = [this](uint32_t a, uint32_t b) {
    const float fa = std::abs(corrected_[a]);
    const float fb = std::abs(corrected_[b]);
    return fa > fb || (fa == fb && a < b);
  };
  std::nth_element(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(k_), order_.end(),
                   larger);
  std::sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(k_));
  residual_ = corrected_;
  for (size_t j = 0; j < k_; ++j) {
    const uint32_t index = order_[j];
    entries_[j] = TopkEntry{index, corrected_[index]};
    residual_[index] = 0.0f;
  }
  finishError();
  return entries_;
}

size_t GradientCompressor::payloadBytes() const {
  return kind_ == Compression::kTopK ? k_ * sizeof(TopkEntry) : halves_.size() * sizeof(uint16_t);
}

double GradientCompressor::bytesSent(int world) const {
  if (kind_ == Compression::kTopK) return allgatherBytesSent(payloadBytes(), world);
  return allreduceBytesSent(halves_.size(), sizeof(uint16_t), world);
}

void sumTopk(std::span<const TopkEntry> entries, float scale, std::span<float> out) {
  std::fill(out.begin(), out.end(), 0.0f);
  for (const TopkEntry& e : entries) out[e.index] += e.value;
  if (scale != 1.0f) {
    for (float& v : out) v *= scale;
  }
}

}  // namespace ringmaster::train
