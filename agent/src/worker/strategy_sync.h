#pragma once
// How a native rank combines its work with the other ranks' under `native.strategy` other than
// the default (whose bucketed, overlapped gradient allreduce is GradientSync's): compressed
// gradient averaging (fp16 allreduce, or a top-k allgather summed by every rank, both with error
// feedback; see train/compression.h) and local SGD's parameter averaging. Also counts the bytes
// each step sends, for every strategy, the default included (bytesSent()).
//
// Thread safety: one training thread calls everything; the communicator is used from it only.

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "ringmaster/comm/communicator.h"
#include "ringmaster/train/compression.h"
#include "ringmaster/train/config.h"
#include "ringmaster/train/powersgd.h"
#include "ringmaster/train/trainer.h"

namespace ringmaster::agent {

class StrategySync {
 public:
  // `communicator` may be null (one rank: nothing to combine, nothing sent).
  // `layers`: the model's (Mlp::layers()), for PowerSGD's per-matrix compression.
  StrategySync(comm::Communicator* communicator, const train::StrategyConfig& strategy,
               size_t num_params, const std::vector<train::LayerView>& layers = {});

  // compression: replaces `grads` with the average over the ranks of their compressed,
  // error-corrected gradients (the same values on every rank).
  Status reduceCompressed(std::span<float> grads);
  // local_sgd: replaces `params` with their average over the ranks (one float32 allreduce).
  Status averageParams(std::span<float> params);

  // Bytes this rank sent for training in `report`'s step: the gradient allreduce (default), the
  // compressed exchange, or local SGD's averaging (0 on the steps between). The stop vote's one
  // float every few steps is not counted.
  double bytesSent(const train::StepReport& report) const;
  bool lossy() const { return compressor_.has_value() || power_.has_value(); }
  // ||residual|| / ||corrected gradient|| of the last step (lossy() only).
  double compressionError() const;
  // Seconds `report`'s step spent exchanging (encoding and decoding included): 0 on local SGD's
  // steps between averagings.
  double commSeconds(const train::StepReport& report) const;

 private:
  comm::Communicator* communicator_;
  train::StrategyConfig strategy_;
  size_t num_params_;
  int world_;
  std::optional<train::GradientCompressor> compressor_;  // fp16, top-k
  std::optional<train::PowerSgdCompressor> power_;
  std::vector<train::TopkEntry> gathered_;  // top-k: every rank's entries, rank after rank
  double last_comm_s_ = 0.0;
};

}  // namespace ringmaster::agent
