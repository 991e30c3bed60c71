#pragma once
// DistributedSampler: each rank's share of an epoch, like torch.utils.data.DistributedSampler.
//
// Every epoch all ranks draw the same permutation of [0, dataset_size), seeded by (seed, epoch).
// It is padded by repeating its first elements up to total = ceil(size / world_size) * world_size
// samples, and rank r takes positions r, r + world_size, r + 2 * world_size, ... So the shards of
// one epoch are disjoint (apart from the padding), cover the data set, and every rank sees the same
// number of samples and batches per epoch. Batches are consecutive runs of batch_size samples of
// the shard; the last one of an epoch may be shorter (the same length on every rank).
//
// With a `pool` (data_split: by_label), rank r draws only the indices in its pool: each epoch a
// fresh permutation of the pool (seeded by seed, epoch and rank), repeated from its start when the
// pool is shorter than a rank's share, cut when longer. Every rank still takes
// ceil(dataset_size / world_size) samples per epoch, so all ranks take the same number of steps
// and their collectives line up.
//
// Thread safety: not thread-safe; use one sampler per rank (thread).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ringmaster/util/result.h"

namespace ringmaster::train {

struct SamplerOptions {
  size_t dataset_size = 0;  // > 0
  int rank = 0;             // in [0, world_size)
  int world_size = 1;       // > 0
  size_t batch_size = 64;   // per rank, > 0
  uint64_t seed = 1;        // shared by all ranks
  bool shuffle = true;      // false: the identity order (still sharded and padded)
  // Non-empty: this rank draws only these indices into [0, dataset_size) (see the top).
  std::vector<uint32_t> pool;
};

// data_split: by_label. The indices of the samples whose class label l has l % world_size == rank,
// in index order: with 10 classes and 4 ranks, rank 0 holds labels {0, 4, 8}, rank 1 {1, 5, 9},
// rank 2 {2, 6}, rank 3 {3, 7}. The ranks' shards are disjoint and together cover the data.
// Errors: INVALID_ARGUMENT when classes < world_size (a rank would hold nothing), or a label is not
// an integer class in [0, classes).
Result<std::vector<uint32_t>> byLabelShard(const std::vector<float>& labels, size_t classes,
                                           int rank, int world_size);

// Where a sampler is: the epoch and how many of this rank's samples of it were handed out.
struct SamplerPosition {
  uint64_t epoch = 0;
  uint64_t offset = 0;  // in [0, samplesPerEpoch()]

  bool operator==(const SamplerPosition&) const = default;
};

class DistributedSampler {
 public:
  // Validates the options (errors name the field) and positions at the start of epoch 0.
  static Result<DistributedSampler> create(const SamplerOptions& options);

  const SamplerOptions& options() const { return options_; }
  // This rank's samples per epoch: ceil(dataset_size / world_size).
  size_t samplesPerEpoch() const { return shard_.size(); }
  // ceil(samplesPerEpoch() / batch_size), the same on every rank.
  size_t batchesPerEpoch() const;
  size_t batchesLeftInEpoch() const;

  // The next batch's sample indices into `indices` (resized; its capacity is reused). Returns
  // false, leaving `indices` empty, when this epoch is used up: call startEpoch() to go on.
  bool nextBatch(std::vector<uint32_t>* indices);

  // Regenerates the permutation of `epoch` and rewinds to its start.
  void startEpoch(uint64_t epoch);

  SamplerPosition position() const { return {epoch_, offset_}; }
  // Continues exactly where a sampler with the same options was at position(). A position
  // written by `written_world_size` ranks (0: this sampler's) continues its epoch elastically:
  // the samples those ranks had not drawn yet are shared out again among this sampler's ranks,
  // so the epoch still covers the data set once; later epochs are the usual ones.
  Status restore(const SamplerPosition& position, int written_world_size = 0);

  // This rank's whole shard of the current epoch, in order.
  const std::vector<uint32_t>& shard() const { return shard_; }

 private:
  explicit DistributedSampler(const SamplerOptions& options);
  // This rank's share of positions [consumed, dataset_size) of the current permutation.
  void shardRemainder(size_t consumed);

  SamplerOptions options_;
  uint64_t epoch_ = 0;
  size_t offset_ = 0;
  std::vector<uint32_t> permutation_;  // scratch, dataset_size
  std::vector<uint32_t> shard_;
};

}  // namespace ringmaster::train
