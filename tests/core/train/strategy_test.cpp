// native.strategy's math in one process: local SGD's averaging (four ranks on threads, averaging
// through shared memory), its H = 1 equivalence with gradient allreduce, by_label shards, and the
// built-in digits data set.
#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <map>
#include <set>
#include <span>
#include <thread>
#include <vector>

#include "ringmaster/train/data.h"
#include "ringmaster/train/sampler.h"
#include "ringmaster/train/trainer.h"

namespace ringmaster::train {
namespace {

constexpr int kWorld = 4;

NativeConfig smallConfig() {
  NativeConfig c;
  c.model.hidden = {32, 16};
  c.dataset.samples = 2048;
  c.dataset.features = 8;
  c.dataset.classes = 4;
  c.dataset.eval_fraction = 0.125;
  c.batch_size = 16;
  c.steps = 40;
  c.optimizer.lr = 0.05;
  c.optimizer.momentum = 0.9;
  c.seed = 3;
  return c;
}

// Averages a buffer over the ranks' threads: every rank's copy goes to its slot, `observe` sees
// all slots (before the average), then every rank takes the mean.
class ThreadAverager {
 public:
  explicit ThreadAverager(int world) : world_(world), slots_(world), barrier_(world) {}
  std::function<void(const std::vector<std::vector<float>>&)> observe;
  bool sum = false;  // leave the sum, not the mean

  Status average(int rank, std::span<float> values) {
    slots_[rank].assign(values.begin(), values.end());
    barrier_.arrive_and_wait();
    if (rank == 0 && observe) observe(slots_);
    barrier_.arrive_and_wait();
    for (size_t i = 0; i < values.size(); ++i) {
      float sum = 0.0f;
      for (int k = 0; k < world_; ++k) sum += slots_[k][i];
      values[i] = this->sum ? sum : sum / static_cast<float>(world_);
    }
    barrier_.arrive_and_wait();  // nobody overwrites a slot before all have read it
    return Status::ok();
  }

