#include "ringmaster/train/compression.h"

#include <algorithm>
#include <cmath>

#include "ringmaster/train/optimizer.h"

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
  for (size_t i = 0; i < grads.size(); ++i) corrected_[i] = grads[i] + residual_[i];
  corrected_norm_sq_ = sumOfSquares(corrected_);  // in lanes: one chain of adds took 2 ms
}

void GradientCompressor::finishError() {
  const double norm_sq = sumOfSquares(residual_);
  last_error_ = corrected_norm_sq_ > 0.0 ? std::sqrt(norm_sq / corrected_norm_sq_) : 0.0;
}

std::span<uint16_t> GradientCompressor::encodeFp16(std::span<const float> grads) {
  correct(grads);
  const size_t n = corrected_.size();
  floatsToHalves(corrected_.data(), halves_.data(), n);
  halvesToFloats(halves_.data(), residual_.data(), n);  // what the half says, then what it lost
  for (size_t i = 0; i < n; ++i) residual_[i] = corrected_[i] - residual_[i];
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
