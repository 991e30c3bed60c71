// The GPU path against the CPU one: same parameters, same batch, same results (to float
// rounding). Tests that need a CUDA device skip on hosts without one; the error paths run
// everywhere.
#include "ringmaster/train/gpu_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <functional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace ringmaster::train {
namespace {

// gpuCount()'s error says "no CUDA device on this host: <why>" (or "built without CUDA").
#define RM_REQUIRE_GPU()                                                            \
  do {                                                                              \
    if (!gpuAvailable()) GTEST_SKIP() << skipReason(gpuCount().status().message()); \
  } while (0)

std::string skipReason(const std::string& why) {
  const std::string no_device = "no CUDA device on this host";
  return why.starts_with(no_device) ? why : no_device + " (" + why + ")";
}

constexpr int kDevice = 0;

MlpOptions smallOptions(Activation activation = Activation::kRelu,
                        Task task = Task::kClassification) {
  MlpOptions o;
  o.inputs = 5;
  o.hidden = {16, 7};
  o.activation = activation;
  o.task = task;
  o.classes = 3;
  return o;
}

struct Problem {
  std::vector<float> x;
  std::vector<float> y;
  Batch batch() const { return {x.data(), y.data(), y.size()}; }
};

Problem makeProblem(const MlpOptions& o, size_t rows, unsigned seed) {
  Problem p;
  unsigned state = seed;
  const auto next = [&state] {
    state = state * 1103515245u + 12345u;
    return static_cast<float>((state >> 8) & 0xffff) / 65536.0f;
  };
  for (size_t i = 0; i < rows * o.inputs; ++i) p.x.push_back(next() * 4.0f - 2.0f);
  for (size_t i = 0; i < rows; ++i) {
    p.y.push_back(o.task == Task::kClassification
                      ? static_cast<float>(static_cast<size_t>(next() * o.classes) % o.classes)
                      : next() * 2.0f - 1.0f);
  }
  return p;
}

// A CPU Mlp initialised from `seed`, with non-zero biases, and a GPU Mlp with the same parameters.
struct Pair {
  Mlp cpu;
  std::unique_ptr<GpuMlp> gpu;
};

Pair makePair(const MlpOptions& o, uint64_t seed) {
  Result<Mlp> cpu = Mlp::create(o);
  EXPECT_TRUE(cpu.isOk()) << cpu.status().toString();
  cpu->initialize(seed);
  for (const LayerView& layer : cpu->layers()) {
    for (size_t j = 0; j < layer.outputs; ++j) {
      cpu->params()[layer.biasOffset() + j] = 0.05f * static_cast<float>(j % 5) - 0.1f;
    }
  }
  Result<std::unique_ptr<GpuMlp>> gpu = createGpuMlp(o, kDevice);
  EXPECT_TRUE(gpu.isOk()) << gpu.status().toString();
  if (gpu.isOk()) {
    EXPECT_TRUE((*gpu)->copyParamsFrom(cpu->params()).isOk());
  }
  return {std::move(*cpu), gpu.isOk() ? std::move(*gpu) : nullptr};
}

std::vector<float> paramsOf(const GpuMlp& gpu) {
  std::vector<float> host(gpu.numParams());
  EXPECT_TRUE(gpu.copyParamsTo(host).isOk());
  return host;
}

std::vector<float> gradsOf(const GpuMlp& gpu) {
  std::vector<float> host(gpu.numParams());
  EXPECT_TRUE(gpu.copyGradsTo(host).isOk());
  return host;
}

// Every element within 1e-4 of the reference, relative to the reference's largest magnitude
// (gradients of very different sizes share one buffer).
void expectClose(std::span<const float> actual, std::span<const float> expected,
                 const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  float scale = 1e-6f;
  for (float e : expected) scale = std::max(scale, std::abs(e));
  for (size_t i = 0; i < actual.size(); ++i) {
    ASSERT_NEAR(actual[i], expected[i], 1e-4f * scale + 1e-4f * std::abs(expected[i]))
        << what << " [" << i << "]";
  }
}

// --- Without a device -------------------------------------------------------------------------

TEST(GpuModel, GpuCountAndGpuAvailableAgree) {
  const Result<int> count = gpuCount();
  EXPECT_EQ(count.isOk(), gpuAvailable());
  if (count.isOk()) {
    EXPECT_GE(*count, 1);
  } else {
    EXPECT_TRUE(count.status().code() == ErrorCode::kUnavailable ||
                count.status().code() == ErrorCode::kUnimplemented)
        << count.status().toString();
  }
}

TEST(GpuModel, FactoryOnAHostWithoutADeviceReturnsAnErrorNamingTheProblem) {
  if (gpuAvailable()) GTEST_SKIP() << "this host has a CUDA device";
  Result<std::unique_ptr<GpuMlp>> model = createGpuMlp(smallOptions(), 0);
  ASSERT_FALSE(model.isOk());
  const Status& status = model.status();
  if (status.code() == ErrorCode::kUnimplemented) {
    EXPECT_NE(status.message().find("built without CUDA"), std::string::npos) << status.message();
  } else {
    EXPECT_EQ(status.code(), ErrorCode::kUnavailable) << status.toString();
    EXPECT_NE(status.message().find("no CUDA device"), std::string::npos) << status.message();
  }

  NativeConfig config;
  config.dataset.samples = 64;
  config.steps = 1;
  Result<std::unique_ptr<GpuTrainer>> trainer = GpuTrainer::create(config, 0);
  ASSERT_FALSE(trainer.isOk());
  EXPECT_EQ(trainer.status().code(), status.code()) << trainer.status().toString();
}

TEST(GpuModel, BadOptionsAreRefusedNamingTheFieldOnAnyHost) {
  MlpOptions o = smallOptions();
  o.inputs = 0;
  Result<std::unique_ptr<GpuMlp>> model = createGpuMlp(o, 0);
  ASSERT_FALSE(model.isOk());
  if (model.status().code() != ErrorCode::kUnimplemented) {
    EXPECT_EQ(model.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(model.status().message().find("model.inputs"), std::string::npos);
  }
  EXPECT_FALSE(createGpuOptimizer(OptimizerOptions{}, nullptr).isOk());
}

TEST(GpuModel, DeviceThatDoesNotExistIsRefused) {
  const int count = gpuCount().isOk() ? *gpuCount() : 0;
  for (int device : {-1, count}) {
    Result<std::unique_ptr<GpuMlp>> model = createGpuMlp(smallOptions(), device);
    EXPECT_FALSE(model.isOk()) << "device " << device;
  }
}

// --- With a device ----------------------------------------------------------------------------

class GpuMlpMatchesCpuTest : public testing::TestWithParam<std::tuple<Activation, Task>> {};

TEST_P(GpuMlpMatchesCpuTest, ForwardLossAndEveryGradient) {
  RM_REQUIRE_GPU();
  const MlpOptions o = smallOptions(std::get<0>(GetParam()), std::get<1>(GetParam()));
  Pair pair = makePair(o, 7);
  ASSERT_NE(pair.gpu, nullptr);
  const Problem p = makeProblem(o, 37, 3);

  const float cpu_loss = pair.cpu.forward(p.batch());
  Result<float> gpu_loss = pair.gpu->forward(p.batch());
  ASSERT_TRUE(gpu_loss.isOk()) << gpu_loss.status().toString();
  EXPECT_NEAR(*gpu_loss, cpu_loss, 1e-4 * std::max(1.0f, std::abs(cpu_loss)));

  pair.cpu.backward(p.batch());
  ASSERT_TRUE(pair.gpu->backward(p.batch()).isOk());
  expectClose(gradsOf(*pair.gpu), pair.cpu.grads(), "grads");

  // Accumulating a second, scaled micro-batch.
  const Problem q = makeProblem(o, 11, 9);
  pair.cpu.forward(q.batch());
  pair.cpu.backward(q.batch(), {}, BackwardOptions{0.5f, true});
  ASSERT_TRUE(pair.gpu->forward(q.batch()).isOk());
  ASSERT_TRUE(pair.gpu->backward(q.batch(), {}, BackwardOptions{0.5f, true}).isOk());
  expectClose(gradsOf(*pair.gpu), pair.cpu.grads(), "accumulated grads");
}

INSTANTIATE_TEST_SUITE_P(
    AllActivationsAndLosses, GpuMlpMatchesCpuTest,
    testing::Combine(testing::Values(Activation::kRelu, Activation::kGelu, Activation::kTanh),
                     testing::Values(Task::kClassification, Task::kRegression)),
    [](const testing::TestParamInfo<GpuMlpMatchesCpuTest::ParamType>& info) {
      return std::string(activationName(std::get<0>(info.param))) + "_" +
             taskName(std::get<1>(info.param));
    });

TEST(GpuMlp, BackwardReportsEachLayerLastFirstWithItsFinalDeviceBlock) {
  RM_REQUIRE_GPU();
  const MlpOptions o = smallOptions();
  Pair pair = makePair(o, 2);
  ASSERT_NE(pair.gpu, nullptr);
  const Problem p = makeProblem(o, 8, 5);
  ASSERT_TRUE(pair.gpu->forward(p.batch()).isOk());
  std::vector<size_t> order;
  std::vector<std::vector<float>> seen;
  float* base = pair.gpu->deviceGrads().data();
  ASSERT_TRUE(pair.gpu
                  ->backward(p.batch(),
                             [&](size_t layer, float* grad, size_t count) {
                               order.push_back(layer);
                               const LayerView& view = pair.gpu->layers()[layer];
                               EXPECT_EQ(grad, base + view.offset);
                               EXPECT_EQ(count, view.size);
                               // Final when reported: equal to the end result (checked below).
                               std::vector<float> all = gradsOf(*pair.gpu);
                               seen.emplace_back(all.begin() + view.offset,
                                                 all.begin() + view.offset + view.size);
                             })
                  .isOk());
  EXPECT_EQ(order, (std::vector<size_t>{2, 1, 0}));
  const std::vector<float> final_grads = gradsOf(*pair.gpu);
  for (size_t i = 0; i < order.size(); ++i) {
    const LayerView& view = pair.gpu->layers()[order[i]];
    EXPECT_EQ(seen[i], std::vector<float>(final_grads.begin() + view.offset,
                                          final_grads.begin() + view.offset + view.size));
  }
}

TEST(GpuMlp, EvaluateMatchesCpu) {
  RM_REQUIRE_GPU();
  const MlpOptions o = smallOptions();
  Pair pair = makePair(o, 4);
  ASSERT_NE(pair.gpu, nullptr);
  const Problem p = makeProblem(o, 300, 8);
  const EvalTotals cpu = pair.cpu.evaluate(p.x.data(), p.y.data(), 300, 64);
  Result<EvalTotals> gpu = pair.gpu->evaluate(p.x.data(), p.y.data(), 300, 64);
  ASSERT_TRUE(gpu.isOk()) << gpu.status().toString();
  EXPECT_EQ(gpu->samples, cpu.samples);
  EXPECT_EQ(gpu->correct, cpu.correct);
  EXPECT_NEAR(gpu->loss_sum, cpu.loss_sum, 1e-4 * cpu.loss_sum);
}

TEST(GpuMlp, TargetThatIsNotAClassIndexIsAnErrorNotACrash) {
  RM_REQUIRE_GPU();
  const MlpOptions o = smallOptions();
  Pair pair = makePair(o, 1);
  ASSERT_NE(pair.gpu, nullptr);
  Problem p = makeProblem(o, 4, 1);
  p.y[2] = 3.0f;  // classes = 3
  Result<float> loss = pair.gpu->forward(p.batch());
  ASSERT_FALSE(loss.isOk());
  EXPECT_EQ(loss.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(pair.gpu->backward(p.batch()).isOk());
}

TEST(GpuMlp, ClipGradNormMatchesCpu) {
  RM_REQUIRE_GPU();
  const MlpOptions o = smallOptions();
  Pair pair = makePair(o, 5);
  ASSERT_NE(pair.gpu, nullptr);
  const Problem p = makeProblem(o, 16, 2);
  pair.cpu.forward(p.batch());
  pair.cpu.backward(p.batch());
  ASSERT_TRUE(pair.gpu->forward(p.batch()).isOk());
  ASSERT_TRUE(pair.gpu->backward(p.batch()).isOk());
  const double cpu_norm = clipGradNorm(pair.cpu.grads(), 0.1);
  Result<double> gpu_norm = pair.gpu->clipGradNorm(0.1);
  ASSERT_TRUE(gpu_norm.isOk());
  EXPECT_NEAR(*gpu_norm, cpu_norm, 1e-4 * cpu_norm);
  ASSERT_GT(cpu_norm, 0.1);  // so clipping happened
  expectClose(gradsOf(*pair.gpu), pair.cpu.grads(), "clipped grads");
}

TEST(GpuMlp, ForwardRowsOfUploadedDataMatchesForwardOfTheSameBatch) {
  RM_REQUIRE_GPU();
  const MlpOptions o = smallOptions();
  Pair pair = makePair(o, 9);
  ASSERT_NE(pair.gpu, nullptr);
  const Problem data = makeProblem(o, 50, 4);
  const std::vector<uint32_t> rows = {7, 0, 49, 7, 23, 11};
  Problem gathered;
  for (const uint32_t r : rows) {
    gathered.x.insert(gathered.x.end(), data.x.begin() + r * o.inputs,
                      data.x.begin() + (r + 1) * o.inputs);
    gathered.y.push_back(data.y[r]);
  }
  Result<float> host_loss = pair.gpu->forward(gathered.batch());
  ASSERT_TRUE(host_loss.isOk()) << host_loss.status().toString();
  ASSERT_TRUE(pair.gpu->backward(gathered.batch()).isOk());
  const std::vector<float> host_grads = gradsOf(*pair.gpu);

  ASSERT_TRUE(pair.gpu->uploadData(data.x.data(), data.y.data(), 50).isOk());
  ASSERT_TRUE(pair.gpu->forwardRows(rows, false).isOk());
  ASSERT_TRUE(pair.gpu->backward(Batch{nullptr, nullptr, rows.size()}).isOk());
  ASSERT_TRUE(pair.gpu->queueClipGradNorm(0.0).isOk());
  Result<GpuMlp::Totals> totals = pair.gpu->takeTotals();
  ASSERT_TRUE(totals.isOk()) << totals.status().toString();
  EXPECT_FLOAT_EQ(static_cast<float>(totals->loss), *host_loss);
  // The same kernels on the same rows: the same gradients, bit for bit.
  EXPECT_EQ(gradsOf(*pair.gpu), host_grads);
  double squares = 0.0;
  for (const float g : host_grads) squares += static_cast<double>(g) * g;
  EXPECT_NEAR(totals->grad_norm, std::sqrt(squares), 1e-6 * std::sqrt(squares));

  // A second batch adds its mean loss to the total; a fresh total starts over.
  ASSERT_TRUE(pair.gpu->forwardRows(rows, true).isOk());
  EXPECT_FLOAT_EQ(static_cast<float>(pair.gpu->takeTotals()->loss), 2.0f * *host_loss);
  ASSERT_TRUE(pair.gpu->forwardRows(rows, false).isOk());
  EXPECT_FLOAT_EQ(static_cast<float>(pair.gpu->takeTotals()->loss), *host_loss);
}

TEST(GpuMlp, UploadedDataAndRowsAreCheckedNamingWhatIsWrong) {
  RM_REQUIRE_GPU();
  const MlpOptions o = smallOptions();
  Pair pair = makePair(o, 1);
  ASSERT_NE(pair.gpu, nullptr);
  const std::vector<uint32_t> rows = {0, 1};
  Status before = pair.gpu->forwardRows(rows, false);
  EXPECT_EQ(before.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(before.message().find("before uploadData"), std::string::npos) << before.message();

  Problem p = makeProblem(o, 10, 2);
  p.y[6] = 1.5f;  // not a class index
  Status bad = pair.gpu->uploadData(p.x.data(), p.y.data(), 10);
  EXPECT_EQ(bad.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("row 6"), std::string::npos) << bad.message();

  p.y[6] = 2.0f;
  ASSERT_TRUE(pair.gpu->uploadData(p.x.data(), p.y.data(), 10).isOk());
  const std::vector<uint32_t> past = {3, 10};
  Status out_of_range = pair.gpu->forwardRows(past, false);
  EXPECT_EQ(out_of_range.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(out_of_range.message().find("row 10"), std::string::npos) << out_of_range.message();
  EXPECT_FALSE(pair.gpu->backward(Batch{nullptr, nullptr, 2}).isOk());
}

class GpuOptimizerMatchesCpuTest : public testing::TestWithParam<OptimizerOptions> {};

TEST_P(GpuOptimizerMatchesCpuTest, TwoStepsAndTheirState) {
  RM_REQUIRE_GPU();
  const MlpOptions o = smallOptions();
  Pair pair = makePair(o, 6);
  ASSERT_NE(pair.gpu, nullptr);
  OptimizerOptions options = GetParam();
  options.total_steps = 10;
  Result<Optimizer> cpu = Optimizer::create(options, pair.cpu.numParams());
  ASSERT_TRUE(cpu.isOk());
  Result<std::unique_ptr<GpuOptimizer>> gpu = createGpuOptimizer(options, pair.gpu.get());
  ASSERT_TRUE(gpu.isOk()) << gpu.status().toString();

  for (unsigned step = 0; step < 2; ++step) {
    const Problem p = makeProblem(o, 16, 20 + step);
    pair.cpu.forward(p.batch());
    pair.cpu.backward(p.batch());
    ASSERT_TRUE(pair.gpu->forward(p.batch()).isOk());
    ASSERT_TRUE(pair.gpu->backward(p.batch()).isOk());
    const double cpu_lr = cpu->apply(pair.cpu.params(), pair.cpu.grads());
    Result<double> gpu_lr = (*gpu)->apply();
    ASSERT_TRUE(gpu_lr.isOk()) << gpu_lr.status().toString();
    EXPECT_EQ(*gpu_lr, cpu_lr);
    expectClose(paramsOf(*pair.gpu), pair.cpu.params(),
                "params after step " + std::to_string(step + 1));
  }
  EXPECT_EQ((*gpu)->step(), 2u);

  // The state is Optimizer's format: each side restores the other's.
  Result<std::string> gpu_state = (*gpu)->serializeState();
  ASSERT_TRUE(gpu_state.isOk()) << gpu_state.status().toString();
  Result<Optimizer> cpu_copy = Optimizer::create(options, pair.cpu.numParams());
  ASSERT_TRUE(cpu_copy->restoreState(*gpu_state).isOk());
  EXPECT_EQ(cpu_copy->step(), 2u);
  EXPECT_TRUE((*gpu)->restoreState(cpu->serializeState()).isOk());
  OptimizerOptions other = options;
  other.kind = options.kind == OptimizerKind::kSgd ? OptimizerKind::kAdam : OptimizerKind::kSgd;
  Result<Optimizer> wrong_kind = Optimizer::create(other, pair.cpu.numParams());
  ASSERT_TRUE(wrong_kind.isOk());
  EXPECT_FALSE((*gpu)->restoreState(wrong_kind->serializeState()).isOk());
}

OptimizerOptions sgd(bool nesterov, double weight_decay) {
  OptimizerOptions o;
  o.kind = OptimizerKind::kSgd;
  o.lr = 0.1;
  o.momentum = 0.9;
  o.nesterov = nesterov;
  o.weight_decay = weight_decay;
  o.warmup_steps = 1;
  return o;
}

OptimizerOptions adamW(double weight_decay) {
  OptimizerOptions o;
  o.kind = OptimizerKind::kAdam;
  o.lr = 0.01;
  o.weight_decay = weight_decay;
  return o;
}

OptimizerOptions plainSgd() {
  OptimizerOptions o = sgd(false, 0.01);
  o.momentum = 0.0;
  return o;
}

INSTANTIATE_TEST_SUITE_P(SgdAndAdamW, GpuOptimizerMatchesCpuTest,
                         testing::Values(plainSgd(), sgd(false, 0.01), sgd(true, 0.0), adamW(0.0),
                                         adamW(0.05)));

// A small classification MLP on synthetic data, for the trainer tests.
NativeConfig smallTrainerConfig() {
  NativeConfig config;
  config.model.hidden = {32, 16};
  config.dataset.samples = 1024;
  config.dataset.features = 8;
  config.dataset.classes = 3;
  return config;
}

TEST(GpuTrainer, FollowsTheCpuTrainerAndResumesFromItsCheckpoint) {
  RM_REQUIRE_GPU();
  NativeConfig config = smallTrainerConfig();
  config.batch_size = 64;
  config.steps = 6;
  config.grad_accumulation = 2;
  config.clip_norm = 1.0;
  config.optimizer.kind = OptimizerKind::kAdam;
  config.optimizer.lr = 0.01;
  config.seed = 3;
  Result<Trainer> cpu = Trainer::create(config);
  ASSERT_TRUE(cpu.isOk()) << cpu.status().toString();
  Result<std::unique_ptr<GpuTrainer>> gpu = GpuTrainer::create(config, kDevice);
  ASSERT_TRUE(gpu.isOk()) << gpu.status().toString();
  GpuTrainer& g = **gpu;
  EXPECT_EQ(g.totalSteps(), cpu->totalSteps());
  EXPECT_EQ(paramsOf(g.model()),
            std::vector<float>(cpu->model().params().begin(), cpu->model().params().end()));

  for (int i = 0; i < 3; ++i) {
    Result<StepReport> a = cpu->step();
    Result<StepReport> b = g.step();
    ASSERT_TRUE(a.isOk() && b.isOk()) << b.status().toString();
    EXPECT_NEAR(b->loss, a->loss, 1e-4 * a->loss);
    EXPECT_NEAR(b->grad_norm, a->grad_norm, 1e-3 * a->grad_norm);
    EXPECT_EQ(b->lr, a->lr);
    EXPECT_EQ(b->samples, a->samples);
  }
  expectClose(paramsOf(g.model()), cpu->model().params(), "params after 3 steps");
  Result<EvalReport> eval = g.evaluate();
  ASSERT_TRUE(eval.isOk());
  EXPECT_NEAR(eval->accuracy, cpu->evaluate().accuracy, 0.02);

  // The CPU trainer's checkpoint continues on the GPU, and the GPU's on the CPU.
  Result<std::unique_ptr<GpuTrainer>> resumed = GpuTrainer::create(config, kDevice);
  ASSERT_TRUE(resumed.isOk());
  ASSERT_TRUE((*resumed)->restore(cpu->checkpointState()).isOk());
  EXPECT_EQ((*resumed)->completedSteps(), 3u);
  Result<CheckpointState> state = g.checkpointState();
  ASSERT_TRUE(state.isOk()) << state.status().toString();
  Result<Trainer> cpu_resumed = Trainer::create(config);
  ASSERT_TRUE(cpu_resumed.isOk());
  ASSERT_TRUE(cpu_resumed->restore(*state).isOk());
  Result<uint64_t> checksum = g.paramChecksum();
  ASSERT_TRUE(checksum.isOk());
  EXPECT_EQ(*checksum, cpu_resumed->paramChecksum());

  while (!g.done()) ASSERT_TRUE(g.step().isOk());
  EXPECT_EQ(g.completedSteps(), 6u);
}

TEST(GpuTrainer, ReadsTheLossBackOnlyEveryReportEverySteps) {
  RM_REQUIRE_GPU();
  NativeConfig config = smallTrainerConfig();
  config.batch_size = 32;
  config.steps = 7;
  config.seed = 5;
  Result<Trainer> cpu = Trainer::create(config);
  ASSERT_TRUE(cpu.isOk()) << cpu.status().toString();
  TrainerOptions options;
  options.report_every = 3;
  Result<std::unique_ptr<GpuTrainer>> gpu = GpuTrainer::create(config, kDevice, options);
  ASSERT_TRUE(gpu.isOk()) << gpu.status().toString();
  EXPECT_TRUE((*gpu)->dataOnDevice());
  std::vector<uint64_t> measured;
  for (int i = 0; i < 7; ++i) {
    Result<StepReport> a = cpu->step();
    Result<StepReport> b = (*gpu)->step();
    ASSERT_TRUE(a.isOk() && b.isOk()) << b.status().toString();
    EXPECT_EQ(b->samples, a->samples);
    if (!b->measured) {
      EXPECT_EQ(b->loss, 0.0);
      continue;
    }
    measured.push_back(b->step);
    EXPECT_NEAR(b->loss, a->loss, 1e-4 * a->loss) << "step " << b->step;
    EXPECT_NEAR(b->grad_norm, a->grad_norm, 1e-3 * a->grad_norm) << "step " << b->step;
    EXPECT_GT(b->step_time_s, 0.0);
    EXPECT_GT(b->samples_per_sec, 0.0);
  }
  EXPECT_EQ(measured, (std::vector<uint64_t>{3, 6, 7}));  // and the last, always
  expectClose(paramsOf((*gpu)->model()), cpu->model().params(), "params after 7 steps");
}

// Local SGD on the GPU: two ranks on one device (NCCL would want a GPU each), their parameters
// averaged through the host every 3 steps, follow two CPU trainers averaged the same way.
class HostAverager {
 public:
  explicit HostAverager(int world) : world_(world), slots_(world), barrier_(world) {}
  void average(int rank, std::vector<float>& values) {
    slots_[rank] = values;
    barrier_.arrive_and_wait();
    for (size_t i = 0; i < values.size(); ++i) {
      float sum = 0.0f;
      for (int k = 0; k < world_; ++k) sum += slots_[k][i];
      values[i] = sum / static_cast<float>(world_);
    }
    barrier_.arrive_and_wait();
  }

 private:
  int world_;
  std::vector<std::vector<float>> slots_;
  std::barrier<> barrier_;
};

TEST(GpuTrainer, LocalSgdAveragesLikeTheCpuTrainer) {
  RM_REQUIRE_GPU();
  constexpr int kWorld = 2;
  NativeConfig config = smallTrainerConfig();
  config.batch_size = 32;
  config.steps = 7;
  config.optimizer.lr = 0.05;
  config.optimizer.momentum = 0.9;
  config.seed = 4;
  config.strategy.average_every = 3;  // averaged after steps 3, 6 and 7 (the last)
  HostAverager gpu_averager(kWorld), cpu_averager(kWorld);
  std::vector<std::unique_ptr<GpuTrainer>> gpus(kWorld);
  std::vector<Trainer> cpus;
  for (int r = 0; r < kWorld; ++r) {
    TrainerOptions options;
    options.rank = r;
    options.world_size = kWorld;
    options.average_params = [&, r](std::span<float>) {
      std::vector<float> host = paramsOf(gpus[r]->model());
      gpu_averager.average(r, host);
      return gpus[r]->model().copyParamsFrom(host);
    };
    Result<std::unique_ptr<GpuTrainer>> gpu = GpuTrainer::create(config, kDevice, options);
    ASSERT_TRUE(gpu.isOk()) << gpu.status().toString();
    gpus[r] = std::move(*gpu);
    options.average_params = [&, r](std::span<float> params) {
      std::vector<float> host(params.begin(), params.end());
      cpu_averager.average(r, host);
      std::copy(host.begin(), host.end(), params.begin());
      return Status::ok();
    };
    Result<Trainer> cpu = Trainer::create(config, options);
    ASSERT_TRUE(cpu.isOk()) << cpu.status().toString();
    cpus.push_back(std::move(*cpu));
  }
  std::vector<std::vector<bool>> averaged(kWorld);
  auto train = [&](int r, const std::function<Result<StepReport>()>& step) {
    for (int s = 0; s < 7; ++s) {
      Result<StepReport> report = step();
      ASSERT_TRUE(report.isOk()) << report.status().toString();
      averaged[r].push_back(report->averaged);
    }
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < kWorld; ++r) {
    threads.emplace_back(train, r, [&, r] { return gpus[r]->step(); });
  }
  for (std::thread& t : threads) t.join();
  threads.clear();
  const std::vector<bool> expected = {false, false, true, false, false, true, true};
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_EQ(averaged[r], expected) << "GPU rank " << r;
    averaged[r].clear();
    threads.emplace_back(train, r, [&, r] { return cpus[r].step(); });
  }
  for (std::thread& t : threads) t.join();
  // The ranks drifted apart between averagings on their own data, and meet again at the last.
  EXPECT_EQ(paramsOf(gpus[0]->model()), paramsOf(gpus[1]->model()));
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_EQ(averaged[r], expected) << "CPU rank " << r;
    expectClose(paramsOf(gpus[r]->model()), cpus[r].model().params(),
                "rank " + std::to_string(r) + " after 7 steps");
  }
}

}  // namespace
}  // namespace ringmaster::train
