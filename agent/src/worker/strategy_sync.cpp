#include "worker/strategy_sync.h"

#include <chrono>

#include "ringmaster/util/half.h"

namespace ringmaster::agent {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

StrategySync::StrategySync(comm::Communicator* communicator, const train::StrategyConfig& strategy,
                           size_t num_params, const std::vector<train::LayerView>& layers)
    : communicator_(communicator),
      strategy_(strategy),
      num_params_(num_params),
      world_(communicator ? communicator->size() : 1) {
  if (strategy_.compression == train::Compression::kPowerSgd) {
    power_.emplace(layers, strategy_.powersgd_rank);
  } else if (strategy_.compression != train::Compression::kNone) {
    compressor_.emplace(strategy_.compression, num_params, strategy_.topk_ratio);
    if (strategy_.compression == train::Compression::kTopK) {
      gathered_.resize(compressor_->payloadBytes() / sizeof(train::TopkEntry) *
                       static_cast<size_t>(world_));
    }
  }
}

Status StrategySync::reduceCompressed(std::span<float> grads) {
  if (!compressor_ && !power_) return invalidArgument("strategy: no compression configured");
  const Clock::time_point start = Clock::now();
  const float scale = 1.0f / static_cast<float>(world_);
  if (power_) {
    if (grads.size() != power_->size()) {
      return invalidArgument("powersgd: " + std::to_string(grads.size()) +
                             " gradients for a model of " + std::to_string(power_->size()));
    }
    std::span<float> p = power_->encodeP(grads);
    if (communicator_) RM_RETURN_IF_ERROR(communicator_->allreduce(p.data(), p.size()));
    std::span<float> q = power_->encodeQ(scale);
    if (communicator_) RM_RETURN_IF_ERROR(communicator_->allreduce(q.data(), q.size()));
    power_->decode(grads, scale);
  } else if (compressor_->kind() == train::Compression::kFp16) {
    std::span<uint16_t> halves = compressor_->encodeFp16(grads);
    if (communicator_) {
      RM_RETURN_IF_ERROR(communicator_->allreduce(halves.data(), halves.size(),
                                                  comm::DataType::kFloat16, comm::ReduceOp::kSum));
    }
    // The sum arrives in half; the average is taken in float (one rounding fewer).
    halvesToFloats(halves.data(), grads.data(), grads.size());
    for (float& g : grads) g *= scale;
  } else {
    std::span<train::TopkEntry> mine = compressor_->encodeTopk(grads);
    if (communicator_) {
      RM_RETURN_IF_ERROR(
          communicator_->allgather(mine.data(), gathered_.data(), mine.size_bytes()));
    } else {
      gathered_.assign(mine.begin(), mine.end());
    }
    train::sumTopk(gathered_, scale, grads);
  }
  last_comm_s_ = secondsSince(start);
  return Status::ok();
}

Status StrategySync::averageParams(std::span<float> params) {
  const Clock::time_point start = Clock::now();
  if (communicator_) {
    RM_RETURN_IF_ERROR(communicator_->allreduce(
        params.data(), params.size(), comm::DataType::kFloat32, comm::ReduceOp::kAverage));
  }
  last_comm_s_ = secondsSince(start);
  return Status::ok();
}

double StrategySync::commSeconds(const train::StepReport& report) const {
  if (!communicator_ || (strategy_.localSgd() && !report.averaged)) return 0.0;
  return last_comm_s_;
}

double StrategySync::compressionError() const {
  if (power_) return power_->lastError();
  return compressor_ ? compressor_->lastError() : 0.0;
}

double StrategySync::bytesSent(const train::StepReport& report) const {
  if (power_) return power_->bytesSent(world_);
  if (compressor_) return compressor_->bytesSent(world_);
  if (strategy_.localSgd() && !report.averaged) return 0.0;
  return train::allreduceBytesSent(num_params_, sizeof(float), world_);
}

}  // namespace ringmaster::agent
