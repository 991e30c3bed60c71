// native.strategy.parameter_server's math in one process: the rank layout, balanced shards, the
// staleness rule, a shard server's updates, synchronous servers following allreduce SGD step
// for step (workers on threads, servers in shared memory), and asynchronous pushes from a slow
// worker refused once they are staler than max_staleness.
#include "ringmaster/train/parameter_server.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <span>
#include <thread>
#include <vector>

#include "ringmaster/train/trainer.h"

namespace ringmaster::train {
namespace {

NativeConfig smallConfig() {
  NativeConfig c;
  c.model.hidden = {32, 16};
  c.dataset.samples = 2048;
  c.dataset.features = 8;
  c.dataset.classes = 4;
  c.dataset.eval_fraction = 0.125;
  c.batch_size = 16;
  c.steps = 30;
  c.optimizer.lr = 0.05;
  c.optimizer.momentum = 0.9;
  c.optimizer.warmup_steps = 5;
  c.seed = 3;
  return c;
}

Trainer makeTrainer(const NativeConfig& config, TrainerOptions options) {
  Result<Trainer> trainer = Trainer::create(config, std::move(options));
  EXPECT_TRUE(trainer.isOk()) << trainer.status().toString();
  return std::move(*trainer);
}

TEST(ParameterServer, LastRanksAreServersAndWorkersKeepTheirRank) {
  const PsLayout layout{5, 2};
  EXPECT_EQ(layout.workers(), 3);
  for (int rank = 0; rank < 3; ++rank) EXPECT_FALSE(layout.isServer(rank)) << rank;
  EXPECT_TRUE(layout.isServer(3));
  EXPECT_TRUE(layout.isServer(4));
  EXPECT_EQ(layout.serverRank(0), 3);
  EXPECT_EQ(layout.serverRank(1), 4);
  EXPECT_EQ(layout.shardOf(4), 1);
}

TEST(ParameterServer, ShardsAreContiguousBalancedAndCoverEveryParameter) {
  for (const size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{17226}}) {
    for (const int servers : {1, 2, 3, 5, 8}) {
      size_t next = 0;
      size_t smallest = n;
      size_t largest = 0;
      for (int s = 0; s < servers; ++s) {
        const ShardRange range = shardRange(n, servers, s);
        EXPECT_EQ(range.begin, next) << n << " over " << servers << ", shard " << s;
        next = range.end;
        smallest = std::min(smallest, range.size());
        largest = std::max(largest, range.size());
      }
      EXPECT_EQ(next, n) << n << " over " << servers;
      EXPECT_LE(largest - smallest, 1u) << n << " over " << servers;
    }
  }
  // The first n % S shards hold the extra values.
  EXPECT_EQ(shardRange(17226, 4, 0).size(), 4307u);
  EXPECT_EQ(shardRange(17226, 4, 1).size(), 4307u);
  EXPECT_EQ(shardRange(17226, 4, 2).size(), 4306u);
  EXPECT_EQ(shardRange(17226, 4, 3).end, 17226u);
}

TEST(ParameterServer, PushesStalerThanTheLimitAreRefused) {
  EXPECT_TRUE(judgePush(7, 7, 0).accepted);
  EXPECT_EQ(judgePush(7, 7, 0).staleness, 0u);
  EXPECT_FALSE(judgePush(8, 7, 0).accepted);
  EXPECT_TRUE(judgePush(11, 7, 4).accepted);  // exactly max_staleness behind
  const PushVerdict late = judgePush(12, 7, 4);
  EXPECT_FALSE(late.accepted);
  EXPECT_EQ(late.staleness, 5u);
}

TEST(ParameterServer, AsyncOptimizerCountsPushesSyncCountsSteps) {
  OptimizerOptions spec;
  spec.warmup_steps = 10;
  const OptimizerOptions sync = shardOptimizerOptions(spec, 160, PsMode::kSync, 3);
  EXPECT_EQ(sync.total_steps, 160u);
  EXPECT_EQ(sync.warmup_steps, 10u);
  const OptimizerOptions async = shardOptimizerOptions(spec, 160, PsMode::kAsync, 3);
  EXPECT_EQ(async.total_steps, 480u);
  EXPECT_EQ(async.warmup_steps, 30u);
}

TEST(ParameterServer, ShardServerAppliesTheMeanOrARefusesAStalePush) {
  OptimizerOptions options;
  options.lr = 0.5;
  options.momentum = 0.0;
  options.schedule = LrSchedule::kConstant;
  const std::vector<float> initial = {1.0f, 2.0f};
  Result<ShardServer> server = ShardServer::create(options, initial);
  ASSERT_TRUE(server.isOk()) << server.status().toString();
  const std::vector<float> a = {1.0f, 0.0f}, b = {3.0f, 2.0f};
  const std::vector<std::span<const float>> grads = {a, b};
  EXPECT_DOUBLE_EQ(server->applyMean(grads), 0.5);
  EXPECT_EQ(server->version(), 1u);
  EXPECT_FLOAT_EQ(server->params()[0], 1.0f - 0.5f * 2.0f);
  EXPECT_FLOAT_EQ(server->params()[1], 2.0f - 0.5f * 1.0f);

  // Version 1 now: a push computed on version 0 is 1 behind.
  const std::vector<float> push = {4.0f, 4.0f};
  EXPECT_FALSE(server->applyPush(push, 0, 0, 0.5f).accepted);
  EXPECT_EQ(server->version(), 1u);
  EXPECT_FLOAT_EQ(server->params()[0], 0.0f);
  const PushVerdict taken = server->applyPush(push, 0, 1, 0.5f);
  EXPECT_TRUE(taken.accepted);
  EXPECT_EQ(taken.staleness, 1u);
  EXPECT_EQ(server->version(), 2u);
  EXPECT_FLOAT_EQ(server->params()[0], 0.0f - 0.5f * 2.0f);  // the push scaled by 1/2
}

// Synchronous servers in shared memory: every worker's thread leaves its gradient in a slot;
// worker 0 has each server apply the mean of its shard; every worker pulls all shards.
class InProcessServers {
 public:
  InProcessServers(const NativeConfig& config, std::span<const float> initial, int workers,
                   int servers, uint64_t steps)
      : workers_(workers), servers_(servers), slots_(workers), barrier_(workers) {
    for (int s = 0; s < servers; ++s) {
      const ShardRange range = shardRange(initial.size(), servers, s);
      Result<ShardServer> server = ShardServer::create(
          shardOptimizerOptions(config.optimizer, steps, PsMode::kSync, workers),
          initial.subspan(range.begin, range.size()));
      EXPECT_TRUE(server.isOk()) << server.status().toString();
      shards_.push_back(std::move(*server));
    }
  }

