#pragma once
// The native trainer's model: a multi-layer perceptron computed on the CPU with OpenBLAS sgemm.
//
// Parameters live in ONE contiguous float buffer and gradients in a second buffer of the same
// layout, so a data-parallel allreduce can work on the whole buffer or on per-layer slices
// ("buckets"). Layer l occupies [offset, offset + size) of both buffers: its weight matrix
// (outputs x inputs, row-major, as in torch.nn.Linear) followed by its bias (outputs).
//
// Data is float32, row-major and batch-major: a batch of B samples with F features is B x F.
//
// Losses (both averaged over the batch, as PyTorch's defaults):
//   classification: softmax cross-entropy over `classes` logits;
//   regression:     mean squared error of the single output, mean((y_hat - y)^2).
//
// Thread safety: an Mlp is not thread-safe; distinct Mlp objects may be used from different
// threads at once (OpenBLAS is thread-safe).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ringmaster/util/result.h"

namespace ringmaster::train {

enum class Activation { kRelu, kGelu, kTanh };  // GELU is the exact (erf) form, as in PyTorch
enum class Task { kClassification, kRegression };

// "relu", "gelu", "tanh" / "classification", "regression"; parse* is the inverse (nullopt
// otherwise).
const char* activationName(Activation activation);
const char* taskName(Task task);
std::optional<Activation> parseActivation(std::string_view name);
std::optional<Task> parseTask(std::string_view name);

struct MlpOptions {
  size_t inputs = 0;                       // features per sample; > 0
  std::vector<size_t> hidden = {128, 64};  // widths of the hidden layers, each > 0; may be empty
  Activation activation = Activation::kRelu;
  Task task = Task::kClassification;
  size_t classes = 2;  // outputs for classification (>= 2); regression always has 1 output
  // Pipeline parallelism (pipeline_stage.h): set, this Mlp is a pipeline stage before the last.
  // Its last layer is a hidden layer with this many outputs and the activation, and there is no
  // loss: forward() returns 0 and ignores targets, backward() needs BackwardOptions::output_grad.
  // Unset (the default): the last layer is the output layer of `task`, as above.
  std::optional<size_t> hidden_output;
};

// Where one linear layer lives in params() / grads().
struct LayerView {
  size_t inputs = 0;
  size_t outputs = 0;
  size_t offset = 0;  // first float of the layer's block: weights, then bias
  size_t size = 0;    // outputs * inputs + outputs

  size_t weightOffset() const { return offset; }
  size_t biasOffset() const { return offset + outputs * inputs; }
};

// `size` samples: features (size x inputs, row-major) and one target per sample: the class index
// stored as a float (exact below 2^24) for classification, the value for regression.
struct Batch {
  const float* features = nullptr;
  const float* targets = nullptr;
  size_t size = 0;
};

// Called by backward() as soon as a layer's gradient block is final, last layer first, so that a
// data-parallel step can start reducing that bucket while earlier layers still compute. `grad`
// points into grads() (count = LayerView::size floats); the callee may modify it in place (e.g.
// an in-place allreduce) but backward() does not read it again.
using LayerGradReadyFn = std::function<void(size_t layer, float* grad, size_t count)>;

struct BackwardOptions {
  // Multiplies every gradient: 1/K when averaging K accumulated micro-batches.
  float loss_scale = 1.0f;
  // Add to grads() instead of overwriting them (gradient accumulation).
  bool accumulate = false;
  // Pipeline stages (pipeline_stage.h). output_grad: dL/d(outputs) of the last forward() (batch x
  // outputs), given by the next stage, instead of the derivative of this Mlp's own loss; it is
  // multiplied by loss_scale (not divided by the batch size: it is the gradient of the whole
  // loss already). Required when MlpOptions::hidden_output is set.
  const float* output_grad = nullptr;
  // input_grad: receives dL/d(features) of the batch (batch x inputs), which the previous stage
  // takes as its output_grad.
  float* input_grad = nullptr;
};

// What forward() keeps for backward(): every layer's activations for one batch. A pipeline stage
// keeps several micro-batches in flight (forward of all of them, then backward of all), so it
// swaps each micro-batch's state in before its forward() or backward() and out after
// (Mlp::swapActivations; O(1), no copies).
struct MlpActivations {
  std::vector<std::vector<float>> pre;
  std::vector<std::vector<float>> act;
  size_t capacity = 0;  // batch size the buffers hold
  size_t batch = 0;     // rows of the forward() they hold
};

// Sums over a data set, from Mlp::evaluate().
struct EvalTotals {
  double loss_sum = 0.0;  // sum of per-sample losses (cross-entropy, or squared error)
  size_t correct = 0;     // classification: argmax == label
  size_t samples = 0;
};

class Mlp {
 public:
  // Validates the options (names the offending field) and allocates zeroed parameters; call
  // initialize() before training.
  static Result<Mlp> create(const MlpOptions& options);

