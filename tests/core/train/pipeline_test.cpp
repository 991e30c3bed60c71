// Pipeline parallelism's math (pipeline.h): the balanced layer partition, the GPipe schedule (its
// order, its freedom from deadlock when a send waits for its receive, and its bubble by a timing
// simulation), micro-batch splits, and stages chained in one process giving the single model's
// loss and gradients.
#include "ringmaster/train/pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace ringmaster::train {
namespace {

using Op = PipelineOp;
using K = PipelineOpKind;

Mlp makeModel(size_t inputs, std::vector<size_t> hidden, Activation activation, Task task,
              size_t classes = 10) {
  MlpOptions options;
  options.inputs = inputs;
  options.hidden = std::move(hidden);
  options.activation = activation;
  options.task = task;
  options.classes = classes;
  auto model = Mlp::create(options);
  EXPECT_TRUE(model.isOk()) << model.status().toString();
  model->initialize(7);
  return std::move(*model);
}

TEST(PartitionLayers, BalancesFlopsOverContiguousStages) {
  // The digits MLP 64-128-64-10: layers of 8320, 8256 and 650 parameters; the first costs 2x its
  // parameters (no input gradient), the others 3x.
  const Mlp digits = makeModel(64, {128, 64}, Activation::kRelu, Task::kClassification);
  auto one = partitionLayers(digits.layers(), 1);
  ASSERT_TRUE(one.isOk());
  EXPECT_EQ(*one, (std::vector<StageRange>{{0, 3}}));
  auto two = partitionLayers(digits.layers(), 2);
  ASSERT_TRUE(two.isOk());
  EXPECT_EQ(*two, (std::vector<StageRange>{{0, 1}, {1, 3}}));  // 16640 | 26718
  EXPECT_EQ(layerCost(digits.layers(), 0), 2u * 8320);
  EXPECT_EQ(layerCost(digits.layers(), 1), 3u * 8256);
  auto three = partitionLayers(digits.layers(), 3);
  ASSERT_TRUE(three.isOk());
  EXPECT_EQ(*three, (std::vector<StageRange>{{0, 1}, {1, 2}, {2, 3}}));
  // 32-512-512-512-512-4: four equal layers and a small head; 4 stages put the head with the
  // last equal layer, 2 stages split the equal layers two and two.
  const Mlp wide =
      makeModel(512, {512, 512, 512, 512}, Activation::kRelu, Task::kClassification, 4);
  auto four = partitionLayers(wide.layers(), 4);
  ASSERT_TRUE(four.isOk());
  EXPECT_EQ(*four, (std::vector<StageRange>{{0, 1}, {1, 2}, {2, 3}, {3, 5}}));
  auto halves = partitionLayers(wide.layers(), 2);
  ASSERT_TRUE(halves.isOk());
  EXPECT_EQ(*halves, (std::vector<StageRange>{{0, 2}, {2, 5}}));
  // With a first layer of 768 inputs, 2 x 768 x 512 = 3 x 512 x 512: the halves cost the same.
  const Mlp even =
      makeModel(768, {512, 512, 512, 512}, Activation::kRelu, Task::kClassification, 4);
  auto even_halves = partitionLayers(even.layers(), 2);
  ASSERT_TRUE(even_halves.isOk());
  EXPECT_EQ(*even_halves, (std::vector<StageRange>{{0, 2}, {2, 5}}));
  EXPECT_NEAR(static_cast<double>(layerCost(even.layers(), 0) + layerCost(even.layers(), 1)) /
                  static_cast<double>(layerCost(even.layers(), 2) + layerCost(even.layers(), 3) +
                                      layerCost(even.layers(), 4)),
              1.0, 0.01);
}

TEST(PartitionLayers, RefusesMoreStagesThanLayersAndZero) {
  const Mlp digits = makeModel(64, {128, 64}, Activation::kRelu, Task::kClassification);
  auto four = partitionLayers(digits.layers(), 4);
  ASSERT_FALSE(four.isOk());
  EXPECT_NE(four.status().message().find("4 stages for a model of 3 layers"), std::string::npos)
      << four.status().message();
  EXPECT_FALSE(partitionLayers(digits.layers(), 0).isOk());
}

TEST(GpipeSchedule, ForwardEveryMicroBatchThenBackwardInReverse) {
  // Two stages, three micro-batches.
  EXPECT_EQ(gpipeSchedule(0, 2, 3), (std::vector<Op>{{K::kForward, 0},
                                                     {K::kSendActivations, 0},
                                                     {K::kForward, 1},
                                                     {K::kSendActivations, 1},
                                                     {K::kForward, 2},
                                                     {K::kSendActivations, 2},
                                                     {K::kRecvGradient, 2},
                                                     {K::kBackward, 2},
                                                     {K::kRecvGradient, 1},
                                                     {K::kBackward, 1},
                                                     {K::kRecvGradient, 0},
                                                     {K::kBackward, 0}}));
  EXPECT_EQ(gpipeSchedule(1, 2, 2), (std::vector<Op>{{K::kRecvActivations, 0},
                                                     {K::kForward, 0},
                                                     {K::kRecvActivations, 1},
                                                     {K::kForward, 1},
                                                     {K::kBackward, 1},
                                                     {K::kSendGradient, 1},
                                                     {K::kBackward, 0},
                                                     {K::kSendGradient, 0}}));
  // A middle stage receives and sends both ways; one stage alone only computes.
  const auto middle = gpipeSchedule(1, 3, 4);
  EXPECT_EQ(middle.size(), 4u * 6u);
  EXPECT_EQ(gpipeSchedule(0, 1, 2), (std::vector<Op>{
                                        {K::kForward, 0},
                                        {K::kForward, 1},
                                        {K::kBackward, 1},
                                        {K::kBackward, 0},
                                    }));
}

// Runs every stage's schedule against the others with rendezvous messages (a send completes only
// together with the matching receive, as on Gloo's TCP pairs, with no transfer time), forward
// taking `tf` and backward `tb` per micro-batch on every stage. Returns each stage's idle share
// of the step (1 - busy / makespan), or nullopt when the stages deadlock.
std::optional<std::vector<double>> simulate(size_t stages, size_t micro_batches, double tf,
                                            double tb) {
  std::vector<std::vector<Op>> programs;
  for (size_t s = 0; s < stages; ++s) programs.push_back(gpipeSchedule(s, stages, micro_batches));
  std::vector<size_t> pc(stages, 0);
  std::vector<double> clock(stages, 0.0);
  std::vector<double> busy(stages, 0.0);
  const auto counterpart = [](K kind) {
    switch (kind) {
      case K::kSendActivations:
        return K::kRecvActivations;
      case K::kRecvActivations:
        return K::kSendActivations;
      case K::kSendGradient:
        return K::kRecvGradient;
      case K::kRecvGradient:
        return K::kSendGradient;
      default:
        return kind;
    }
  };
  for (;;) {
    bool progress = false;
    bool all_done = true;
    for (size_t s = 0; s < stages; ++s) {
      if (pc[s] >= programs[s].size()) continue;
      all_done = false;
      const Op op = programs[s][pc[s]];
      if (op.kind == K::kForward || op.kind == K::kBackward) {
        const double t = op.kind == K::kForward ? tf : tb;
        clock[s] += t;
        busy[s] += t;
        ++pc[s];
        progress = true;
        continue;
      }
      const bool downstream = op.kind == K::kSendActivations || op.kind == K::kRecvGradient;
      const size_t peer = downstream ? s + 1 : s - 1;
      if (pc[peer] >= programs[peer].size()) continue;
      const Op theirs = programs[peer][pc[peer]];
      if (theirs.kind != counterpart(op.kind) || theirs.micro_batch != op.micro_batch) continue;
      const double meet = std::max(clock[s], clock[peer]);
      clock[s] = clock[peer] = meet;
      ++pc[s];
      ++pc[peer];
      progress = true;
    }
    if (all_done) break;
    if (!progress) return std::nullopt;
  }
  const double makespan = *std::max_element(clock.begin(), clock.end());
  std::vector<double> idle;
  for (size_t s = 0; s < stages; ++s) idle.push_back(1.0 - busy[s] / makespan);
  return idle;
}

TEST(GpipeSchedule, NeverDeadlocksAndIdlesTheGpipeBubble) {
  for (size_t p : {1u, 2u, 3u, 4u, 8u}) {
    for (size_t m : {1u, 2u, 4u, 8u, 16u}) {
      for (double tb : {1.0, 2.0}) {  // backward often costs twice the forward
        const auto idle = simulate(p, m, 1.0, tb);
        ASSERT_TRUE(idle.has_value()) << "deadlock at P=" << p << " M=" << m;
        for (size_t s = 0; s < p; ++s) {
          EXPECT_NEAR((*idle)[s], gpipeBubbleFraction(p, m), 1e-12)
              << "P=" << p << " M=" << m << " stage " << s;
        }
      }
    }
  }
  EXPECT_DOUBLE_EQ(gpipeBubbleFraction(4, 8), 3.0 / 11.0);
  EXPECT_DOUBLE_EQ(gpipeBubbleFraction(1, 8), 0.0);
}

TEST(SplitMicroBatches, EqualSizesFirstOnesLargerNeverEmpty) {
  EXPECT_EQ(splitMicroBatches(26, 4), (std::vector<size_t>{7, 7, 6, 6}));
  EXPECT_EQ(splitMicroBatches(24, 4), (std::vector<size_t>{6, 6, 6, 6}));
  EXPECT_EQ(splitMicroBatches(3, 8), (std::vector<size_t>{1, 1, 1}));  // an epoch's short tail
  EXPECT_TRUE(splitMicroBatches(0, 4).empty());
}

std::vector<float> randomValues(size_t n, uint32_t seed, float scale) {
  std::vector<float> v(n);
  uint32_t state = seed * 2654435761u + 1;
  for (float& x : v) {
    state = state * 1664525u + 1013904223u;
    x = scale * (static_cast<float>(state >> 8) / 16777216.0f - 0.5f);
  }
  return v;
}

// The stages of `full` run one micro-batch after another in this process, in schedule order,
// against the full model on the whole batch: the same loss and the same gradient, layer by layer.
void expectStagesMatchFullModel(Mlp full, size_t stages, size_t micro_batches) {
  const size_t batch = 26;
  const size_t inputs = full.options().inputs;
  const std::vector<float> x = randomValues(batch * inputs, 3, 4.0f);
  std::vector<float> y(batch);
  for (size_t i = 0; i < batch; ++i) {
    y[i] = full.options().task == Task::kClassification
               ? static_cast<float>((i * 7) % full.options().classes)
               : static_cast<float>(i % 5) - 2.0f;
  }
  auto ranges = partitionLayers(full.layers(), stages);
  ASSERT_TRUE(ranges.isOk()) << ranges.status().toString();
  std::vector<PipelineStage> pipeline;
  for (size_t s = 0; s < stages; ++s) {
    auto stage = PipelineStage::create(full, *ranges, s);
    ASSERT_TRUE(stage.isOk()) << stage.status().toString();
    pipeline.push_back(std::move(*stage));
  }
  const Batch whole{x.data(), y.data(), batch};
  const float full_loss = full.forward(whole);
  full.backward(whole);

  const std::vector<size_t> sizes = splitMicroBatches(batch, micro_batches);
  // activations[s][m]: stage s's input of micro-batch m (stage 0 reads x directly).
  std::vector<std::vector<std::vector<float>>> inputs_of(stages);
  std::vector<size_t> starts;
  size_t start = 0;
  double loss = 0.0;
  for (size_t m = 0; m < sizes.size(); ++m) {
    starts.push_back(start);
    const float* in = x.data() + start * inputs;
    for (size_t s = 0; s < stages; ++s) {
      if (s > 0) {
        const auto out = pipeline[s - 1].outputs(m);
        inputs_of[s].emplace_back(out.begin(), out.end());
        in = inputs_of[s].back().data();
      }
      const float l = pipeline[s].forward(m, in, y.data() + start, sizes[m]);
      if (pipeline[s].isLast()) loss += static_cast<double>(l) * sizes[m] / batch;
    }
    start += sizes[m];
  }
  for (size_t m = sizes.size(); m-- > 0;) {
    std::vector<float> grad;  // dL/d(outputs) of the stage below the one computing
    for (size_t s = stages; s-- > 0;) {
      std::vector<float> input_grad(s > 0 ? sizes[m] * pipeline[s].inputWidth() : 0);
      pipeline[s].backward(
          m, s + 1 < stages ? grad.data() : nullptr, s > 0 ? input_grad.data() : nullptr,
          static_cast<float>(sizes[m]) / static_cast<float>(batch), m + 1 != sizes.size());
      grad = std::move(input_grad);
    }
  }
  EXPECT_NEAR(loss, full_loss, 1e-5 * std::abs(full_loss));
  for (const PipelineStage& stage : pipeline) {
    const auto grads = stage.model().grads();
    const auto expected = full.grads().subspan(stage.paramOffset(), grads.size());
    double max_error = 0.0;
    double max_value = 0.0;
    for (size_t i = 0; i < grads.size(); ++i) {
      max_error = std::max(max_error, static_cast<double>(std::abs(grads[i] - expected[i])));
      max_value = std::max(max_value, static_cast<double>(std::abs(expected[i])));
    }
    EXPECT_LE(max_error, 1e-5 * max_value + 1e-7)
        << "stage " << stage.stage() << " of " << stages << ", M=" << micro_batches;
  }
}

TEST(PipelineStage, ChainedStagesGiveTheFullModelsLossAndGradients) {
  for (Activation activation : {Activation::kRelu, Activation::kGelu, Activation::kTanh}) {
    for (size_t stages : {1u, 2u, 3u, 4u}) {
      for (size_t micro_batches : {1u, 4u, 26u}) {
        SCOPED_TRACE(std::string(activationName(activation)) + " P=" + std::to_string(stages) +
                     " M=" + std::to_string(micro_batches));
        expectStagesMatchFullModel(makeModel(12, {16, 8, 8}, activation, Task::kClassification, 5),
                                   stages, micro_batches);
      }
    }
  }
  expectStagesMatchFullModel(makeModel(6, {9, 7}, Activation::kTanh, Task::kRegression), 3, 5);
}

TEST(PipelineStage, TakesItsSliceOfTheFullParametersAndRefusesBadStages) {
  const Mlp full = makeModel(64, {128, 64}, Activation::kRelu, Task::kClassification);
  const std::vector<StageRange> ranges = {{0, 1}, {1, 3}};
  auto second = PipelineStage::create(full, ranges, 1);
  ASSERT_TRUE(second.isOk());
  EXPECT_EQ(second->paramOffset(), 8320u);
  EXPECT_EQ(second->model().numParams(), 8906u);
  EXPECT_EQ(second->inputWidth(), 128u);
  EXPECT_EQ(second->outputWidth(), 10u);
  EXPECT_TRUE(std::equal(second->model().params().begin(), second->model().params().end(),
                         full.params().begin() + 8320));
  EXPECT_FALSE(second->model().options().hidden_output.has_value());
  auto first = PipelineStage::create(full, ranges, 0);
  ASSERT_TRUE(first.isOk());
  EXPECT_EQ(first->model().options().hidden_output, std::optional<size_t>(128));
  EXPECT_FALSE(PipelineStage::create(full, ranges, 2).isOk());
  EXPECT_FALSE(PipelineStage::create(full, {{0, 1}, {1, 2}}, 1).isOk());  // no output layer
}

}  // namespace
}  // namespace ringmaster::train
