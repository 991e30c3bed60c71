#include "ringmaster/train/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace ringmaster::train {
namespace {

OptimizerOptions constantLr(OptimizerKind kind, double lr) {
  OptimizerOptions o;
  o.kind = kind;
  o.lr = lr;
  o.schedule = LrSchedule::kConstant;
  return o;
}

TEST(Sgd, MomentumStepsMatchHandComputedValues) {
  OptimizerOptions o = constantLr(OptimizerKind::kSgd, 0.1);
  o.momentum = 0.9;
  Result<Optimizer> opt = Optimizer::create(o, 2);
  ASSERT_TRUE(opt.isOk());
  std::vector<float> p = {1.0f, -2.0f};
  const std::vector<float> g = {0.5f, 0.25f};
  // Step 1: buf = g = (0.5, 0.25); p -= 0.1 * buf.
  EXPECT_DOUBLE_EQ(opt->apply(p, g), 0.1);
  EXPECT_FLOAT_EQ(p[0], 0.95f);
  EXPECT_FLOAT_EQ(p[1], -2.025f);
  // Step 2: buf = 0.9 * buf + g = (0.95, 0.475); p -= 0.1 * buf.
  opt->apply(p, g);
  EXPECT_FLOAT_EQ(p[0], 0.855f);
  EXPECT_FLOAT_EQ(p[1], -2.0725f);
  EXPECT_EQ(opt->step(), 2u);
}

TEST(Sgd, NesterovStepsAlongGradientPlusMomentum) {
  OptimizerOptions o = constantLr(OptimizerKind::kSgd, 0.1);
  o.momentum = 0.9;
  o.nesterov = true;
  Result<Optimizer> opt = Optimizer::create(o, 1);
  ASSERT_TRUE(opt.isOk());
  std::vector<float> p = {1.0f};
  const std::vector<float> g = {0.5f};
  // Step 1: buf = 0.5; p -= 0.1 * (0.5 + 0.9 * 0.5) = 0.095.
  opt->apply(p, g);
  EXPECT_FLOAT_EQ(p[0], 0.905f);
  // Step 2: buf = 0.9 * 0.5 + 0.5 = 0.95; p -= 0.1 * (0.5 + 0.9 * 0.95) = 0.1355.
  opt->apply(p, g);
  EXPECT_FLOAT_EQ(p[0], 0.7695f);
}

TEST(Sgd, WeightDecayIsL2AddedToTheGradient) {
  OptimizerOptions o = constantLr(OptimizerKind::kSgd, 0.1);
  o.momentum = 0.0;
  o.weight_decay = 0.5;
  Result<Optimizer> opt = Optimizer::create(o, 1);
  ASSERT_TRUE(opt.isOk());
  std::vector<float> p = {2.0f};
  opt->apply(p, std::vector<float>{1.0f});
  // g' = 1 + 0.5 * 2 = 2; p = 2 - 0.1 * 2.
  EXPECT_FLOAT_EQ(p[0], 1.8f);
}

TEST(Adam, StepsMatchHandComputedBiasCorrectedValues) {
  OptimizerOptions o = constantLr(OptimizerKind::kAdam, 0.01);
  Result<Optimizer> opt = Optimizer::create(o, 1);
  ASSERT_TRUE(opt.isOk());
  std::vector<float> p = {1.0f};
  // Step 1, g = 0.5: m = 0.05, v = 0.00025; m_hat = 0.5, v_hat = 0.25;
  // p -= 0.01 * 0.5 / (0.5 + 1e-8).
  opt->apply(p, std::vector<float>{0.5f});
  EXPECT_NEAR(p[0], 1.0 - 0.01 * 0.5 / (0.5 + 1e-8), 1e-6);
  // Step 2, g = -0.25: m = 0.9 * 0.05 - 0.025 = 0.02, v = 0.999 * 0.00025 + 0.001 * 0.0625;
  // m_hat = m / (1 - 0.81), v_hat = v / (1 - 0.998001).
  const double m = 0.02;
  const double v = 0.999 * 0.00025 + 0.001 * 0.0625;
  const double expected = p[0] - 0.01 * (m / 0.19) / (std::sqrt(v / (1 - 0.998001)) + 1e-8);
  opt->apply(p, std::vector<float>{-0.25f});
  EXPECT_NEAR(p[0], expected, 1e-6);
}

TEST(Adam, WeightDecayIsDecoupledLikeAdamW) {
  OptimizerOptions o = constantLr(OptimizerKind::kAdam, 0.1);
  o.weight_decay = 0.5;
  Result<Optimizer> opt = Optimizer::create(o, 1);
  ASSERT_TRUE(opt.isOk());
  std::vector<float> p = {2.0f};
  // A zero gradient leaves only the decay: p *= 1 - lr * wd.
  opt->apply(p, std::vector<float>{0.0f});
  EXPECT_FLOAT_EQ(p[0], 1.9f);
}

TEST(LearningRate, WarmupThenCosineToZero) {
  OptimizerOptions o;
  o.lr = 1.0;
  o.warmup_steps = 10;
  o.total_steps = 110;
  o.schedule = LrSchedule::kCosine;
  EXPECT_DOUBLE_EQ(learningRateAt(o, 0), 0.1);
  EXPECT_DOUBLE_EQ(learningRateAt(o, 4), 0.5);
  EXPECT_DOUBLE_EQ(learningRateAt(o, 9), 1.0);
  EXPECT_DOUBLE_EQ(learningRateAt(o, 10), 1.0);
  EXPECT_NEAR(learningRateAt(o, 35), 0.5 * (1 + std::cos(M_PI * 0.25)), 1e-12);
  EXPECT_NEAR(learningRateAt(o, 60), 0.5, 1e-12);
  EXPECT_NEAR(learningRateAt(o, 109), 0.5 * (1 + std::cos(M_PI * 0.99)), 1e-12);
  EXPECT_NEAR(learningRateAt(o, 110), 0.0, 1e-12);
  EXPECT_NEAR(learningRateAt(o, 500), 0.0, 1e-12);
  // Monotone after the warmup.
  for (uint64_t s = 10; s < 110; ++s) EXPECT_GE(learningRateAt(o, s), learningRateAt(o, s + 1));
}

TEST(LearningRate, ConstantWithWarmup) {
  OptimizerOptions o;
  o.lr = 0.2;
  o.warmup_steps = 4;
  o.total_steps = 100;
  o.schedule = LrSchedule::kConstant;
  EXPECT_DOUBLE_EQ(learningRateAt(o, 0), 0.05);
  EXPECT_DOUBLE_EQ(learningRateAt(o, 3), 0.2);
  EXPECT_DOUBLE_EQ(learningRateAt(o, 99), 0.2);
  EXPECT_DOUBLE_EQ(learningRateAt(o, 1000), 0.2);
}

TEST(LearningRate, OptimizerUsesTheScheduleOfItsStep) {
  OptimizerOptions o;
  o.kind = OptimizerKind::kSgd;
  o.momentum = 0.0;
  o.lr = 1.0;
  o.warmup_steps = 2;
  o.total_steps = 4;
  Result<Optimizer> opt = Optimizer::create(o, 1);
  ASSERT_TRUE(opt.isOk());
  std::vector<float> p = {0.0f};
  const std::vector<float> g = {1.0f};
  EXPECT_DOUBLE_EQ(opt->apply(p, g), 0.5);
  EXPECT_DOUBLE_EQ(opt->apply(p, g), 1.0);
  EXPECT_DOUBLE_EQ(opt->apply(p, g), 1.0);
  EXPECT_NEAR(opt->apply(p, g), 0.5, 1e-12);
  EXPECT_FLOAT_EQ(p[0], -3.0f);
}

TEST(ClipGradNorm, ScalesDownToTheMaximumGlobalNorm) {
  std::vector<float> g = {3.0f, 4.0f};
  EXPECT_DOUBLE_EQ(clipGradNorm(g, 1.0), 5.0);
  EXPECT_NEAR(g[0], 0.6f, 1e-6f);
  EXPECT_NEAR(g[1], 0.8f, 1e-6f);
  EXPECT_NEAR(globalNorm(g), 1.0, 1e-6);
}

TEST(ClipGradNorm, LeavesSmallNormsAndZeroMaximumAlone) {
  std::vector<float> g = {3.0f, 4.0f};
  EXPECT_DOUBLE_EQ(clipGradNorm(g, 10.0), 5.0);
  EXPECT_EQ(g, (std::vector<float>{3.0f, 4.0f}));
  EXPECT_DOUBLE_EQ(clipGradNorm(g, 0.0), 5.0);
  EXPECT_EQ(g, (std::vector<float>{3.0f, 4.0f}));
}

// apply() runs in vector lanes (AVX2 where the CPU has it) over blocks of 4096 with a scalar
// tail; it must give the formulas' results exactly, element by element, as a scalar loop
// does (no fused multiply-add: ranks on different CPUs agree bit for bit), and the squares
// of the gradient beside them.
struct VectorCase {
  const char* name;
  OptimizerKind kind;
  double momentum;
  bool nesterov;
};

class VectorizedUpdateTest : public testing::TestWithParam<VectorCase> {};

TEST_P(VectorizedUpdateTest, MatchesTheScalarFormulasExactly) {
  const VectorCase& c = GetParam();
  OptimizerOptions o = constantLr(c.kind, 0.05);
  o.momentum = c.momentum;
  o.nesterov = c.nesterov;
  o.weight_decay = 0.01;
  const size_t n = 3 * 4096 + 37;  // whole blocks, lanes and a tail
  Result<Optimizer> opt = Optimizer::create(o, n);
  ASSERT_TRUE(opt.isOk());
  std::vector<float> p(n), g(n), want(n), m(n, 0.0f), v(n, 0.0f);
  for (size_t i = 0; i < n; ++i) {
    p[i] = std::sin(0.37f * static_cast<float>(i)) * 3.0f;
    g[i] = std::cos(1.3f * static_cast<float>(i)) * std::ldexp(1.0f, static_cast<int>(i % 17) - 8);
  }
  want = p;
  const float lr = 0.05f, wd = 0.01f, mu = static_cast<float>(c.momentum);
  for (int step = 1; step <= 3; ++step) {
    double squares = -1;
    opt->apply(p, g, &squares);
    double want_squares = 0;
    const double bc1 = 1.0 - std::pow(o.beta1, step);
    const double bc2 = 1.0 - std::pow(o.beta2, step);
    const auto step_size = static_cast<float>(0.05 / bc1);
    const auto inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
    const auto b1 = static_cast<float>(o.beta1), b2 = static_cast<float>(o.beta2);
    const auto eps = static_cast<float>(o.epsilon);
    for (size_t i = 0; i < n; ++i) {
      want_squares += static_cast<double>(g[i]) * g[i];
      if (c.kind == OptimizerKind::kAdam) {
        m[i] = b1 * m[i] + (1.0f - b1) * g[i];
        v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
        want[i] =
            want[i] * (1.0f - lr * wd) - step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_bc2 + eps);
      } else if (mu == 0.0f) {
        want[i] -= lr * (g[i] + wd * want[i]);
      } else if (c.nesterov) {
        const float d = g[i] + wd * want[i];
        m[i] = mu * m[i] + d;
        want[i] -= lr * (d + mu * m[i]);
      } else {
        m[i] = mu * m[i] + (g[i] + wd * want[i]);
        want[i] -= lr * m[i];
      }
    }
    size_t differ = 0;
    for (size_t i = 0; i < n; ++i) differ += p[i] != want[i];
    EXPECT_EQ(differ, 0u) << c.name << " step " << step << ": p[5000] " << p[5000] << " vs "
                          << want[5000];
    EXPECT_NEAR(squares, want_squares, want_squares * 1e-6) << c.name << " step " << step;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryUpdate, VectorizedUpdateTest,
                         testing::Values(VectorCase{"sgd", OptimizerKind::kSgd, 0.0, false},
                                         VectorCase{"momentum", OptimizerKind::kSgd, 0.9, false},
                                         VectorCase{"nesterov", OptimizerKind::kSgd, 0.9, true},
                                         VectorCase{"adam", OptimizerKind::kAdam, 0.0, false}),
                         [](const testing::TestParamInfo<VectorCase>& info) {
                           return std::string(info.param.name);
                         });

class OptimizerStateTest : public testing::TestWithParam<OptimizerKind> {};

TEST_P(OptimizerStateTest, SerializedStateContinuesTheSameTrajectory) {
  OptimizerOptions o;
  o.kind = GetParam();
  o.lr = 0.05;
  o.total_steps = 20;
  o.warmup_steps = 3;
  Result<Optimizer> a = Optimizer::create(o, 3);
  ASSERT_TRUE(a.isOk());
  std::vector<float> pa = {1.0f, 2.0f, -1.0f};
  for (int s = 0; s < 5; ++s) {
    a->apply(pa, std::vector<float>{0.1f * s, -0.2f, 0.3f});
  }
  Result<Optimizer> b = Optimizer::create(o, 3);
  ASSERT_TRUE(b.isOk());
  ASSERT_TRUE(b->restoreState(a->serializeState()).isOk());
  EXPECT_EQ(b->step(), 5u);
  std::vector<float> pb = pa;
  for (int s = 5; s < 9; ++s) {
    const std::vector<float> g = {0.1f * s, -0.2f, 0.3f};
    a->apply(pa, g);
    b->apply(pb, g);
  }
  EXPECT_EQ(pa, pb);
}

INSTANTIATE_TEST_SUITE_P(SgdAndAdam, OptimizerStateTest,
                         testing::Values(OptimizerKind::kSgd, OptimizerKind::kAdam));

TEST(OptimizerState, RestoreRefusesAnotherKindOrSize) {
  Result<Optimizer> sgd = Optimizer::create(OptimizerOptions{}, 3);
  OptimizerOptions adam_options;
  adam_options.kind = OptimizerKind::kAdam;
  Result<Optimizer> adam = Optimizer::create(adam_options, 3);
  Result<Optimizer> small = Optimizer::create(OptimizerOptions{}, 2);
  ASSERT_TRUE(sgd.isOk() && adam.isOk() && small.isOk());

  const Status wrong_kind = adam->restoreState(sgd->serializeState());
  ASSERT_FALSE(wrong_kind.isOk());
  EXPECT_NE(wrong_kind.message().find("saved by sgd"), std::string::npos) << wrong_kind.message();

  const Status wrong_size = small->restoreState(sgd->serializeState());
  ASSERT_FALSE(wrong_size.isOk());
  EXPECT_NE(wrong_size.message().find("holds 3 parameters"), std::string::npos)
      << wrong_size.message();

  std::string truncated = sgd->serializeState();
  truncated.resize(truncated.size() - 1);
  EXPECT_FALSE(sgd->restoreState(truncated).isOk());
  EXPECT_FALSE(sgd->restoreState("garbage").isOk());
}

TEST(Optimizer, CreateRejectsBadOptionsNamingTheField) {
  OptimizerOptions o;
  o.lr = 0.0;
  Result<Optimizer> bad_lr = Optimizer::create(o, 1);
  ASSERT_FALSE(bad_lr.isOk());
  EXPECT_NE(bad_lr.status().message().find("optimizer.lr"), std::string::npos);

  o = OptimizerOptions{};
  o.momentum = 1.0;
  Result<Optimizer> bad_momentum = Optimizer::create(o, 1);
  ASSERT_FALSE(bad_momentum.isOk());
  EXPECT_NE(bad_momentum.status().message().find("optimizer.momentum"), std::string::npos);

  o = OptimizerOptions{};
  o.momentum = 0.0;
  o.nesterov = true;
  EXPECT_FALSE(Optimizer::create(o, 1).isOk());

  o = OptimizerOptions{};
  o.kind = OptimizerKind::kAdam;
  o.beta2 = 1.0;
  Result<Optimizer> bad_beta = Optimizer::create(o, 1);
  ASSERT_FALSE(bad_beta.isOk());
  EXPECT_NE(bad_beta.status().message().find("optimizer.beta2"), std::string::npos);
}

}  // namespace
}  // namespace ringmaster::train