  const MlpOptions& options() const { return options_; }
  size_t numOutputs() const { return layers_.back().outputs; }
  size_t numLayers() const { return layers_.size(); }
  const std::vector<LayerView>& layers() const { return layers_; }
  size_t numParams() const { return params_.size(); }

  std::span<float> params() { return params_; }
  std::span<const float> params() const { return params_; }
  std::span<float> grads() { return grads_; }
  std::span<const float> grads() const { return grads_; }

  // Deterministic initialisation from `seed`, the same on every rank and platform: weights of a
  // hidden layer ~ N(0, 2/fan_in) (He) for relu/gelu and N(0, 2/(fan_in+fan_out)) (Xavier) for
  // tanh; the output layer is Xavier; biases are zero.
  void initialize(uint64_t seed);
  void zeroGrads();

  // The batch's mean loss; keeps the activations for backward().
  // REQUIRES: batch.size > 0; classification targets are integers in [0, classes).
  float forward(const Batch& batch);

  // Gradients of the mean loss of the last forward(), which must have been given `batch`, into
  // grads() (scaled by options.loss_scale, added when options.accumulate). Calls
  // `on_layer_grad_ready` (when set) once per layer, last layer first.
  void backward(const Batch& batch, const LayerGradReadyFn& on_layer_grad_ready = {},
                const BackwardOptions& options = {});

  // The outputs of the last forward(): logits (size x classes) or predictions (size x 1), or a
  // stage's activations (size x hidden_output).
  std::span<const float> lastOutputs() const;

  // Exchanges the activations forward() kept (see MlpActivations) with `other`.
  void swapActivations(MlpActivations& other);

  // Loss sum and correct count over `n` samples, computed in chunks of `chunk` samples with the
  // same buffers as training (so it overwrites what backward() would need).
  EvalTotals evaluate(const float* features, const float* targets, size_t n, size_t chunk = 256);

 private:
  explicit Mlp(const MlpOptions& options);
  void reserveBatch(size_t batch);

  MlpOptions options_;
  std::vector<LayerView> layers_;
  std::vector<float> params_;
  std::vector<float> grads_;
  // Per layer: pre-activations z (batch x outputs) and activations a = act(z). For the output
  // layer a holds softmax probabilities (classification) or is unused (regression).
  // (Kept in an MlpActivations so that a pipeline stage can swap them; see swapActivations.)
  MlpActivations state_;
  std::vector<float> delta_;       // dL/dz of the current layer, batch x max width
  std::vector<float> delta_prev_;  // dL/dz of the layer below
};

// OpenBLAS's thread count (like torch.set_num_threads); n <= 0 leaves it unchanged.
void setBlasThreads(int n);
int blasThreads();
// The kernel set OpenBLAS chose for this CPU, e.g. "SkylakeX" ("" without OpenBLAS); see
// blas_choice.h for why the agent chooses it for native ranks.
std::string blasCoreName();

}  // namespace ringmaster::train
