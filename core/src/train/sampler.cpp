#include "ringmaster/train/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "train/random.h"

namespace ringmaster::train {

Result<DistributedSampler> DistributedSampler::create(const SamplerOptions& options) {
  if (options.dataset_size == 0) return invalidArgument("sampler: the data set is empty");
  if (options.dataset_size > std::numeric_limits<uint32_t>::max()) {
    return invalidArgument("sampler: more than 2^32 - 1 samples are not supported");
  }
  if (options.world_size <= 0) {
    return invalidArgument("world_size: expected a positive rank count, got " +
                           std::to_string(options.world_size));
  }
  if (options.rank < 0 || options.rank >= options.world_size) {
    return invalidArgument("rank: expected a rank in [0, " + std::to_string(options.world_size) +
                           "), got " + std::to_string(options.rank));
  }
  if (options.batch_size == 0) return invalidArgument("batch_size: expected a positive size");
  for (const uint32_t index : options.pool) {
    if (index >= options.dataset_size) {
      return invalidArgument("sampler: pool index " + std::to_string(index) +
                             " is past the data set's " + std::to_string(options.dataset_size) +
                             " samples");
    }
  }
  return DistributedSampler(options);
}

DistributedSampler::DistributedSampler(const SamplerOptions& options) : options_(options) {
  permutation_.resize(options.dataset_size);
  const auto world = static_cast<size_t>(options.world_size);
  shard_.reserve((options.dataset_size + world - 1) / world);
  startEpoch(0);
}

size_t DistributedSampler::batchesPerEpoch() const {
  return (shard_.size() + options_.batch_size - 1) / options_.batch_size;
}

size_t DistributedSampler::batchesLeftInEpoch() const {
  return (shard_.size() - offset_ + options_.batch_size - 1) / options_.batch_size;
}

void DistributedSampler::startEpoch(uint64_t epoch) {
  epoch_ = epoch;
  offset_ = 0;
  const size_t n = options_.dataset_size;
  std::iota(permutation_.begin(), permutation_.end(), 0u);
  if (options_.shuffle) {
    Rng rng(deriveSeed(options_.seed, epoch));
    for (size_t i = n; i > 1; --i) std::swap(permutation_[i - 1], permutation_[rng.below(i)]);
  }
  const auto world = static_cast<size_t>(options_.world_size);
  const size_t per_rank = (n + world - 1) / world;
  const size_t total = per_rank * world;
  shard_.clear();
  if (!options_.pool.empty()) {
    // The pool's own permutation (its stream differs per rank), cycled to per_rank samples.
    std::vector<uint32_t>& pool = permutation_;
    pool.assign(options_.pool.begin(), options_.pool.end());
    if (options_.shuffle) {
      Rng rng(deriveSeed(deriveSeed(options_.seed, epoch), static_cast<uint64_t>(options_.rank)));
      for (size_t i = pool.size(); i > 1; --i) std::swap(pool[i - 1], pool[rng.below(i)]);
    }
    for (size_t k = 0; k < per_rank; ++k) shard_.push_back(pool[k % pool.size()]);
    return;
  }
  // Position p of the padded permutation is permutation_[p % n]: the padding repeats its start.
  for (size_t p = static_cast<size_t>(options_.rank); p < total; p += world) {
    shard_.push_back(permutation_[p % n]);
  }
}

bool DistributedSampler::nextBatch(std::vector<uint32_t>* indices) {
  indices->clear();
  if (offset_ >= shard_.size()) return false;
  const size_t count = std::min(options_.batch_size, shard_.size() - offset_);
  indices->assign(shard_.begin() + static_cast<std::ptrdiff_t>(offset_),
                  shard_.begin() + static_cast<std::ptrdiff_t>(offset_ + count));
  offset_ += count;
  return true;
}

Status DistributedSampler::restore(const SamplerPosition& position, int written_world_size) {
  const int written = written_world_size > 0 ? written_world_size : options_.world_size;
  const auto world = static_cast<size_t>(written);
  const size_t per_rank = (options_.dataset_size + world - 1) / world;
  if (position.offset > per_rank) {
    return invalidArgument("sampler position: offset " + std::to_string(position.offset) +
                           " is past the " + std::to_string(per_rank) +
                           " samples of a rank's epoch");
  }
  if (!options_.pool.empty() && written != options_.world_size) {
    return invalidArgument("sampler position: written by " + std::to_string(written) +
                           " ranks; a by_label split cannot continue with " +
                           std::to_string(options_.world_size) +
                           " (every rank's labels would change)");
  }
  startEpoch(position.epoch);
  if (written == options_.world_size) {
    offset_ = static_cast<size_t>(position.offset);
  } else {
    // Rank r of `written` drew positions r, r + written, ...: together the first offset * written.
    shardRemainder(static_cast<size_t>(position.offset) * world);
  }
  return Status::ok();
}

void DistributedSampler::shardRemainder(size_t consumed) {
  const size_t n = options_.dataset_size;
  const size_t remaining = consumed < n ? n - consumed : 0;
  const auto world = static_cast<size_t>(options_.world_size);
  shard_.clear();
  offset_ = 0;
  if (remaining == 0) return;
  const size_t per_rank = (remaining + world - 1) / world;
  for (size_t k = 0; k < per_rank; ++k) {
    const size_t q = k * world + static_cast<size_t>(options_.rank);
    shard_.push_back(permutation_[consumed + q % remaining]);  // padded like a whole epoch
  }
}

Result<std::vector<uint32_t>> byLabelShard(const std::vector<float>& labels, size_t classes,
                                           int rank, int world_size) {
  if (world_size <= 0 || rank < 0 || rank >= world_size) {
    return invalidArgument("by_label: rank " + std::to_string(rank) + " is not in [0, " +
                           std::to_string(world_size) + ")");
  }
  if (classes < static_cast<size_t>(world_size)) {
    return invalidArgument(
        "native.strategy.data_split: by_label gives each rank the labels l with "
        "l % world_size == rank, so it needs at least as many classes as "
        "ranks; the data has " +
        std::to_string(classes) + " classes for " + std::to_string(world_size) + " ranks");
  }
  std::vector<uint32_t> shard;
  const auto world = static_cast<size_t>(world_size);
  for (size_t i = 0; i < labels.size(); ++i) {
    const float label = labels[i];
    if (!(label >= 0.0f) || label >= static_cast<float>(classes) || label != std::floor(label)) {
      return invalidArgument("by_label: sample " + std::to_string(i) + " has label " +
                             std::to_string(label) + ", not a class in [0, " +
                             std::to_string(classes) + ")");
    }
    if (static_cast<size_t>(label) % world == static_cast<size_t>(rank)) {
      shard.push_back(static_cast<uint32_t>(i));
    }
  }
  return shard;
}

}  // namespace ringmaster::train
