#include "ringmaster/train/trainer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <barrier>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace ringmaster::train {
namespace {

namespace fs = std::filesystem;

NativeConfig smallConfig() {
  NativeConfig c;
  c.model.hidden = {32, 16};
  c.dataset.samples = 2048;
  c.dataset.features = 8;
  c.dataset.classes = 3;
  c.dataset.eval_fraction = 0.125;  // 1792 training samples = 28 batches of 64
  c.batch_size = 64;
  c.steps = 40;
  c.optimizer.lr = 0.05;
  c.optimizer.momentum = 0.9;
  c.seed = 3;
  return c;
}

Trainer makeTrainer(const NativeConfig& config, TrainerOptions options = {}) {
  Result<Trainer> trainer = Trainer::create(config, std::move(options));
  EXPECT_TRUE(trainer.isOk()) << trainer.status().toString();
  return std::move(*trainer);
}

double maxAbsDiff(std::span<const float> a, std::span<const float> b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
  }
  return worst;
}

class ScopedDir {
 public:
  explicit ScopedDir(const std::string& name)
      : path_((fs::temp_directory_path() / (name + "_" + std::to_string(::getpid()))).string()) {
    fs::remove_all(path_);
  }
  ~ScopedDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(Trainer, ReachesHighHeldOutAccuracyOnSyntheticClassification) {
  setBlasThreads(1);
  NativeConfig c;  // the example: MLP 32 -> 128 -> 64 -> 4, SGD momentum, cosine
  c.dataset.samples = 20000;
  c.dataset.features = 32;
  c.dataset.classes = 4;
  c.batch_size = 64;
  c.epochs = 3;
  c.optimizer.lr = 0.05;
  c.optimizer.momentum = 0.9;
  Trainer trainer = makeTrainer(c);
  EXPECT_EQ(trainer.stepsPerEpoch(), (18000u + 63) / 64);
  EXPECT_EQ(trainer.totalSteps(), 3 * trainer.stepsPerEpoch());

  const auto start = std::chrono::steady_clock::now();
  std::vector<EvalReport> evals;
  double first_loss = 0.0;
  double last_loss = 0.0;
  Trainer::Callbacks callbacks;
  callbacks.on_step = [&](const StepReport& r) {
    if (r.step == 1) first_loss = r.loss;
    last_loss = r.loss;
    EXPECT_GT(r.samples_per_sec, 0.0);
    EXPECT_GT(r.lr, 0.0);
  };
  callbacks.on_eval = [&](const EvalReport& e) { evals.push_back(e); };
  ASSERT_TRUE(trainer.run(callbacks).isOk());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  ASSERT_EQ(evals.size(), 3u);  // eval_every: 1 epoch
  EXPECT_EQ(evals.back().samples, 2000u);
  EXPECT_GE(evals.back().accuracy, 0.95) << "held-out accuracy after 3 epochs";
  EXPECT_LT(last_loss, first_loss);
  EXPECT_LT(seconds, 20.0);
  std::printf("3 epochs of 18000 samples in %.2f s; held-out accuracy %.4f, loss %.4f\n", seconds,
              evals.back().accuracy, evals.back().loss);
}

// Real data: Fashion-MNIST from Debian's package, trained on its 60,000 images and evaluated on
// its 10,000 test images. Two epochs of a small MLP land where the data set's own benchmark
// table puts MLPs (0.85-0.88).
TEST(Trainer, LearnsFashionMnistAsItsBenchmarksSay) {
  if (Result<IdxSplitFiles> files = fashionMnistFiles(); !files.isOk()) {
    GTEST_SKIP() << files.status().message();
  }
  setBlasThreads(1);
  NativeConfig c;
  c.dataset.kind = DatasetKind::kFashionMnist;
  c.model.hidden = {256, 128};
  c.batch_size = 128;
  c.epochs = 2;
  c.optimizer.lr = 0.05;
  c.optimizer.momentum = 0.9;
  Trainer trainer = makeTrainer(c);
  ASSERT_EQ(trainer.data().train.size(), 60000u);
  ASSERT_EQ(trainer.data().eval.size(), 10000u);
  EXPECT_EQ(trainer.data().train.features, 784u);
  EXPECT_EQ(trainer.data().train.classes, 10u);
  std::vector<EvalReport> evals;
  Trainer::Callbacks callbacks;
  callbacks.on_eval = [&](const EvalReport& e) { evals.push_back(e); };
  ASSERT_TRUE(trainer.run(callbacks).isOk());
  ASSERT_EQ(evals.size(), 2u);
  EXPECT_EQ(evals.back().samples, 10000u);
  EXPECT_GE(evals.back().accuracy, 0.85) << "test accuracy after 2 epochs";
  EXPECT_LT(evals.back().accuracy, 0.95);  // more would mean the test set leaked into training
}

TEST(Trainer, SharesOfTheEvaluationAddUpToTheWhole) {
  NativeConfig c = smallConfig();
  c.steps = 20;
  Trainer trainer = makeTrainer(c);
  ASSERT_TRUE(trainer.run().isOk());
  const EvalReport whole = trainer.evaluate();
  ASSERT_GT(whole.samples, 3u);
  EvalTotals sum;
  for (int shard = 0; shard < 3; ++shard) {
    const EvalTotals share = trainer.evaluateShare(shard, 3);
    EXPECT_GE(share.samples, whole.samples / 3) << "share " << shard;
    sum.loss_sum += share.loss_sum;
    sum.correct += share.correct;
    sum.samples += share.samples;
  }
  const EvalReport joined = trainer.evalReport(sum);
  EXPECT_EQ(joined.samples, whole.samples);
  EXPECT_DOUBLE_EQ(joined.accuracy, whole.accuracy);
  EXPECT_NEAR(joined.loss, whole.loss, 1e-6 * whole.loss);
  EXPECT_EQ(trainer.evaluateShare(5, 3 * static_cast<int>(whole.samples) + 1).samples, 0u)
      << "more shares than samples: some are empty";
}

TEST(Trainer, LearnsSyntheticRegression) {
  NativeConfig c = smallConfig();
  c.model.task = Task::kRegression;
  c.model.activation = Activation::kTanh;
  c.dataset.samples = 8000;
  c.steps = 0;
  c.epochs = 8;
  c.optimizer.kind = OptimizerKind::kAdam;
  c.optimizer.lr = 3e-3;
  Trainer trainer = makeTrainer(c);
  const double before = trainer.evaluate().mse;
  ASSERT_TRUE(trainer.run().isOk());
  const EvalReport after = trainer.evaluate();
  EXPECT_GT(before, 0.3);
  EXPECT_LT(after.mse, 0.1) << "held-out MSE; the targets have variance ~1";
  EXPECT_DOUBLE_EQ(after.accuracy, 0.0);
}

TEST(Trainer, AccumulatingKMicroBatchesEqualsOneBatchOfKTimesTheSize) {
  NativeConfig big = smallConfig();
  big.batch_size = 64;
  NativeConfig micro = smallConfig();
  micro.batch_size = 16;
  micro.grad_accumulation = 4;
  Trainer a = makeTrainer(big);
  Trainer b = makeTrainer(micro);
  ASSERT_EQ(a.stepsPerEpoch(), b.stepsPerEpoch());
  for (int s = 0; s < 30; ++s) {
    Result<StepReport> ra = a.step();
    Result<StepReport> rb = b.step();
    ASSERT_TRUE(ra.isOk() && rb.isOk());
    EXPECT_EQ(ra->samples, 64u);
    EXPECT_EQ(rb->samples, 64u);
    EXPECT_NEAR(ra->loss, rb->loss, 1e-4 * std::max(1.0, ra->loss)) << "step " << s;
  }
  EXPECT_LT(maxAbsDiff(a.model().params(), b.model().params()), 1e-4);
}

TEST(Trainer, LastStepOfAnEpochAveragesTheMicroBatchesLeft) {
  NativeConfig c = smallConfig();
  c.batch_size = 64;
  c.grad_accumulation = 5;  // 28 batches per epoch: 5 steps of 5, then one of 3
  Trainer trainer = makeTrainer(c);
  EXPECT_EQ(trainer.stepsPerEpoch(), 6u);
  std::vector<size_t> samples;
  std::vector<bool> ends;
  for (int s = 0; s < 7; ++s) {
    Result<StepReport> r = trainer.step();
    ASSERT_TRUE(r.isOk());
    samples.push_back(r->samples);
    ends.push_back(r->epoch_end);
  }
  EXPECT_EQ(samples, (std::vector<size_t>{320, 320, 320, 320, 320, 192, 320}));
  EXPECT_EQ(ends, (std::vector<bool>{false, false, false, false, false, true, false}));
}

TEST(Trainer, LayerHookRunsOncePerStepLastLayerFirstBeforeTheReduction) {
  NativeConfig c = smallConfig();
  c.grad_accumulation = 2;
  std::vector<size_t> events;  // layer index, or 99 for the reduction
  TrainerOptions options;
  options.on_layer_grad_ready = [&](size_t layer, float*, size_t) { events.push_back(layer); };
  options.reduce_gradients = [&](std::span<float>) {
    events.push_back(99);
    return Status::ok();
  };
  Trainer trainer = makeTrainer(c, options);
  ASSERT_TRUE(trainer.step().isOk());
  EXPECT_EQ(events, (std::vector<size_t>{2, 1, 0, 99}));
}

TEST(Trainer, FailedReductionFailsTheStepAndLeavesParametersAlone) {
  TrainerOptions options;
  options.reduce_gradients = [](std::span<float>) {
    return Status(ErrorCode::kTimeout, "rank 2 did not arrive");
  };
  Trainer trainer = makeTrainer(smallConfig(), options);
  const uint64_t before = trainer.paramChecksum();
  Result<StepReport> r = trainer.step();
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), ErrorCode::kTimeout);
  EXPECT_NE(r.status().message().find("rank 2 did not arrive"), std::string::npos);
  EXPECT_EQ(trainer.paramChecksum(), before);
}