  Result<double> update(int worker, std::span<float> params, std::span<const float> grads) {
    slots_[worker].assign(grads.begin(), grads.end());
    barrier_.arrive_and_wait();
    if (worker == 0) {
      for (int s = 0; s < servers_; ++s) {
        const ShardRange range = shardRange(params.size(), servers_, s);
        std::vector<std::span<const float>> pushes;
        for (const std::vector<float>& slot : slots_) {
          pushes.push_back(std::span<const float>(slot).subspan(range.begin, range.size()));
        }
        shards_[s].applyMean(pushes);
      }
    }
    barrier_.arrive_and_wait();
    for (int s = 0; s < servers_; ++s) {
      const ShardRange range = shardRange(params.size(), servers_, s);
      std::copy(shards_[s].params().begin(), shards_[s].params().end(),
                params.begin() + static_cast<std::ptrdiff_t>(range.begin));
    }
    const double lr = shards_[0].lastLr();
    barrier_.arrive_and_wait();  // no slot is overwritten before every worker has pulled
    return lr;
  }

 private:
  int workers_;
  int servers_;
  std::vector<std::vector<float>> slots_;
  std::vector<ShardServer> shards_;
  std::barrier<> barrier_;
};

// `workers` trainers stepped on their own threads, their updates made by `update`.
std::vector<std::vector<StepReport>> stepOnThreads(std::vector<Trainer>& ranks, int steps) {
  std::vector<std::vector<StepReport>> reports(ranks.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < ranks.size(); ++r) {
    threads.emplace_back([&, r] {
      for (int s = 0; s < steps; ++s) {
        Result<StepReport> report = ranks[r].step();
        ASSERT_TRUE(report.isOk()) << report.status().toString();
        reports[r].push_back(*report);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return reports;
}

TEST(ParameterServer, SyncServersFollowAllreduceSgdStepForStep) {
  setBlasThreads(1);
  constexpr int kWorkers = 3;
  constexpr int kServers = 2;
  const NativeConfig config = smallConfig();

  // Allreduce on 3 ranks: the gradients averaged in place, every rank its own optimizer.
  std::vector<std::vector<float>> slots(kWorkers);
  std::barrier sync(kWorkers);
  std::vector<Trainer> allreduce;
  for (int r = 0; r < kWorkers; ++r) {
    TrainerOptions options;
    options.rank = r;
    options.world_size = kWorkers;
    options.reduce_gradients = [&slots, &sync, r](std::span<float> grads) {
      slots[r].assign(grads.begin(), grads.end());
      sync.arrive_and_wait();
      for (size_t i = 0; i < grads.size(); ++i) {
        float sum = 0.0f;
        for (int k = 0; k < kWorkers; ++k) sum += slots[k][i];
        grads[i] = sum / kWorkers;
      }
      sync.arrive_and_wait();
      return Status::ok();
    };
    allreduce.push_back(makeTrainer(config, std::move(options)));
  }

  // The same 3 ranks as workers of 2 servers (ranks 3 and 4 of a 5-rank job).
  std::vector<Trainer> workers;
  std::unique_ptr<InProcessServers> servers;
  for (int r = 0; r < kWorkers; ++r) {
    TrainerOptions options;
    options.rank = r;
    options.world_size = kWorkers;
    options.remote_update = [&servers, r](std::span<float> params, std::span<const float> grads) {
      return servers->update(r, params, grads);
    };
    workers.push_back(makeTrainer(config, std::move(options)));
  }
  servers = std::make_unique<InProcessServers>(config, workers[0].model().params(), kWorkers,
                                               kServers, workers[0].totalSteps());

  const int steps = static_cast<int>(config.steps);
  const auto expected = stepOnThreads(allreduce, steps);
  const auto got = stepOnThreads(workers, steps);
  for (int r = 0; r < kWorkers; ++r) {
    for (int s = 0; s < steps; ++s) {
      EXPECT_EQ(got[r][s].loss, expected[r][s].loss) << "worker " << r << ", step " << s + 1;
      EXPECT_DOUBLE_EQ(got[r][s].lr, expected[r][s].lr) << "step " << s + 1;
    }
    // Same sum order, same division, the same element-wise optimizer: the same bits.
    EXPECT_EQ(workers[r].paramChecksum(), allreduce[0].paramChecksum()) << "worker " << r;
  }
  EXPECT_LT(got[0].back().loss, got[0].front().loss);
}

TEST(ParameterServer, AsyncRefusesOnlyTheSlowWorkersStalePushes) {
  setBlasThreads(1);
  constexpr int kWorkers = 3;
  constexpr uint64_t kMaxStaleness = 4;
  NativeConfig config = smallConfig();
  config.steps = 60;
  config.strategy.parameter_server = {1, PsMode::kAsync, kMaxStaleness, 0};

  // One server, pushes taken in the order the test steps the workers. Each worker keeps the
  // version of its last pull.
  std::unique_ptr<ShardServer> server;
  std::vector<uint64_t> pulled(kWorkers, 0);
  std::vector<std::vector<PushVerdict>> verdicts(kWorkers);
  std::vector<Trainer> workers;
  for (int r = 0; r < kWorkers; ++r) {
    TrainerOptions options;
    options.rank = r;
    options.world_size = kWorkers;
    options.remote_update = [&, r](std::span<float> params,
                                   std::span<const float> grads) -> Result<double> {
      verdicts[r].push_back(server->applyPush(grads, pulled[r], kMaxStaleness, 1.0f / kWorkers));
      std::copy(server->params().begin(), server->params().end(), params.begin());
      pulled[r] = server->version();
      return server->lastLr();
    };
    workers.push_back(makeTrainer(config, std::move(options)));
  }
  Result<ShardServer> created = ShardServer::create(
      shardOptimizerOptions(config.optimizer, workers[0].totalSteps(), PsMode::kAsync, kWorkers),
      workers[0].model().params());
  ASSERT_TRUE(created.isOk());
  server = std::make_unique<ShardServer>(std::move(*created));

  // Workers 0 and 1 step every round; worker 2 is three times slower. Between two of its pushes
  // the others push 6 times: staleness 6 > 4, refused (its first push, on version 0, is 2
  // behind and taken). Theirs is 1 or 2: only the other fast worker pushed since their pull.
  const double first_loss = workers[0].evaluate().loss;
  for (int round = 0; round < 60; ++round) {
    for (int r = 0; r < 2; ++r) ASSERT_TRUE(workers[r].step().isOk());
    if (round % 3 == 0) {
      ASSERT_TRUE(workers[2].step().isOk());
    }
  }
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(verdicts[r].size(), 60u);
    for (const PushVerdict& v : verdicts[r]) {
      EXPECT_TRUE(v.accepted);
      EXPECT_LE(v.staleness, 2u);
    }
  }
  ASSERT_EQ(verdicts[2].size(), 20u);
  EXPECT_TRUE(verdicts[2][0].accepted);  // pulled version 0, only workers 0 and 1 pushed
  EXPECT_EQ(verdicts[2][0].staleness, 2u);
  for (size_t i = 1; i < verdicts[2].size(); ++i) {
    EXPECT_FALSE(verdicts[2][i].accepted) << "push " << i;
    EXPECT_EQ(verdicts[2][i].staleness, 6u) << "push " << i;
  }
  EXPECT_EQ(server->version(), 121u);  // 120 pushes of the fast workers and the slow one's first
  EXPECT_LT(workers[0].evaluate().loss, 0.8 * first_loss);
}

}  // namespace
}  // namespace ringmaster::train
