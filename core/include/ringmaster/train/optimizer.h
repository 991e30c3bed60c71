#pragma once
// Optimizers over one flat parameter buffer (see model.h), the learning-rate schedule and
// gradient clipping.
//
// Weight decay, documented because the two usual meanings differ:
//   sgd:  L2 regularisation, g += weight_decay * p before momentum (torch.optim.SGD);
//   adam: decoupled, p -= lr * weight_decay * p before the Adam update (torch.optim.AdamW).
// It applies to every parameter, biases included (as PyTorch does with a single param group).
//
// Thread safety: an Optimizer is not thread-safe; the free functions are pure.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ringmaster/util/result.h"

namespace ringmaster::train {

enum class OptimizerKind { kSgd, kAdam };
enum class LrSchedule { kConstant, kCosine };

// "sgd", "adam" / "constant", "cosine"; parse* is the inverse (nullopt for anything else).
const char* optimizerKindName(OptimizerKind kind);
const char* lrScheduleName(LrSchedule schedule);
std::optional<OptimizerKind> parseOptimizerKind(std::string_view name);
std::optional<LrSchedule> parseLrSchedule(std::string_view name);

struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::kSgd;
  double lr = 0.05;           // peak learning rate, > 0
  double momentum = 0.9;      // sgd, in [0, 1)
  bool nesterov = false;      // sgd; needs momentum > 0
  double beta1 = 0.9;         // adam, in [0, 1)
  double beta2 = 0.999;       // adam, in [0, 1)
  double epsilon = 1e-8;      // adam, > 0
  double weight_decay = 0.0;  // >= 0; see the top of this file
  uint64_t warmup_steps = 0;  // linear warmup from lr/warmup_steps up to lr
  LrSchedule schedule = LrSchedule::kCosine;
  uint64_t total_steps = 0;  // optimizer steps of the whole run; the cosine reaches 0 there
};

// The learning rate for optimizer step `step` (0-based: the lr the (step+1)-th update uses):
//   step < warmup_steps:  lr * (step + 1) / warmup_steps
//   constant:             lr
//   cosine:               lr * 0.5 * (1 + cos(pi * t)), t = (step - warmup) / (total - warmup)
//                         clamped to [0, 1] (so 0 from total_steps on; lr when total <= warmup).
double learningRateAt(const OptimizerOptions& options, uint64_t step);

// Scales `grads` so that their global L2 norm is at most `max_norm` (factor
// max_norm / (norm + 1e-6), as torch.nn.utils.clip_grad_norm_) and returns the norm before
// clipping. max_norm <= 0 only measures.
double clipGradNorm(std::span<float> grads, double max_norm);

// The global L2 norm, accumulated in double, and its square.
double globalNorm(std::span<const float> values);
double sumOfSquares(std::span<const float> values);

class Optimizer {
 public:
  // Validates the options (each error names the field, e.g. "optimizer.lr") and allocates state
  // for `num_params` parameters.
  static Result<Optimizer> create(const OptimizerOptions& options, size_t num_params);

  const OptimizerOptions& options() const { return options_; }
  // Updates completed so far; the next update uses learningRateAt(options(), step()).
  uint64_t step() const { return step_; }
  double currentLr() const { return learningRateAt(options_, step_); }

  // One update of `params` from `grads` (already averaged and clipped). Returns the lr used.
  // With `grad_squares`, also sums the squares of `grads` into it (the norm without a second
  // pass over the gradient in memory: globalNorm() = sqrt of it, up to the order of additions).
  // REQUIRES: params.size() == grads.size() == num_params
  double apply(std::span<float> params, std::span<const float> grads,
               double* grad_squares = nullptr);

  // Kind, sizes, step count and moment buffers, for checkpoints. restoreState() refuses state of
  // another kind or size with a Status that says which.
  std::string serializeState() const;
  Status restoreState(std::string_view bytes);

 private:
  Optimizer(const OptimizerOptions& options, size_t num_params);

  OptimizerOptions options_;
  uint64_t step_ = 0;
  std::vector<float> first_;   // sgd: momentum buffer; adam: first moment m
  std::vector<float> second_;  // adam: second moment v; empty for sgd
};

}  // namespace ringmaster::train