TEST(Trainer, ClippingBoundsTheUpdateAndReportsTheNormBeforeIt) {
  NativeConfig c = smallConfig();
  c.optimizer.momentum = 0.0;
  c.optimizer.schedule = LrSchedule::kConstant;
  c.clip_norm = 1e-3;
  Trainer trainer = makeTrainer(c);
  const std::vector<float> before(trainer.model().params().begin(), trainer.model().params().end());
  Result<StepReport> r = trainer.step();
  ASSERT_TRUE(r.isOk());
  EXPECT_GT(r->grad_norm, 1e-3);
  // Plain SGD moved the parameters by lr * clipped gradient: norm lr * clip_norm.
  double moved = 0.0;
  for (size_t i = 0; i < before.size(); ++i) {
    const double d = trainer.model().params()[i] - before[i];
    moved += d * d;
  }
  EXPECT_NEAR(std::sqrt(moved), 0.05 * 1e-3, 5e-7);
}

// Four ranks in one process, one thread each, averaging gradients through shared memory: they
// stay bit-identical and follow one rank with the four ranks' combined batch.
TEST(Trainer, SimulatedDataParallelFollowsTheSingleRankRun) {
  setBlasThreads(1);
  constexpr int kWorld = 4;
  NativeConfig single_config = smallConfig();
  single_config.batch_size = 64;
  NativeConfig rank_config = smallConfig();
  rank_config.batch_size = 64 / kWorld;
  constexpr int kSteps = 40;

  std::vector<std::vector<float>> slots(kWorld);
  std::barrier sync(kWorld);
  std::vector<Trainer> ranks;
  for (int r = 0; r < kWorld; ++r) {
    TrainerOptions options;
    options.rank = r;
    options.world_size = kWorld;
    options.reduce_gradients = [&slots, &sync, r](std::span<float> grads) {
      slots[r].assign(grads.begin(), grads.end());
      sync.arrive_and_wait();
      for (size_t i = 0; i < grads.size(); ++i) {
        float sum = 0.0f;
        for (int k = 0; k < kWorld; ++k) sum += slots[k][i];
        grads[i] = sum / kWorld;
      }
      sync.arrive_and_wait();  // nobody overwrites a slot before all have read it
      return Status::ok();
    };
    ranks.push_back(makeTrainer(rank_config, std::move(options)));
  }
  std::vector<std::vector<double>> rank_losses(kWorld);
  std::vector<std::thread> threads;
  for (int r = 0; r < kWorld; ++r) {
    threads.emplace_back([&, r] {
      for (int s = 0; s < kSteps; ++s) {
        Result<StepReport> report = ranks[r].step();
        ASSERT_TRUE(report.isOk());
        rank_losses[r].push_back(report->loss);
      }
    });
  }
  for (std::thread& t : threads) t.join();

  Trainer single = makeTrainer(single_config);
  std::vector<double> single_losses;
  for (int s = 0; s < kSteps; ++s) {
    Result<StepReport> report = single.step();
    ASSERT_TRUE(report.isOk());
    single_losses.push_back(report->loss);
  }

  for (int r = 1; r < kWorld; ++r) {
    EXPECT_EQ(ranks[r].paramChecksum(), ranks[0].paramChecksum()) << "rank " << r;
  }
  EXPECT_LT(maxAbsDiff(ranks[0].model().params(), single.model().params()), 1e-4);
  for (int s = 0; s < kSteps; ++s) {
    double mean = 0.0;
    for (int r = 0; r < kWorld; ++r) mean += rank_losses[r][s] / kWorld;
    EXPECT_NEAR(mean, single_losses[s], 1e-4 * std::max(1.0, single_losses[s])) << "step " << s;
  }
}

