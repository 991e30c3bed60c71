#pragma once
// The math of native.strategy.parameter_server: who is a server, which shard of the flat
// parameter vector each server holds, the staleness rule of asynchronous pushes, and one
// server's shard (its parameters, its optimizer state, its version). The messaging around it is
// the worker's (agent/src/worker/parameter_server.h).
//
// Layout: of W ranks, the last S are servers (server s is rank W - S + s and holds shard s) and
// ranks 0 .. W - S - 1 are workers, so a worker's rank is also its index among the workers and
// rank 0, which the dashboards and the compare view read first, trains and evaluates.
//
// Shards: contiguous and balanced, shard s covers [s * n / S + min(s, n % S) ...): the first
// n % S shards hold one value more than the others.
//
// sync: every step each server waits for every worker's gradient of its shard, takes their mean
//   (summed in worker order, so every run gives the same bits) and applies the spec's optimizer
//   to it; the workers then pull the new shard. With N workers this is synchronous allreduce SGD
//   on N ranks: the same mean gradient, the same element-wise optimizer (per-shard state is the
//   whole state cut in pieces), so the trajectory is the allreduce job's up to float rounding
//   (the sum's order).
// async: a server applies each push as it comes, from whichever worker is first. A push carries
//   the version of the shard the worker computed on (its last pull); the server's version counts
//   the updates it applied. staleness = server version - pulled version; a push with staleness
//   > max_staleness is refused (dropped, not down-weighted: a gradient of parameters that far
//   behind points somewhere else, and a smaller step the wrong way is still the wrong way), and
//   the reply carries the fresh shard, so the worker's next gradient is current. Each accepted
//   push is applied scaled by 1 / N, and the shard's optimizer counts pushes (warmup and total
//   steps times N), so that N pushes move the parameters about as far as one synchronous step
//   and the learning-rate schedule has the same shape over the run.
//
// Thread safety: a ShardServer is not thread-safe; the free functions are pure.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ringmaster/train/config.h"
#include "ringmaster/train/optimizer.h"
#include "ringmaster/util/result.h"

namespace ringmaster::train {

// A rank's role, as reported in the kPsRoleMetric metric (the rank table shows it).
enum class PsRole { kWorker = 1, kServer = 2 };
inline constexpr const char* kPsRoleMetric = "ps_role";

struct PsLayout {
  int world = 1;
  int servers = 1;  // REQUIRES: 1 <= servers < world

  int workers() const { return world - servers; }
  bool isServer(int rank) const { return rank >= workers(); }
  int serverRank(int shard) const { return workers() + shard; }
  int shardOf(int server_rank) const { return server_rank - workers(); }
};

struct ShardRange {
  size_t begin = 0;
  size_t end = 0;
  size_t size() const { return end - begin; }
};

// Shard `shard` of `num_params` values over `servers` (see the top of the file).
// REQUIRES: servers >= 1, 0 <= shard < servers.
ShardRange shardRange(size_t num_params, int servers, int shard);

struct PushVerdict {
  uint64_t staleness = 0;
  bool accepted = true;
};
// The async rule: staleness = server_version - pulled_version, accepted iff <= max_staleness.
// REQUIRES: pulled_version <= server_version (a worker only knows versions a server sent it).
PushVerdict judgePush(uint64_t server_version, uint64_t pulled_version, uint64_t max_staleness);

// The optimizer options of every shard: the spec's, with total_steps the optimizer updates of the
// run (`worker_steps` per worker); async counts pushes: warmup and total steps times `workers`.
OptimizerOptions shardOptimizerOptions(const OptimizerOptions& spec, uint64_t worker_steps,
                                       PsMode mode, int workers);

// One server's shard of the parameters and the optimizer state for it.
class ShardServer {
 public:
  // Starts from `initial` (the shard of the common initial parameters) at version 0.
  static Result<ShardServer> create(const OptimizerOptions& options,
                                    std::span<const float> initial);

  std::span<const float> params() const { return params_; }
  uint64_t version() const { return version_; }
  size_t size() const { return params_.size(); }
  // The learning rate of the last update (0 before the first).
  double lastLr() const { return last_lr_; }

  // sync: one update with the mean of `grads` (one per worker, in worker order, each of size()),
  // summed in that order. Returns the learning rate used.
  double applyMean(std::span<const std::span<const float>> grads);
  // async: judges a push computed on version `pulled_version` and, when accepted, applies
  // scale * grad as one update. A refused push changes nothing.
  PushVerdict applyPush(std::span<const float> grad, uint64_t pulled_version,
                        uint64_t max_staleness, float scale);

 private:
  ShardServer(Optimizer optimizer, std::vector<float> params);

  Optimizer optimizer_;
  std::vector<float> params_;
  std::vector<float> update_;  // the mean (sync) or the scaled push (async)
  uint64_t version_ = 0;
  double last_lr_ = 0.0;
};

}  // namespace ringmaster::train
