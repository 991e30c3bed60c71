#include "ringmaster/train/model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "ringmaster/train/checkpoint.h"

namespace ringmaster::train {
namespace {

// An independent double-precision forward pass over the same parameter layout, used as the
// reference for the loss and (by central differences) for every gradient.
double referenceLoss(const Mlp& model, const std::vector<double>& params,
                     const std::vector<float>& x, const std::vector<float>& y, size_t rows) {
  const MlpOptions& o = model.options();
  std::vector<double> in(x.begin(), x.end());
  const size_t last = model.numLayers() - 1;
  for (size_t l = 0; l <= last; ++l) {
    const LayerView& layer = model.layers()[l];
    std::vector<double> out(rows * layer.outputs);
    for (size_t i = 0; i < rows; ++i) {
      for (size_t j = 0; j < layer.outputs; ++j) {
        double z = params[layer.biasOffset() + j];
        for (size_t k = 0; k < layer.inputs; ++k) {
          z += params[layer.weightOffset() + j * layer.inputs + k] * in[i * layer.inputs + k];
        }
        if (l < last) {
          switch (o.activation) {
            case Activation::kRelu:
              z = std::max(z, 0.0);
              break;
            case Activation::kTanh:
              z = std::tanh(z);
              break;
            case Activation::kGelu:
              z = 0.5 * z * (1.0 + std::erf(z / std::sqrt(2.0)));
              break;
          }
        }
        out[i * layer.outputs + j] = z;
      }
    }
    in = std::move(out);
  }
  double loss = 0.0;
  const size_t outputs = model.numOutputs();
  for (size_t i = 0; i < rows; ++i) {
    if (o.task == Task::kClassification) {
      const double* logits = in.data() + i * outputs;
      const double max_logit = *std::max_element(logits, logits + outputs);
      double sum = 0.0;
      for (size_t j = 0; j < outputs; ++j) sum += std::exp(logits[j] - max_logit);
      loss += std::log(sum) + max_logit - logits[static_cast<size_t>(y[i])];
    } else {
      const double d = in[i] - y[i];
      loss += d * d;
    }
  }
  return loss / static_cast<double>(rows);
}

struct Problem {
  std::vector<float> x;
  std::vector<float> y;
  size_t rows = 0;
};

Problem makeProblem(const MlpOptions& o, size_t rows, unsigned seed) {
  Problem p;
  p.rows = rows;
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

class MlpGradientTest : public testing::TestWithParam<std::tuple<Activation, Task>> {};

TEST_P(MlpGradientTest, BackwardMatchesCentralDifferencesOfDoubleReference) {
  MlpOptions o;
  o.inputs = 5;
  o.hidden = {7, 6};
  o.activation = std::get<0>(GetParam());
  o.task = std::get<1>(GetParam());
  o.classes = 3;
  Result<Mlp> created = Mlp::create(o);
  ASSERT_TRUE(created.isOk()) << created.status().toString();
  Mlp& model = *created;
  model.initialize(7);
  // Non-zero biases so that every bias gradient is exercised away from symmetric points.
  for (const LayerView& layer : model.layers()) {
    for (size_t j = 0; j < layer.outputs; ++j) {
      model.params()[layer.biasOffset() + j] = 0.05f * static_cast<float>(j % 5) - 0.1f;
    }
  }
  const Problem p = makeProblem(o, 9, 3);
  const Batch batch{p.x.data(), p.y.data(), p.rows};

  const float loss = model.forward(batch);
  model.backward(batch);
  std::vector<double> params(model.params().begin(), model.params().end());
  const double reference = referenceLoss(model, params, p.x, p.y, p.rows);
  EXPECT_NEAR(loss, reference, 1e-5 * std::max(1.0, std::abs(reference)));

  const double eps = 1e-6;
  for (size_t i = 0; i < params.size(); ++i) {
    const double saved = params[i];
    params[i] = saved + eps;
    const double up = referenceLoss(model, params, p.x, p.y, p.rows);
    params[i] = saved - eps;
    const double down = referenceLoss(model, params, p.x, p.y, p.rows);
    params[i] = saved;
    const double numeric = (up - down) / (2 * eps);
    const double analytic = model.grads()[i];
    EXPECT_NEAR(analytic, numeric, 2e-5 + 2e-4 * std::abs(numeric)) << "parameter " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllActivationsAndLosses, MlpGradientTest,
    testing::Combine(testing::Values(Activation::kRelu, Activation::kGelu, Activation::kTanh),
                     testing::Values(Task::kClassification, Task::kRegression)),
    [](const testing::TestParamInfo<MlpGradientTest::ParamType>& info) {
      return std::string(activationName(std::get<0>(info.param))) + "_" +
             taskName(std::get<1>(info.param));
    });

TEST(Mlp, LinearModelWithoutHiddenLayersHasExactGradients) {
  MlpOptions o;
  o.inputs = 4;
  o.hidden = {};
  o.classes = 3;
  Result<Mlp> model = Mlp::create(o);
  ASSERT_TRUE(model.isOk());
  model->initialize(1);
  const Problem p = makeProblem(o, 6, 11);
  const Batch batch{p.x.data(), p.y.data(), p.rows};
  model->forward(batch);
  model->backward(batch);
  std::vector<double> params(model->params().begin(), model->params().end());
  for (size_t i = 0; i < params.size(); ++i) {
    const double saved = params[i];
    params[i] = saved + 1e-6;
    const double up = referenceLoss(*model, params, p.x, p.y, p.rows);
    params[i] = saved - 1e-6;
    const double down = referenceLoss(*model, params, p.x, p.y, p.rows);
    params[i] = saved;
    EXPECT_NEAR(model->grads()[i], (up - down) / 2e-6, 2e-5) << "parameter " << i;
  }
}

TEST(Mlp, ParametersAreOneContiguousBufferOfLayerBlocks) {
  MlpOptions o;
  o.inputs = 32;
  o.hidden = {128, 64};
  o.classes = 4;
  Result<Mlp> model = Mlp::create(o);
  ASSERT_TRUE(model.isOk());
  ASSERT_EQ(model->numLayers(), 3u);
  EXPECT_EQ(model->numParams(), 32u * 128 + 128 + 128 * 64 + 64 + 64 * 4 + 4);
  size_t offset = 0;
  for (const LayerView& layer : model->layers()) {
    EXPECT_EQ(layer.offset, offset);
    EXPECT_EQ(layer.size, layer.inputs * layer.outputs + layer.outputs);
    EXPECT_EQ(layer.biasOffset(), layer.offset + layer.inputs * layer.outputs);
    offset += layer.size;
  }
  EXPECT_EQ(offset, model->numParams());
  EXPECT_EQ(model->grads().size(), model->numParams());
  EXPECT_EQ(model->layers()[2].outputs, 4u);
}

TEST(Mlp, BackwardReportsEachLayerGradientLastLayerFirst) {
  MlpOptions o;
  o.inputs = 3;
  o.hidden = {8, 5};
  o.classes = 2;
  Result<Mlp> model = Mlp::create(o);
  ASSERT_TRUE(model.isOk());
  model->initialize(2);
  const Problem p = makeProblem(o, 4, 5);
  const Batch batch{p.x.data(), p.y.data(), p.rows};
  model->forward(batch);
  std::vector<size_t> order;
  std::vector<std::vector<float>> seen;
  model->backward(batch, [&](size_t layer, float* grad, size_t count) {
    order.push_back(layer);
    EXPECT_EQ(grad, model->grads().data() + model->layers()[layer].offset);
    EXPECT_EQ(count, model->layers()[layer].size);
    seen.emplace_back(grad, grad + count);
  });
  ASSERT_EQ(order, (std::vector<size_t>{2, 1, 0}));
  // What the hook saw is already final: later layers' work does not touch it.
  for (size_t k = 0; k < order.size(); ++k) {
    const LayerView& layer = model->layers()[order[k]];
    const std::vector<float> final_grad(model->grads().begin() + layer.offset,
                                        model->grads().begin() + layer.offset + layer.size);
    EXPECT_EQ(seen[k], final_grad) << "layer " << order[k];
  }
}

TEST(Mlp, AccumulatedScaledMicroBatchesEqualOneLargeBatch) {
  MlpOptions o;
  o.inputs = 6;
  o.hidden = {16};
  o.activation = Activation::kTanh;
  o.classes = 3;
  Result<Mlp> model = Mlp::create(o);
  ASSERT_TRUE(model.isOk());
  model->initialize(9);
  const Problem p = makeProblem(o, 12, 21);
  const Batch all{p.x.data(), p.y.data(), 12};
  model->forward(all);
  model->backward(all);
  const std::vector<float> expected(model->grads().begin(), model->grads().end());

  for (size_t k = 0; k < 3; ++k) {
    const Batch micro{p.x.data() + k * 4 * o.inputs, p.y.data() + k * 4, 4};
    model->forward(micro);
    model->backward(micro, {}, BackwardOptions{1.0f / 3.0f, k > 0});
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(model->grads()[i], expected[i], 1e-6f + 1e-5f * std::abs(expected[i])) << i;
  }
}

TEST(Mlp, InitializationIsDeterministicAndScaledByFanIn) {
  MlpOptions o;
  o.inputs = 200;
  o.hidden = {300};
  o.classes = 2;
  Result<Mlp> a = Mlp::create(o);
  Result<Mlp> b = Mlp::create(o);
  ASSERT_TRUE(a.isOk() && b.isOk());
  a->initialize(42);
  b->initialize(42);
  EXPECT_EQ(paramChecksum(a->params()), paramChecksum(b->params()));
  b->initialize(43);
  EXPECT_NE(paramChecksum(a->params()), paramChecksum(b->params()));

  // He: the first layer's weights have variance 2 / fan_in.
  const LayerView& first = a->layers()[0];
  double sum_sq = 0.0;
  for (size_t i = 0; i < first.inputs * first.outputs; ++i) {
    const double w = a->params()[first.weightOffset() + i];
    sum_sq += w * w;
  }
  const double variance = sum_sq / static_cast<double>(first.inputs * first.outputs);
  EXPECT_NEAR(variance, 2.0 / 200.0, 0.05 * 2.0 / 200.0);
  for (size_t j = 0; j < first.outputs; ++j) EXPECT_EQ(a->params()[first.biasOffset() + j], 0.0f);
}

TEST(Mlp, EvaluateCountsCorrectPredictionsInChunks) {
  MlpOptions o;
  o.inputs = 2;
  o.hidden = {};
  o.classes = 2;
  Result<Mlp> model = Mlp::create(o);
  ASSERT_TRUE(model.isOk());
  // logit0 = x0, logit1 = x1: the larger feature wins.
  std::fill(model->params().begin(), model->params().end(), 0.0f);
  model->params()[0] = 1.0f;
  model->params()[3] = 1.0f;
  const std::vector<float> x = {1, 0, 0, 1, 2, 1, 1, 3, 5, 4};
  const std::vector<float> y = {0, 1, 1, 1, 0};  // the third is wrong
  const EvalTotals totals = model->evaluate(x.data(), y.data(), 5, 2);
  EXPECT_EQ(totals.samples, 5u);
  EXPECT_EQ(totals.correct, 4u);
  EXPECT_GT(totals.loss_sum, 0.0);
}

TEST(Mlp, CreateRejectsBadShapesNamingTheField) {
  MlpOptions o;
  o.inputs = 0;
  Result<Mlp> no_inputs = Mlp::create(o);
  ASSERT_FALSE(no_inputs.isOk());
  EXPECT_NE(no_inputs.status().message().find("model.inputs"), std::string::npos);

  o.inputs = 3;
  o.hidden = {4, 0};
  Result<Mlp> zero_width = Mlp::create(o);
  ASSERT_FALSE(zero_width.isOk());
  EXPECT_NE(zero_width.status().message().find("model.hidden[1]"), std::string::npos);

  o.hidden = {4};
  o.classes = 1;
  Result<Mlp> one_class = Mlp::create(o);
  ASSERT_FALSE(one_class.isOk());
  EXPECT_NE(one_class.status().message().find("model.classes"), std::string::npos);

  o.task = Task::kRegression;  // classes is ignored for regression
  Result<Mlp> regression = Mlp::create(o);
  ASSERT_TRUE(regression.isOk());
  EXPECT_EQ(regression->numOutputs(), 1u);
}

// The activations use fast float approximations; through a 1-1-1 identity network the output
// is act(x) itself, checked against libm in double over a wide range.
TEST(Mlp, ActivationsMatchTheExactFunctionsClosely) {
  for (Activation activation : {Activation::kRelu, Activation::kGelu, Activation::kTanh}) {
    MlpOptions o;
    o.inputs = 1;
    o.hidden = {1};
    o.activation = activation;
    o.task = Task::kRegression;
    Result<Mlp> model = Mlp::create(o);
    ASSERT_TRUE(model.isOk());
    std::fill(model->params().begin(), model->params().end(), 0.0f);
    model->params()[model->layers()[0].weightOffset()] = 1.0f;
    model->params()[model->layers()[1].weightOffset()] = 1.0f;
    std::vector<float> x;
    for (int i = -4000; i <= 4000; ++i) x.push_back(static_cast<float>(i) * 0.0025f);
    for (float v : {-90.0f, -30.0f, 1e-6f, -1e-6f, 30.0f, 90.0f}) x.push_back(v);
    const std::vector<float> y(x.size(), 0.0f);
    model->forward(Batch{x.data(), y.data(), x.size()});
    const std::span<const float> out = model->lastOutputs();
    for (size_t i = 0; i < x.size(); ++i) {
      const double z = x[i];
      double exact = 0.0;
      switch (activation) {
        case Activation::kRelu:
          exact = std::max(z, 0.0);
          break;
        case Activation::kGelu:
          exact = 0.5 * z * (1.0 + std::erf(z / std::sqrt(2.0)));
          break;
        case Activation::kTanh:
          exact = std::tanh(z);
          break;
      }
      // Absolute error for GELU (the A&S erf is accurate to 1.5e-7 absolute), relative for tanh.
      const double tolerance = activation == Activation::kGelu
                                   ? 2e-7 * std::max(1.0, std::abs(z))
                                   : 4e-7 * std::max(std::abs(exact), 1e-30);
      ASSERT_NEAR(out[i], exact, tolerance) << activationName(activation) << "(" << z << ")";
    }
  }
}

TEST(Blas, ThreadCountCanBeSet) {
  const int before = blasThreads();
  setBlasThreads(1);
  EXPECT_EQ(blasThreads(), 1);
  setBlasThreads(0);  // unchanged
  EXPECT_EQ(blasThreads(), 1);
  setBlasThreads(before);
  std::printf("OpenBLAS kernels: %s, threads: %d\n", blasCoreName().c_str(), blasThreads());
}

TEST(Mlp, NamesRoundTrip) {
  for (Activation a : {Activation::kRelu, Activation::kGelu, Activation::kTanh}) {
    EXPECT_EQ(parseActivation(activationName(a)), a);
  }
  for (Task t : {Task::kClassification, Task::kRegression}) EXPECT_EQ(parseTask(taskName(t)), t);
  EXPECT_FALSE(parseActivation("sigmoid").has_value());
  EXPECT_FALSE(parseTask("ranking").has_value());
}

}  // namespace
}  // namespace ringmaster::train