TEST(Trainer, ResumedRunFollowsTheUninterruptedTrajectory) {
  ScopedDir dir("rm_trainer_resume");
  NativeConfig c = smallConfig();
  c.steps = 70;  // crosses two epoch boundaries (28 steps each)
  c.optimizer.kind = OptimizerKind::kAdam;
  c.optimizer.lr = 2e-3;
  c.optimizer.warmup_steps = 5;
  c.checkpoint.every_steps = 30;
  c.checkpoint.dir = dir.path();

  Trainer uninterrupted = makeTrainer(c);
  std::vector<double> expected;
  while (!uninterrupted.done()) {
    Result<StepReport> r = uninterrupted.step();
    ASSERT_TRUE(r.isOk());
    expected.push_back(r->loss);
  }

  // The first run stops after step 45; its newest checkpoint is from step 30.
  std::atomic<bool> stop{false};
  Trainer first = makeTrainer(c);
  Trainer::Callbacks callbacks;
  callbacks.on_step = [&](const StepReport& r) {
    if (r.step == 45) stop = true;
  };
  EXPECT_EQ(first.run(callbacks, &stop).code(), ErrorCode::kCancelled);
  Result<LoadedCheckpoint> latest = loadLatestCheckpoint(dir.path());
  ASSERT_TRUE(latest.isOk()) << latest.status().toString();
  EXPECT_EQ(latest->state.step, 30u);

  Trainer resumed = makeTrainer(c);
  ASSERT_TRUE(resumed.restore(latest->state).isOk());
  EXPECT_EQ(resumed.completedSteps(), 30u);
  std::vector<double> losses;
  while (!resumed.done()) {
    Result<StepReport> r = resumed.step();
    ASSERT_TRUE(r.isOk());
    losses.push_back(r->loss);
  }
  ASSERT_EQ(losses.size(), 40u);
  for (size_t i = 0; i < losses.size(); ++i) {
    EXPECT_NEAR(losses[i], expected[30 + i], 1e-6) << "step " << 31 + i;
  }
  EXPECT_EQ(resumed.paramChecksum(), uninterrupted.paramChecksum());
}

