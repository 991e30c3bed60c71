#include "ringmaster/train/parameter_server.h"

#include <algorithm>
#include <utility>

namespace ringmaster::train {

ShardRange shardRange(size_t num_params, int servers, int shard) {
  const size_t s = static_cast<size_t>(servers);
  const size_t i = static_cast<size_t>(shard);
  const size_t base = num_params / s;
  const size_t extra = num_params % s;
  ShardRange range;
  range.begin = i * base + std::min(i, extra);
  range.end = range.begin + base + (i < extra ? 1 : 0);
  return range;
}

PushVerdict judgePush(uint64_t server_version, uint64_t pulled_version, uint64_t max_staleness) {
  PushVerdict verdict;
  verdict.staleness = server_version - pulled_version;
  verdict.accepted = verdict.staleness <= max_staleness;
  return verdict;
}

OptimizerOptions shardOptimizerOptions(const OptimizerOptions& spec, uint64_t worker_steps,
                                       PsMode mode, int workers) {
  OptimizerOptions options = spec;
  const uint64_t per_step = mode == PsMode::kAsync ? static_cast<uint64_t>(workers) : 1;
  options.total_steps = worker_steps * per_step;
  options.warmup_steps = spec.warmup_steps * per_step;
  return options;
}

Result<ShardServer> ShardServer::create(const OptimizerOptions& options,
                                        std::span<const float> initial) {
  RM_ASSIGN_OR_RETURN(Optimizer optimizer, Optimizer::create(options, initial.size()));
  return ShardServer(std::move(optimizer), std::vector<float>(initial.begin(), initial.end()));
}

ShardServer::ShardServer(Optimizer optimizer, std::vector<float> params)
    : optimizer_(std::move(optimizer)), params_(std::move(params)), update_(params_.size()) {}

double ShardServer::applyMean(std::span<const std::span<const float>> grads) {
  std::fill(update_.begin(), update_.end(), 0.0f);
  for (const std::span<const float> grad : grads) {
    for (size_t i = 0; i < update_.size(); ++i) update_[i] += grad[i];
  }
  // Divided, not multiplied by 1/N: the rounding of an in-place average over the ranks.
  const float count = static_cast<float>(grads.size());
  for (float& value : update_) value /= count;
  last_lr_ = optimizer_.apply(params_, update_);
  ++version_;
  return last_lr_;
}

PushVerdict ShardServer::applyPush(std::span<const float> grad, uint64_t pulled_version,
                                   uint64_t max_staleness, float scale) {
  const PushVerdict verdict = judgePush(version_, pulled_version, max_staleness);
  if (!verdict.accepted) return verdict;
  for (size_t i = 0; i < update_.size(); ++i) update_[i] = scale * grad[i];
  last_lr_ = optimizer_.apply(params_, update_);
  ++version_;
  return verdict;
}

}  // namespace ringmaster::train
