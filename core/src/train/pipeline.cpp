#include "ringmaster/train/pipeline.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

namespace ringmaster::train {

size_t layerCost(const std::vector<LayerView>& layers, size_t layer) {
  const LayerView& l = layers.at(layer);
  const size_t products = l.inputs * l.outputs + l.outputs;  // the parameters
  return (layer == 0 ? 2 : 3) * products;
}

Result<std::vector<StageRange>> partitionLayers(const std::vector<LayerView>& layers,
                                                size_t stages) {
  const size_t n = layers.size();
  if (stages == 0) return invalidArgument("pipeline.stages: expected at least 1 stage, got 0");
  if (stages > n) {
    return invalidArgument("pipeline.stages: " + std::to_string(stages) +
                           " stages for a model of " + std::to_string(n) +
                           " layers; a stage needs at least one layer");
  }
  // prefix[i]: the cost (layerCost) of layers [0, i).
  std::vector<size_t> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + layerCost(layers, i);
  // best[s][i]: the smallest largest-stage count splitting layers [0, i) into s stages; cut[s][i]
  // the start of the last of them. P * L^2 steps: a handful of layers.
  constexpr size_t kInf = std::numeric_limits<size_t>::max();
  std::vector<std::vector<size_t>> best(stages + 1, std::vector<size_t>(n + 1, kInf));
  std::vector<std::vector<size_t>> cut(stages + 1, std::vector<size_t>(n + 1, 0));
  best[0][0] = 0;
  for (size_t s = 1; s <= stages; ++s) {
    for (size_t i = s; i <= n; ++i) {
      for (size_t j = s - 1; j < i; ++j) {  // the last stage is layers [j, i)
        if (best[s - 1][j] == kInf) continue;
        const size_t cost = std::max(best[s - 1][j], prefix[i] - prefix[j]);
        if (cost < best[s][i]) {
          best[s][i] = cost;
          cut[s][i] = j;
        }
      }
    }
  }
  std::vector<StageRange> ranges(stages);
  size_t end = n;
  for (size_t s = stages; s > 0; --s) {
    ranges[s - 1] = StageRange{cut[s][end], end};
    end = cut[s][end];
  }
  return ranges;
}

const char* pipelineOpName(PipelineOpKind kind) {
  switch (kind) {
    case PipelineOpKind::kRecvActivations:
      return "recv_activations";
    case PipelineOpKind::kForward:
      return "forward";
    case PipelineOpKind::kSendActivations:
      return "send_activations";
    case PipelineOpKind::kRecvGradient:
      return "recv_gradient";
    case PipelineOpKind::kBackward:
      return "backward";
    case PipelineOpKind::kSendGradient:
      return "send_gradient";
  }
  return "?";
}

std::vector<PipelineOp> gpipeSchedule(size_t stage, size_t stages, size_t micro_batches) {
  const bool first = stage == 0;
  const bool last = stage + 1 == stages;
  std::vector<PipelineOp> ops;
  for (size_t m = 0; m < micro_batches; ++m) {
    if (!first) ops.push_back({PipelineOpKind::kRecvActivations, m});
    ops.push_back({PipelineOpKind::kForward, m});
    if (!last) ops.push_back({PipelineOpKind::kSendActivations, m});
  }
  // Backward last micro-batch first: the last stage's freshest activations, as in GPipe.
  for (size_t m = micro_batches; m-- > 0;) {
    if (!last) ops.push_back({PipelineOpKind::kRecvGradient, m});
    ops.push_back({PipelineOpKind::kBackward, m});
    if (!first) ops.push_back({PipelineOpKind::kSendGradient, m});
  }
  return ops;
}

double gpipeBubbleFraction(size_t stages, size_t micro_batches) {
  const double p = static_cast<double>(stages);
  const double m = static_cast<double>(micro_batches);
  return (p - 1.0) / (m + p - 1.0);
}

std::vector<size_t> splitMicroBatches(size_t batch, size_t micro_batches) {
  const size_t count = std::min(std::max<size_t>(micro_batches, 1), batch);
  std::vector<size_t> sizes;
  for (size_t m = 0; m < count; ++m) sizes.push_back(batch / count + (m < batch % count ? 1 : 0));
  return sizes;
}

Result<PipelineStage> PipelineStage::create(const Mlp& full, const std::vector<StageRange>& ranges,
                                            size_t stage) {
  if (stage >= ranges.size()) {
    return invalidArgument("pipeline: stage " + std::to_string(stage) + " of " +
                           std::to_string(ranges.size()));
  }
  const StageRange range = ranges[stage];
  const std::vector<LayerView>& layers = full.layers();
  if (range.first >= range.end || range.end > layers.size()) {
    return invalidArgument("pipeline: stage " + std::to_string(stage) + " has no layers of the " +
                           std::to_string(layers.size()) + "-layer model");
  }
  const bool last = stage + 1 == ranges.size();
  if (last != (range.end == layers.size())) {
    return invalidArgument("pipeline: only the last stage may (and must) hold the output layer");
  }
  MlpOptions options = full.options();
  options.inputs = layers[range.first].inputs;
  options.hidden.clear();
  for (size_t l = range.first; l + 1 < range.end; ++l) options.hidden.push_back(layers[l].outputs);
  if (!last) options.hidden_output = layers[range.end - 1].outputs;
  RM_ASSIGN_OR_RETURN(Mlp model, Mlp::create(options));
  // The stage's layers sit in the same order as in the full model: one contiguous slice.
  const size_t offset = layers[range.first].offset;
  const std::span<const float> source = full.params().subspan(offset, model.numParams());
  std::copy(source.begin(), source.end(), model.params().begin());
  model.zeroGrads();
  return PipelineStage(std::move(model), stage, ranges.size(), range, offset);
}

PipelineStage::PipelineStage(Mlp model, size_t stage, size_t stages, StageRange range,
                             size_t param_offset)
    : model_(std::move(model)),
      stage_(stage),
      stages_(stages),
      range_(range),
      param_offset_(param_offset) {}

PipelineStage::Slot& PipelineStage::slotAt(size_t slot) {
  if (slot >= slots_.size()) slots_.resize(slot + 1);
  return slots_[slot];
}

float PipelineStage::forward(size_t slot, const float* input, const float* targets, size_t rows) {
  Slot& s = slotAt(slot);
  s.batch = Batch{input, targets, rows};
  model_.swapActivations(s.activations);
  const float loss = model_.forward(s.batch);
  model_.swapActivations(s.activations);
  return loss;
}

std::span<const float> PipelineStage::outputs(size_t slot) const {
  const Slot& s = slots_.at(slot);
  return {s.activations.act.back().data(), s.batch.size * outputWidth()};
}

void PipelineStage::backward(size_t slot, const float* output_grad, float* input_grad,
                             float loss_scale, bool accumulate) {
  Slot& s = slotAt(slot);
  BackwardOptions options;
  // The loss is the last stage's: it applies the scale, and the gradients it sends upstream
  // carry it (scaling again on the way would count it once per stage).
  options.loss_scale = isLast() ? loss_scale : 1.0f;
  options.accumulate = accumulate;
  options.output_grad = output_grad;
  options.input_grad = input_grad;
  model_.swapActivations(s.activations);
  model_.backward(s.batch, {}, options);
  model_.swapActivations(s.activations);
}

}  // namespace ringmaster::train