TEST(Trainer, RestoreRefusesACheckpointOfAnotherModel) {
  NativeConfig c = smallConfig();
  Trainer trainer = makeTrainer(c);
  CheckpointState state = trainer.checkpointState();
  state.params.pop_back();
  const Status s = trainer.restore(state);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("parameters"), std::string::npos);
}

TEST(Trainer, RestoreRefusesACheckpointOfAnotherBatchSize) {
  NativeConfig c = smallConfig();
  Trainer trainer = makeTrainer(c);
  CheckpointState state = trainer.checkpointState();
  state.batch_size = c.batch_size * 2;
  const Status s = trainer.restore(state);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("batch_size"), std::string::npos) << s.message();
}

// Elastic shrink: a checkpoint of 2 ranks resumes on 1, which trains what the 2 had left of the
// epoch and then the remaining epochs, and no more.
TEST(Trainer, ACheckpointOfMoreRanksResumesWithWhatTheyHadLeft) {
  NativeConfig c = smallConfig();
  c.steps = 0;
  c.epochs = 2;
  Trainer single = makeTrainer(c);
  ASSERT_EQ(single.totalSteps(), 2u * 28u);  // 1792 samples, 28 batches of 64 an epoch
  CheckpointState state = single.checkpointState();
  state.world_size = 2;
  state.sampler.offset = 2 * 64;  // each of the 2 ranks drew 2 batches: 256 samples in all
  ASSERT_TRUE(single.restore(state).isOk());
  EXPECT_EQ(single.totalSteps(), 24u + 28u);  // 1536 samples left of epoch 0, then epoch 1
}

