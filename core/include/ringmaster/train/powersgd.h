#pragma once
// PowerSGD (Vogels, Karimireddy and Jaggi, NeurIPS 2019): rank-r gradient compression for the
// data-parallel allreduce (native.strategy.compression: {powersgd: {rank: r}}).
//
// Each layer's weight gradient M (outputs x inputs), error-corrected (M = gradient + residual),
// is approximated by P Q^T with P = M Q (outputs x r) and Q = M^T P^ (inputs x r), one step of
// subspace iteration warm-started from the previous step's Q:
//   1. P = M Q on every rank; the ranks allreduce every layer's P (one buffer).
//   2. P^ = the average P with orthonormal columns (Gram-Schmidt); Q = M^T P^; allreduce Q.
//   3. Every rank sets the gradient to P^ Q_avg^T (the same on every rank) and keeps
//      M - P^ Q_avg^T as its residual for the next step (error feedback).
// Biases, and weight matrices too small to gain (r (outputs + inputs) >= outputs * inputs), go
// uncompressed in step 1's buffer. Q starts from the same seeded normal draw on every rank, so
// the ranks agree without sending it. Bytes per rank and step: an allreduce of step 1's buffer
// and one of step 2's (allreduceBytesSent of each).
//
// Thread safety: none (one per rank).

#include <cstddef>
#include <span>
#include <vector>

#include "ringmaster/train/model.h"

namespace ringmaster::train {

class PowerSgdCompressor {
 public:
  // `layers` as Mlp::layers(); `rank` >= 1. Every rank passes the same layers, rank and seed.
  PowerSgdCompressor(const std::vector<LayerView>& layers, size_t rank, uint64_t seed = 1);

  // Step 1: corrects `grads` with the residual and returns this rank's P's and uncompressed
  // values, to be summed over the ranks in place. REQUIRES: grads.size() == size().
  std::span<float> encodeP(std::span<const float> grads);
  // Step 2: takes the summed step-1 buffer (scaled by `scale`, 1/world, to the average) and
  // returns this rank's Q's, to be summed over the ranks in place.
  std::span<float> encodeQ(float scale);
  // Step 3: from the summed Q's (scaled by `scale`) writes the approximated average gradient to
  // `grads` and keeps the residual. REQUIRES: grads.size() == size().
  void decode(std::span<float> grads, float scale);

  size_t size() const { return residual_.size(); }
  // Floats of the two allreduces (step 1, step 2).
  size_t firstFloats() const { return first_.size(); }
  size_t secondFloats() const { return second_.size(); }
  double bytesSent(int world) const;
  // ||residual|| / ||corrected gradient|| of the last step (0 for an all-zero gradient).
  double lastError() const { return last_error_; }
  const std::vector<float>& residual() const { return residual_; }

 private:
  struct Block {
    size_t offset = 0;    // in the gradient buffer
    size_t rows = 0;      // outputs (compressed) or the count of values (uncompressed)
    size_t cols = 0;      // inputs; 0 for an uncompressed block
    size_t p_offset = 0;  // in first_: P (rows x r) or the raw values
    size_t q_offset = 0;  // in second_ and q_: Q (cols x r); compressed blocks only
  };

  size_t rank_;
  std::vector<Block> blocks_;
  std::vector<float> residual_;
  std::vector<float> corrected_;
  std::vector<float> first_;   // every P, then the uncompressed values
  std::vector<float> second_;  // every Q
  std::vector<float> q_;       // the warm start: last step's averaged Q
  double corrected_norm_sq_ = 0.0;
  double last_error_ = 0.0;
};

// Makes the `cols` columns of the row-major rows x cols matrix `m` orthonormal (modified
// Gram-Schmidt); a column that is (numerically) in the span of the ones before becomes zero.
void orthonormalizeColumns(float* m, size_t rows, size_t cols);

}  // namespace ringmaster::train
