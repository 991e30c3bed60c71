#include "ringmaster/train/powersgd.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>

#include "ringmaster/train/compression.h"
#include "train/random.h"

namespace ringmaster::train {

void orthonormalizeColumns(float* m, size_t rows, size_t cols) {
  auto norm_sq = [&](size_t c) {
    double sum = 0.0;
    for (size_t r = 0; r < rows; ++r) sum += double{m[r * cols + c]} * m[r * cols + c];
    return sum;
  };
  for (size_t c = 0; c < cols; ++c) {
    const double before = norm_sq(c);
    for (size_t prev = 0; prev < c; ++prev) {
      double dot = 0.0;
      for (size_t r = 0; r < rows; ++r) dot += double{m[r * cols + c]} * m[r * cols + prev];
      for (size_t r = 0; r < rows; ++r) {
        m[r * cols + c] -= static_cast<float>(dot) * m[r * cols + prev];
      }
    }
    // What is left of a column in the span of the ones before is rounding noise: it is dropped,
    // not blown up to a unit vector of noise.
    const double after = norm_sq(c);
    const float inverse =
        after > 1e-10 * before && after > 0.0 ? static_cast<float>(1.0 / std::sqrt(after)) : 0.0f;
    for (size_t r = 0; r < rows; ++r) m[r * cols + c] *= inverse;
  }
}

PowerSgdCompressor::PowerSgdCompressor(const std::vector<LayerView>& layers, size_t rank,
                                       uint64_t seed)
    : rank_(std::max<size_t>(rank, 1)) {
  size_t total = 0, p_floats = 0, q_floats = 0;
  std::vector<Block> raw;
  for (const LayerView& layer : layers) {
    total = std::max(total, layer.offset + layer.size);
    const size_t weights = layer.outputs * layer.inputs;
    if (rank_ * (layer.outputs + layer.inputs) < weights) {
      blocks_.push_back({layer.weightOffset(), layer.outputs, layer.inputs, p_floats, q_floats});
      p_floats += layer.outputs * rank_;
      q_floats += layer.inputs * rank_;
    } else {
      raw.push_back({layer.weightOffset(), weights, 0, 0, 0});
    }
    raw.push_back({layer.biasOffset(), layer.outputs, 0, 0, 0});
  }
  // The uncompressed values follow the P's in the first allreduce.
  for (Block& block : raw) {
    block.p_offset = p_floats;
    p_floats += block.rows;
    blocks_.push_back(block);
  }
  residual_.assign(total, 0.0f);
  corrected_.resize(total);
  first_.resize(p_floats);
  second_.resize(q_floats);
  q_.resize(q_floats);
  Rng rng(deriveSeed(seed, 0x9053d));
  for (float& value : q_) value = static_cast<float>(rng.normal());
}

std::span<float> PowerSgdCompressor::encodeP(std::span<const float> grads) {
  corrected_norm_sq_ = 0.0;
  for (size_t i = 0; i < grads.size(); ++i) {
    corrected_[i] = grads[i] + residual_[i];
    corrected_norm_sq_ += double{corrected_[i]} * corrected_[i];
  }
  const int r = static_cast<int>(rank_);
  for (const Block& block : blocks_) {
    const float* m = corrected_.data() + block.offset;
    if (block.cols == 0) {
      std::copy(m, m + block.rows, first_.data() + block.p_offset);
      continue;
    }
    const int rows = static_cast<int>(block.rows), cols = static_cast<int>(block.cols);
    // P = M Q: (rows x cols)(cols x r).
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, r, cols, 1.0f, m, cols,
                q_.data() + block.q_offset, r, 0.0f, first_.data() + block.p_offset, r);
  }
  return first_;
}

std::span<float> PowerSgdCompressor::encodeQ(float scale) {
  for (float& value : first_) value *= scale;
  const int r = static_cast<int>(rank_);
  for (const Block& block : blocks_) {
    if (block.cols == 0) continue;
    float* p = first_.data() + block.p_offset;
    orthonormalizeColumns(p, block.rows, rank_);
    const int rows = static_cast<int>(block.rows), cols = static_cast<int>(block.cols);
    // Q = M^T P^: (cols x rows)(rows x r).
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, cols, r, rows, 1.0f,
                corrected_.data() + block.offset, cols, p, r, 0.0f, second_.data() + block.q_offset,
                r);
  }
  return second_;
}

void PowerSgdCompressor::decode(std::span<float> grads, float scale) {
  for (size_t i = 0; i < second_.size(); ++i) q_[i] = second_[i] * scale;
  const int r = static_cast<int>(rank_);
  for (const Block& block : blocks_) {
    float* out = grads.data() + block.offset;
    if (block.cols == 0) {  // sent exactly: the average, nothing held back
      std::copy_n(first_.data() + block.p_offset, block.rows, out);
      std::fill_n(residual_.data() + block.offset, block.rows, 0.0f);
      continue;
    }
    const int rows = static_cast<int>(block.rows), cols = static_cast<int>(block.cols);
    // The approximation P^ Q^T: (rows x r)(r x cols).
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, cols, r, 1.0f,
                first_.data() + block.p_offset, r, q_.data() + block.q_offset, r, 0.0f, out, cols);
    const size_t count = block.rows * block.cols;
    for (size_t i = 0; i < count; ++i) {
      residual_[block.offset + i] = corrected_[block.offset + i] - out[i];
    }
  }
  double residual_sq = 0.0;
  for (float value : residual_) residual_sq += double{value} * value;
  last_error_ = corrected_norm_sq_ > 0.0 ? std::sqrt(residual_sq / corrected_norm_sq_) : 0.0;
}

double PowerSgdCompressor::bytesSent(int world) const {
  return allreduceBytesSent(first_.size(), sizeof(float), world) +
         allreduceBytesSent(second_.size(), sizeof(float), world);
}

}  // namespace ringmaster::train