TEST(Trainer, RunCheckpointsEveryNStepsOnRankZeroOnly) {
  ScopedDir dir0("rm_trainer_ckpt_rank0");
  ScopedDir dir1("rm_trainer_ckpt_rank1");
  NativeConfig c = smallConfig();
  c.steps = 25;
  c.checkpoint.every_steps = 10;
  c.checkpoint.keep = 0;
  TrainerOptions rank0;
  rank0.checkpoint_dir = dir0.path();
  Trainer trainer = makeTrainer(c, rank0);
  ASSERT_TRUE(trainer.run().isOk());
  EXPECT_TRUE(fs::exists(checkpointPath(dir0.path(), 10)));
  EXPECT_TRUE(fs::exists(checkpointPath(dir0.path(), 20)));
  EXPECT_TRUE(fs::exists(checkpointPath(dir0.path(), 25)));  // the final state

  // Rank 1 of 2 (no reduction here: only the checkpointing rule is under test).
  TrainerOptions rank1;
  rank1.rank = 1;
  rank1.world_size = 2;
  rank1.checkpoint_dir = dir1.path();
  Trainer other = makeTrainer(c, rank1);
  ASSERT_TRUE(other.run().isOk());
  EXPECT_FALSE(fs::exists(dir1.path()));
}

TEST(Trainer, CreateRejectsInconsistentConfigs) {
  NativeConfig c = smallConfig();
  c.epochs = 2;  // and steps = 40
  Result<Trainer> both = Trainer::create(c);
  ASSERT_FALSE(both.isOk());
  EXPECT_NE(both.status().message().find("epochs or steps"), std::string::npos);

  c = smallConfig();
  c.dataset.kind = DatasetKind::kCsv;
  c.dataset.path = "/nonexistent/train.csv";
  Result<Trainer> missing = Trainer::create(c);
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(missing.status().message().find("/nonexistent/train.csv"), std::string::npos);

  c = smallConfig();
  TrainerOptions bad_rank;
  bad_rank.rank = 3;
  bad_rank.world_size = 2;
  EXPECT_FALSE(Trainer::create(c, bad_rank).isOk());
}

}  // namespace
}  // namespace ringmaster::train
