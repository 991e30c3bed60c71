#pragma once
// Pipeline (model) parallelism for the native trainer's MLP (native.strategy.pipeline):
// the layers split over P stages, one rank each, run on the GPipe schedule.
//
// - partitionLayers(): contiguous layer ranges, balanced by FLOPs (layerCost): each weight of a
//   layer is one multiply-add per sample forward and two backward (weight gradient, input
//   gradient), so a layer costs 3x its parameter count, except the model's first layer, whose
//   input gradient nobody needs (2x). Biases count like weights; activations and the loss are the
//   small rest. Equal stage times are what the bubble formula assumes.
// - gpipeSchedule(): the ordered operations of one stage for one optimizer step: the forward of
//   every micro-batch (receive activations from the stage before, compute, send to the stage
//   after), then the backward of every micro-batch in reverse order (receive the output
//   gradient from the stage after, compute, send the input gradient to the stage before).
//   Gradients accumulate over the micro-batches; each stage then applies its own optimizer to its
//   own layers. With equal stage times and free messages a stage idles (P-1)/(M+P-1) of a step
//   (gpipeBubbleFraction). The order is deadlock-free even when a send waits for the receiver to
//   post its receive (Gloo's TCP pairs): every stage's forward sends go downstream and its
//   forward receives come from upstream, and the reverse in the backward phase.
// - PipelineStage: one stage's layers as an Mlp of their own (MlpOptions::hidden_output for the
//   stages before the last), with the activations of each micro-batch kept until its backward.
//
// The math is the single-rank step's, reordered: a batch of B samples in micro-batches of b_m
// samples, each backward scaled by b_m / B, sums to the batch mean's gradient.
//
// Thread safety: the functions are pure; a PipelineStage is not thread-safe.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ringmaster/train/model.h"
#include "ringmaster/util/result.h"

namespace ringmaster::train {

// Layers [first, end) of the full model.
struct StageRange {
  size_t first = 0;
  size_t end = 0;
  bool operator==(const StageRange&) const = default;
};

// Multiply-adds per sample of `layer`'s forward and backward (see the top): 3 x its parameters,
// 2 x for layer 0.
size_t layerCost(const std::vector<LayerView>& layers, size_t layer);

// `stages` contiguous, non-empty ranges covering `layers`, minimising the largest stage's cost
// (layerCost; ties: the earliest cut). INVALID_ARGUMENT when stages is 0 or more than the
// layers.
Result<std::vector<StageRange>> partitionLayers(const std::vector<LayerView>& layers,
                                                size_t stages);

enum class PipelineOpKind {
  kRecvActivations,  // from stage - 1
  kForward,
  kSendActivations,  // to stage + 1
  kRecvGradient,     // dL/d(outputs), from stage + 1
  kBackward,
  kSendGradient,  // dL/d(inputs), to stage - 1
};
const char* pipelineOpName(PipelineOpKind kind);

struct PipelineOp {
  PipelineOpKind kind = PipelineOpKind::kForward;
  size_t micro_batch = 0;
  bool operator==(const PipelineOp&) const = default;
};

// GPipe: stage `stage` of `stages` with `micro_batches` micro-batches (see the top).
// REQUIRES: stage < stages, micro_batches >= 1.
std::vector<PipelineOp> gpipeSchedule(size_t stage, size_t stages, size_t micro_batches);

// (P - 1) / (M + P - 1): the idle share of a step of GPipe with equal stage times.
double gpipeBubbleFraction(size_t stages, size_t micro_batches);

// A batch of `batch` samples in min(micro_batches, batch) micro-batches of consecutive samples,
// sizes as equal as possible (the first batch % count ones one larger). Empty for batch 0.
std::vector<size_t> splitMicroBatches(size_t batch, size_t micro_batches);

class PipelineStage {
 public:
  // Stage `stage` of `ranges` over the model `full` describes, starting from full's parameters
  // (so that every stage's slice comes from the same initialisation as a single rank's model).
  static Result<PipelineStage> create(const Mlp& full, const std::vector<StageRange>& ranges,
                                      size_t stage);

  size_t stage() const { return stage_; }
  size_t stages() const { return stages_; }
  bool isFirst() const { return stage_ == 0; }
  bool isLast() const { return stage_ + 1 == stages_; }
  const StageRange& range() const { return range_; }
  size_t inputWidth() const { return model_.layers().front().inputs; }
  size_t outputWidth() const { return model_.layers().back().outputs; }
  // This stage's layers only: params() and grads() are the slice [offset, offset + size) of the
  // full model's buffers, offset = paramOffset().
  Mlp& model() { return model_; }
  const Mlp& model() const { return model_; }
  size_t paramOffset() const { return param_offset_; }

  // The forward of micro-batch `slot` (rows x inputWidth() at `input`; on the last stage with
  // one target per row at `targets`). Both must stay valid until backward(slot). Returns the
  // micro-batch's mean loss on the last stage, 0 on the others.
  float forward(size_t slot, const float* input, const float* targets, size_t rows);
  // The outputs of forward(slot) (rows x outputWidth()): the next stage's input.
  std::span<const float> outputs(size_t slot) const;
  // The backward of `slot`: output_grad is dL/d(outputs) from the next stage (null on the last,
  // which starts from its loss); input_grad (rows x inputWidth(), null on the first stage)
  // receives dL/d(input). loss_scale weighs the micro-batch's mean loss in the step's (b_m / B);
  // the last stage applies it and the gradients it sends carry it, so every stage passes the same
  // value. The gradient is added to grads() when `accumulate`, else replaces them.
  void backward(size_t slot, const float* output_grad, float* input_grad, float loss_scale,
                bool accumulate);

 private:
  PipelineStage(Mlp model, size_t stage, size_t stages, StageRange range, size_t param_offset);

  struct Slot {
    MlpActivations activations;
    Batch batch;
  };
  Slot& slotAt(size_t slot);

  Mlp model_;
  size_t stage_;
  size_t stages_;
  StageRange range_;
  size_t param_offset_;
  std::vector<Slot> slots_;
};

}  // namespace ringmaster::train