 private:
  int world_;
  std::vector<std::vector<float>> slots_;
  std::barrier<> barrier_;
};

// Four trainers of `config`, with gradients averaged (allreduce) or parameters (local SGD) as the
// config says, stepped `steps` times on their own threads.
struct SimulatedRun {
  std::vector<Trainer> ranks;
  std::vector<std::vector<StepReport>> reports;
};

SimulatedRun runRanks(const NativeConfig& config, int steps, ThreadAverager& averager,
                      float grad_prescale = 1.0f) {
  SimulatedRun run;
  for (int r = 0; r < kWorld; ++r) {
    TrainerOptions options;
    options.rank = r;
    options.world_size = kWorld;
    options.grad_prescale = grad_prescale;
    auto hook = [&averager, r](std::span<float> values) { return averager.average(r, values); };
    if (config.strategy.localSgd()) {
      options.average_params = hook;
    } else {
      options.reduce_gradients = hook;
    }
    Result<Trainer> trainer = Trainer::create(config, std::move(options));
    EXPECT_TRUE(trainer.isOk()) << trainer.status().toString();
    run.ranks.push_back(std::move(*trainer));
  }
  run.reports.resize(kWorld);
  std::vector<std::thread> threads;
  for (int r = 0; r < kWorld; ++r) {
    threads.emplace_back([&, r] {
      for (int s = 0; s < steps; ++s) {
        Result<StepReport> report = run.ranks[r].step();
        ASSERT_TRUE(report.isOk()) << report.status().toString();
        run.reports[r].push_back(*report);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return run;
}

double maxAbsDiff(std::span<const float> a, std::span<const float> b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
  }
  return worst;
}

TEST(LocalSgd, AveragingLeavesEveryRankWithTheMeanOfTheRanksModels) {
  setBlasThreads(1);
  NativeConfig config = smallConfig();
  config.strategy.average_every = 5;
  config.steps = 12;  // averagings after steps 5, 10 and 12 (the last)
  ThreadAverager averager(kWorld);
  std::vector<std::vector<std::vector<float>>> before;  // per averaging: the ranks' models
  averager.observe = [&](const std::vector<std::vector<float>>& slots) { before.push_back(slots); };
  SimulatedRun run = runRanks(config, 12, averager);
  ASSERT_EQ(before.size(), 3u);

  // Between averagings the ranks drift apart (each stepped on its own data)...
  EXPECT_GT(maxAbsDiff(before.back()[0], before.back()[1]), 1e-4);
  // ...and the averaging gives each the element-wise mean of the four.
  std::vector<float> mean(before.back()[0].size());
  for (size_t i = 0; i < mean.size(); ++i) {
    double sum = 0.0;
    for (int r = 0; r < kWorld; ++r) sum += before.back()[r][i];
    mean[i] = static_cast<float>(sum / kWorld);
  }
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_LT(maxAbsDiff(run.ranks[r].model().params(), mean), 1e-6) << "rank " << r;
    EXPECT_EQ(run.ranks[r].paramChecksum(), run.ranks[0].paramChecksum()) << "rank " << r;
  }
  // Averaged exactly after the steps that are multiples of H, and after the last one.
  for (const StepReport& report : run.reports[0]) {
    EXPECT_EQ(report.averaged, report.step % 5 == 0 || report.step == 12) << report.step;
  }
}

// H = 1 with SGD + momentum: averaging the models after every step is averaging the gradients
// (the update is linear in them), up to float rounding.
TEST(LocalSgd, AveragingEveryStepFollowsGradientAllreduce) {
  setBlasThreads(1);
  NativeConfig allreduce = smallConfig();
  NativeConfig local = smallConfig();
  local.strategy.average_every = 1;
  ThreadAverager a(kWorld);
  ThreadAverager b(kWorld);
  SimulatedRun sync = runRanks(allreduce, 40, a);
  SimulatedRun averaged = runRanks(local, 40, b);
  const double diff =
      maxAbsDiff(sync.ranks[0].model().params(), averaged.ranks[0].model().params());
  EXPECT_LT(diff, 1e-4);
  for (int s = 0; s < 40; ++s) {
    EXPECT_NEAR(sync.reports[0][s].loss, averaged.reports[0][s].loss, 1e-4) << "step " << s;
  }
  // Sanity: averaging every 8 steps is a different trajectory.
  NativeConfig eight = smallConfig();
  eight.strategy.average_every = 8;
  ThreadAverager c(kWorld);
  SimulatedRun every8 = runRanks(eight, 40, c);
  EXPECT_GT(maxAbsDiff(sync.ranks[0].model().params(), every8.ranks[0].model().params()), 1e-3);
}

// The worker's allreduce sums gradients the backward pass scaled by 1/world (the average's
// division fused into the loss scale): with a power-of-two world that is the very same
// arithmetic as averaging after the sum, bit for bit.
TEST(GradPrescale, SummingPrescaledGradientsIsAveraging) {
  setBlasThreads(1);
  NativeConfig config = smallConfig();
  config.grad_accumulation = 2;
  ThreadAverager mean(kWorld);
  ThreadAverager sum(kWorld);
  sum.sum = true;
  SimulatedRun averaged = runRanks(config, 12, mean);
  SimulatedRun summed = runRanks(config, 12, sum, 1.0f / kWorld);
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_EQ(summed.ranks[r].paramChecksum(), averaged.ranks[r].paramChecksum()) << "rank " << r;
  }
  for (int s = 0; s < 12; ++s) {
    EXPECT_EQ(summed.reports[0][s].grad_norm, averaged.reports[0][s].grad_norm) << "step " << s;
  }
  // Sanity: without the prescale the sum is four times the average (another trajectory).
  ThreadAverager unscaled(kWorld);
  unscaled.sum = true;
  SimulatedRun four = runRanks(config, 12, unscaled);
  EXPECT_NE(four.ranks[0].paramChecksum(), averaged.ranks[0].paramChecksum());
}

TEST(ByLabel, ShardsAreDisjointCoverTheDataAndHoldTheirLabels) {
  Result<Dataset> digits = loadDigits();
  ASSERT_TRUE(digits.isOk()) << digits.status().toString();
  std::set<uint32_t> seen;
  size_t total = 0;
  for (int r = 0; r < kWorld; ++r) {
    Result<std::vector<uint32_t>> shard = byLabelShard(digits->y, 10, r, kWorld);
    ASSERT_TRUE(shard.isOk()) << shard.status().toString();
    std::set<int> labels;
    for (uint32_t i : *shard) {
      labels.insert(static_cast<int>(digits->y[i]));
      EXPECT_TRUE(seen.insert(i).second) << "sample " << i << " in two shards";
    }
    total += shard->size();
    std::set<int> expected;
    for (int l = r; l < 10; l += kWorld) expected.insert(l);
    EXPECT_EQ(labels, expected) << "rank " << r;
  }
  EXPECT_EQ(total, digits->size());
  EXPECT_EQ(seen.size(), digits->size());

  Result<std::vector<uint32_t>> too_many = byLabelShard(digits->y, 10, 0, 11);
  ASSERT_FALSE(too_many.isOk());
  EXPECT_NE(too_many.status().message().find("10 classes for 11 ranks"), std::string::npos)
      << too_many.status().message();
}

// The sampler draws only the pool, and every rank as many samples per epoch as under iid.
TEST(ByLabel, SamplerDrawsOnlyItsPoolAndKeepsTheStepsOfIid) {
  NativeConfig config = smallConfig();
  config.dataset.kind = DatasetKind::kDigits;
  config.strategy.data_split = DataSplit::kByLabel;
  config.epochs = 1;
  config.steps = 0;
  size_t steps = 0;
  for (int r = 0; r < kWorld; ++r) {
    TrainerOptions options;
    options.rank = r;
    options.world_size = kWorld;
    Result<Trainer> trainer = Trainer::create(config, options);
    ASSERT_TRUE(trainer.isOk()) << trainer.status().toString();
    const DistributedSampler& sampler = trainer->sampler();
    const Dataset& train = trainer->data().train;
    EXPECT_EQ(sampler.samplesPerEpoch(), (train.size() + kWorld - 1) / kWorld);
    std::set<uint32_t> distinct;
    for (uint32_t i : sampler.shard()) {
      EXPECT_EQ(static_cast<int>(train.y[i]) % kWorld, r) << "sample " << i;
      distinct.insert(i);
    }
    // The pool is a quarter of the data or so: most of it is drawn in one epoch.
    EXPECT_GT(distinct.size(), sampler.samplesPerEpoch() * 3 / 4);
    if (r == 0) steps = trainer->totalSteps();
    EXPECT_EQ(trainer->totalSteps(), steps) << "rank " << r;
  }
  // An elastic resume would give every rank other labels: refused, naming why.
  SamplerOptions pooled;
  pooled.dataset_size = 100;
  pooled.world_size = 4;
  pooled.pool = {1, 5, 9};
  Result<DistributedSampler> sampler = DistributedSampler::create(pooled);
  ASSERT_TRUE(sampler.isOk());
  EXPECT_TRUE(sampler->restore({0, 10}, 4).isOk());
  const Status elastic = sampler->restore({0, 10}, 2);
  EXPECT_NE(elastic.message().find("by_label split cannot continue with 4"), std::string::npos)
      << elastic.message();
  pooled.pool = {100};
  EXPECT_FALSE(DistributedSampler::create(pooled).isOk());  // past the data set

  // A regression task has no labels to split by.
  config.model.task = Task::kRegression;
  config.dataset.kind = DatasetKind::kSynthetic;
  TrainerOptions options;
  options.world_size = kWorld;
  Result<Trainer> regression = Trainer::create(config, options);
  ASSERT_FALSE(regression.isOk());
  EXPECT_NE(regression.status().message().find("by_label needs a classification task"),
            std::string::npos)
      << regression.status().message();
}

TEST(Digits, BuiltInCopyMatchesScikitLearnsLoadDigits) {
  Result<Dataset> digits = loadDigits();
  ASSERT_TRUE(digits.isOk()) << digits.status().toString();
  EXPECT_EQ(digits->size(), 1797u);
  EXPECT_EQ(digits->features, 64u);
  EXPECT_EQ(digits->classes, 10u);
  // Class counts of sklearn.datasets.load_digits().target.
  std::map<int, int> counts;
  for (float y : digits->y) ++counts[static_cast<int>(y)];
  const std::map<int, int> expected = {{0, 178}, {1, 182}, {2, 177}, {3, 183}, {4, 181},
                                       {5, 182}, {6, 181}, {7, 179}, {8, 174}, {9, 180}};
  EXPECT_EQ(counts, expected);
  EXPECT_EQ(*std::max_element(digits->x.begin(), digits->x.end()), 16.0f);
  EXPECT_EQ(*std::min_element(digits->x.begin(), digits->x.end()), 0.0f);
  EXPECT_EQ(digits->x[2], 5.0f);  // the first image's third pixel
}

TEST(Digits, OneRankLearnsThemFromTheConfig) {
  setBlasThreads(1);
  Result<NativeConfig> config = parseNativeConfig(R"(
model: {kind: mlp, hidden: [64], activation: relu}
dataset: {kind: digits}
batch_size: 32
epochs: 20
optimizer: {name: sgd, lr: 0.05, momentum: 0.9}
)");
  ASSERT_TRUE(config.isOk()) << config.status().toString();
  Result<Trainer> trainer = Trainer::create(*config);
  ASSERT_TRUE(trainer.isOk()) << trainer.status().toString();
  EXPECT_EQ(trainer->data().eval.size(), 180u);  // round(1797 * 0.1)
  ASSERT_TRUE(trainer->run().isOk());
  EXPECT_GE(trainer->evaluate().accuracy, 0.95);
}

}  // namespace
}  // namespace ringmaster::train
