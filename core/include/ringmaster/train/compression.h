#pragma once
// Gradient compression for the data-parallel allreduce (native.strategy.compression), and the
// bytes each way of combining the ranks' work sends.
//
// fp16: every rank rounds its (error-corrected) gradient to IEEE half and the ranks allreduce the
//   halves: exactly half the bytes of float32.
// topk: every rank keeps the k = max(1, round(ratio * n)) entries of largest magnitude as
//   (uint32 index, float32 value) pairs, 8 bytes each. The pairs of different ranks name
//   different indices, so they cannot be summed on the way like an allreduce: the ranks allgather
//   them and each one adds all ranks' pairs into a dense buffer, in rank order (so every rank
//   gets the same sum, bit for bit).
// Both keep error feedback: what a rank did not send this step (its residual: the corrected
// gradient minus what was sent) is added to its next gradient, so nothing is lost, only delayed;
// over steps, the values sent plus the residual add up to the gradients. For fp16 the residual
// is the rounding of the rank's own values; the rounding of the sums inside the allreduce is not
// fed back (no rank sees it).
//
// Bytes are counted per rank as the algorithms send them: a ring allreduce of B bytes sends
// 2 (W - 1) / W * B per rank (reduce-scatter, then allgather; Gloo's halving/doubling sends the
// same), an allgather of B bytes per rank sends (W - 1) * B. So top-k at ratio r sends
// (W - 1) * 8 r n against 2 (W - 1) / W * 4 n: 1 / (W r) of the bytes, 25x fewer at 1% on 4
// ranks (12.5x on 8: top-k's allgather grows with the ranks, the allreduce does not). Between
// ranks of one host the float32 allreduce goes through shared memory, not the wire; the counts
// are what the algorithm moves either way.
//
// Thread safety: a GradientCompressor is not thread-safe (one per rank); the functions are pure.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ringmaster/train/config.h"
#include "ringmaster/util/half.h"

namespace ringmaster::train {

// Per rank: a ring allreduce of `count` elements of `element_bytes`, and an allgather of
// `bytes_per_rank` from each of `world` ranks. 0 for one rank.
double allreduceBytesSent(size_t count, size_t element_bytes, int world);
double allgatherBytesSent(size_t bytes_per_rank, int world);

// IEEE 754 binary16 (ringmaster/util/half.h).
using ::ringmaster::floatToHalf;
using ::ringmaster::halfToFloat;

// One sent top-k entry: 8 bytes on the wire.
struct TopkEntry {
  uint32_t index = 0;
  float value = 0.0f;
};
static_assert(sizeof(TopkEntry) == 8);

// Entries a top-k rank sends for `n` gradient values.
size_t topkCount(size_t n, double ratio);

class GradientCompressor {
 public:
  // REQUIRES: kind is kFp16 or kTopK; 0 < topk_ratio <= 1 for kTopK.
  GradientCompressor(Compression kind, size_t n, double topk_ratio = 0.01);

  Compression kind() const { return kind_; }
  size_t size() const { return residual_.size(); }

  // fp16: the halves of grads + residual; the residual becomes what rounding lost.
  // REQUIRES: grads.size() == size().
  std::span<uint16_t> encodeFp16(std::span<const float> grads);
  // topk: the k largest |grads + residual| entries, in index order; the residual becomes the
  // corrected gradient with those entries zeroed. REQUIRES: grads.size() == size().
  std::span<TopkEntry> encodeTopk(std::span<const float> grads);

  // What was not sent (added to the next gradient).
  const std::vector<float>& residual() const { return residual_; }
  // ||residual|| / ||grads + previous residual|| of the last encode: the share of the corrected
  // gradient held back (0 = sent exactly; 0 too for an all-zero gradient).
  double lastError() const { return last_error_; }
  // Bytes of this rank's contribution to the collective: 2n for fp16, 8k for top-k.
  size_t payloadBytes() const;
  // Bytes this rank sends per step over `world` ranks (allreduce of halves, allgather of pairs).
  double bytesSent(int world) const;

 private:
  void correct(std::span<const float> grads);  // corrected_ = grads + residual_
  void finishError();

  Compression kind_;
  size_t k_ = 0;
  std::vector<float> residual_;
  std::vector<float> corrected_;
  std::vector<uint16_t> halves_;
  std::vector<TopkEntry> entries_;
  std::vector<uint32_t> order_;  // top-k selection scratch
  double corrected_norm_sq_ = 0.0;
  double last_error_ = 0.0;
};

// Sets `out` to scale * (the sum of `entries` added index by index), entries taken in order.
// Errors: none; entries with an index past out.size() are a caller bug (REQUIRES).
void sumTopk(std::span<const TopkEntry> entries, float scale, std::span<float> out);

}  // namespace ringmaster::train
