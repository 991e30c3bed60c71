#include "ringmaster/train/model.h"

#include <cblas.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "train/random.h"

// A broken internal invariant (a caller ignoring a REQUIRES) aborts with file and line.
#define RM_TRAIN_CHECK(cond, what)                                                             \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      std::fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__, __LINE__, #cond, what); \
      std::abort();                                                                            \
    }                                                                                          \
  } while (0)

namespace ringmaster::train {
namespace {

constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

// Branch-free float approximations of exp, tanh and the normal CDF, written so that GCC
// vectorizes the activation loops: libm's scalar tanhf / erff made a tanh or GELU step ~10x
// slower than a ReLU step. Errors are a few float ulps (exp, tanh) and < 2e-7 absolute (Phi).

// e^x (Cephes expf): x = n ln2 + r, |r| <= ln2/2, degree-6 polynomial for e^r, times 2^n.
inline float fastExp(float x) {
  x = std::min(std::max(x, -87.0f), 88.0f);
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = (x * 1.44269504088896341f + kRound) - kRound;
  const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * r * r + r + 1.0f;
  const auto bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
  return e * std::bit_cast<float>(bits);
}

// tanh (Cephes tanhf): an odd polynomial below |x| = 0.625, 1 - 2 / (e^2|x| + 1) above.
inline float fastTanh(float x) {
  const float ax = std::min(std::abs(x), 9.0f);  // tanh(9) rounds to 1 in float
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = p * z * x + x;
  const float large = std::copysign(1.0f - 2.0f / (fastExp(2.0f * ax) + 1.0f), x);
  return ax < 0.625f ? small : large;
}

// Phi(z) = 0.5 * (1 + erf(z / sqrt 2)) with erfc from Abramowitz & Stegun 7.1.26 (absolute
// error < 1.5e-7), and exp(-z^2 / 2) for the density, which the GELU derivative needs too.
inline float normalCdf(float z, float* exp_half_z2) {
  const float x = std::abs(z) * kInvSqrt2;
  const float t = 1.0f / (1.0f + 0.3275911f * x);
  float poly = 1.061405429f;
  poly = poly * t - 1.453152027f;
  poly = poly * t + 1.421413741f;
  poly = poly * t - 0.284496736f;
  poly = (poly * t + 0.254829592f) * t;
  const float e = fastExp(-x * x);
  *exp_half_z2 = e;
  const float tail = 0.5f * poly * e;  // 0.5 * erfc(|z| / sqrt 2) = Phi(-|z|)
  return z >= 0.0f ? 1.0f - tail : tail;
}

inline float gelu(float z) {
  float unused;
  return z * normalCdf(z, &unused);
}

inline float geluDerivative(float z) {
  float density;
  const float cdf = normalCdf(z, &density);
  return cdf + z * kInvSqrt2Pi * density;
}

// a = act(a + bias), row by row; for GELU the pre-activation is kept in `pre` for backward().
void biasActivation(Activation activation, float* a, float* pre, const float* bias, size_t rows,
                    size_t cols) {
  for (size_t i = 0; i < rows; ++i) {
    float* row = a + i * cols;
    switch (activation) {
      case Activation::kRelu:
        for (size_t j = 0; j < cols; ++j) row[j] = std::max(row[j] + bias[j], 0.0f);
        break;
      case Activation::kTanh:
        for (size_t j = 0; j < cols; ++j) row[j] = fastTanh(row[j] + bias[j]);
        break;
      case Activation::kGelu: {
        float* pre_row = pre + i * cols;
        for (size_t j = 0; j < cols; ++j) {
          const float z = row[j] + bias[j];
          pre_row[j] = z;
          row[j] = gelu(z);
        }
        break;
      }
    }
  }
}

// delta *= act'(z), with the derivative taken from what forward() kept.
void multiplyActivationDerivative(Activation activation, float* delta, const float* a,
                                  const float* pre, size_t n) {
  switch (activation) {
    case Activation::kRelu:
      for (size_t i = 0; i < n; ++i) delta[i] = a[i] > 0.0f ? delta[i] : 0.0f;
      break;
    case Activation::kTanh:
      for (size_t i = 0; i < n; ++i) delta[i] *= 1.0f - a[i] * a[i];
      break;
    case Activation::kGelu:
      for (size_t i = 0; i < n; ++i) delta[i] *= geluDerivative(pre[i]);
      break;
  }
}

}  // namespace

Result<Mlp> Mlp::create(const MlpOptions& options) {
  if (options.inputs == 0) return invalidArgument("model.inputs: expected at least 1 feature");
  for (size_t i = 0; i < options.hidden.size(); ++i) {
    if (options.hidden[i] == 0) {
      return invalidArgument("model.hidden[" + std::to_string(i) +
                             "]: expected a positive layer width, got 0");
    }
  }
  if (options.hidden_output && *options.hidden_output == 0) {
    return invalidArgument("model.hidden_output: expected a positive layer width, got 0");
  }
  if (options.task == Task::kClassification && options.classes < 2) {
    return invalidArgument("model.classes: classification needs at least 2 classes, got " +
                           std::to_string(options.classes));
  }
  return Mlp(options);
}

Mlp::Mlp(const MlpOptions& options) : options_(options) {
  std::vector<size_t> widths;
  widths.push_back(options.inputs);
  widths.insert(widths.end(), options.hidden.begin(), options.hidden.end());
  if (options.hidden_output) {
    widths.push_back(*options.hidden_output);
  } else {
    widths.push_back(options.task == Task::kClassification ? options.classes : 1);
  }
  size_t offset = 0;
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    LayerView view;
    view.inputs = widths[l];
    view.outputs = widths[l + 1];
    view.offset = offset;
    view.size = view.outputs * view.inputs + view.outputs;
    offset += view.size;
    layers_.push_back(view);
  }
  params_.assign(offset, 0.0f);
  grads_.assign(offset, 0.0f);
  state_.pre.resize(layers_.size());
  state_.act.resize(layers_.size());
}

void Mlp::initialize(uint64_t seed) {
  Rng rng(deriveSeed(seed, 0x1417));
  for (size_t l = 0; l < layers_.size(); ++l) {
    const LayerView& layer = layers_[l];
    const bool output = l + 1 == layers_.size();
    const double fan_in = static_cast<double>(layer.inputs);
    const double fan_out = static_cast<double>(layer.outputs);
    const bool he = !output && options_.activation != Activation::kTanh;
    const double stddev = he ? std::sqrt(2.0 / fan_in) : std::sqrt(2.0 / (fan_in + fan_out));
    float* w = params_.data() + layer.weightOffset();
    for (size_t i = 0; i < layer.outputs * layer.inputs; ++i) {
      w[i] = static_cast<float>(rng.normal() * stddev);
    }
    std::fill_n(params_.data() + layer.biasOffset(), layer.outputs, 0.0f);
  }
  zeroGrads();
}

void Mlp::zeroGrads() { std::fill(grads_.begin(), grads_.end(), 0.0f); }

void Mlp::reserveBatch(size_t batch) {
  size_t widest = options_.inputs;
  for (const LayerView& layer : layers_) widest = std::max(widest, layer.outputs);
  // The deltas are scratch of this Mlp, the activations may be a swapped-in micro-batch's
  // (swapActivations): each is grown on its own.
  if (delta_.size() < batch * widest) {
    delta_.resize(batch * widest);
    delta_prev_.resize(batch * widest);
  }
  if (batch <= state_.capacity) return;
  state_.pre.resize(layers_.size());
  state_.act.resize(layers_.size());
  for (size_t l = 0; l < layers_.size(); ++l) {
    const size_t n = batch * layers_[l].outputs;
    state_.act[l].resize(n);
    // Pre-activations are only read back for GELU layers; the output layer keeps probabilities.
    const bool output = l + 1 == layers_.size();
    if (output || options_.activation == Activation::kGelu) state_.pre[l].resize(n);
  }
  state_.capacity = batch;
}

void Mlp::swapActivations(MlpActivations& other) { std::swap(state_, other); }

float Mlp::forward(const Batch& batch) {
  RM_TRAIN_CHECK(batch.size > 0, "empty batch");
  const size_t rows = batch.size;
  reserveBatch(rows);
  state_.batch = rows;
  const float* in = batch.features;
  const size_t last = layers_.size() - 1;
  for (size_t l = 0; l <= last; ++l) {
    const LayerView& layer = layers_[l];
    const float* w = params_.data() + layer.weightOffset();
    const float* b = params_.data() + layer.biasOffset();
    float* out = state_.act[l].data();
    // out (rows x outputs) = in (rows x inputs) * W^T; W is outputs x inputs.
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows),
                static_cast<int>(layer.outputs), static_cast<int>(layer.inputs), 1.0f, in,
                static_cast<int>(layer.inputs), w, static_cast<int>(layer.inputs), 0.0f, out,
                static_cast<int>(layer.outputs));
    if (l < last || options_.hidden_output) {
      biasActivation(options_.activation, out, state_.pre[l].data(), b, rows, layer.outputs);
    } else {
      for (size_t i = 0; i < rows; ++i) {
        float* row = out + i * layer.outputs;
        for (size_t j = 0; j < layer.outputs; ++j) row[j] += b[j];
      }
    }
    in = out;
  }

  if (options_.hidden_output) return 0.0f;  // a pipeline stage before the last: no loss here

  // The loss, and for classification the softmax probabilities that backward() needs.
  const LayerView& head = layers_[last];
  const float* outputs = state_.act[last].data();
  double loss_sum = 0.0;
  if (options_.task == Task::kClassification) {
    const size_t classes = head.outputs;
    float* probs = state_.pre[last].data();
    for (size_t i = 0; i < rows; ++i) {
      const float* logits = outputs + i * classes;
      float* p = probs + i * classes;
      const float label_value = batch.targets[i];
      const auto label = static_cast<size_t>(label_value);
      RM_TRAIN_CHECK(
          label_value >= 0.0f && label < classes && static_cast<float>(label) == label_value,
          "classification target is not a class index");
      float max_logit = logits[0];
      for (size_t j = 1; j < classes; ++j) max_logit = std::max(max_logit, logits[j]);
      float sum = 0.0f;
      for (size_t j = 0; j < classes; ++j) {
        p[j] = std::exp(logits[j] - max_logit);
        sum += p[j];
      }
      const float inv = 1.0f / sum;
      for (size_t j = 0; j < classes; ++j) p[j] *= inv;
      loss_sum += std::log(static_cast<double>(sum)) - (logits[label] - max_logit);
    }
  } else {
    for (size_t i = 0; i < rows; ++i) {
      const double diff = static_cast<double>(outputs[i]) - batch.targets[i];
      loss_sum += diff * diff;
    }
  }
  return static_cast<float>(loss_sum / static_cast<double>(rows));
}

void Mlp::backward(const Batch& batch, const LayerGradReadyFn& on_layer_grad_ready,
                   const BackwardOptions& options) {
  RM_TRAIN_CHECK(batch.size == state_.batch && batch.size > 0,
                 "backward() needs the batch of the last forward()");
  const size_t rows = batch.size;
  const size_t last = layers_.size() - 1;
  const float scale = options.loss_scale / static_cast<float>(rows);

  // dL/dz of the output layer.
  float* delta = delta_.data();
  float* delta_prev = delta_prev_.data();
  const size_t outputs = layers_[last].outputs;
  RM_TRAIN_CHECK(options.output_grad != nullptr || !options_.hidden_output,
                 "a pipeline stage before the last needs the output gradient");
  if (options.output_grad != nullptr) {
    // dL/da of the outputs from the next stage; times act'(z) when the last layer is hidden.
    for (size_t i = 0; i < rows * outputs; ++i) {
      delta[i] = options.output_grad[i] * options.loss_scale;
    }
    if (options_.hidden_output) {
      const float* pre_last =
          options_.activation == Activation::kGelu ? state_.pre[last].data() : nullptr;
      multiplyActivationDerivative(options_.activation, delta, state_.act[last].data(), pre_last,
                                   rows * outputs);
    }
  } else if (options_.task == Task::kClassification) {
    const float* probs = state_.pre[last].data();
    for (size_t i = 0; i < rows; ++i) {
      const auto label = static_cast<size_t>(batch.targets[i]);
      for (size_t j = 0; j < outputs; ++j) {
        delta[i * outputs + j] = probs[i * outputs + j] * scale;
      }
      delta[i * outputs + label] -= scale;
    }
  } else {
    const float* predictions = state_.act[last].data();
    for (size_t i = 0; i < rows; ++i) delta[i] = 2.0f * (predictions[i] - batch.targets[i]) * scale;
  }

  for (size_t l = last + 1; l-- > 0;) {
    const LayerView& layer = layers_[l];
    const float* below = l == 0 ? batch.features : state_.act[l - 1].data();
    float* gw = grads_.data() + layer.weightOffset();
    float* gb = grads_.data() + layer.biasOffset();
    // dW (outputs x inputs) (+)= delta^T (outputs x rows) * below (rows x inputs).
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(layer.outputs),
                static_cast<int>(layer.inputs), static_cast<int>(rows), 1.0f, delta,
                static_cast<int>(layer.outputs), below, static_cast<int>(layer.inputs),
                options.accumulate ? 1.0f : 0.0f, gw, static_cast<int>(layer.inputs));
    if (!options.accumulate) std::fill_n(gb, layer.outputs, 0.0f);
    for (size_t i = 0; i < rows; ++i) {
      const float* row = delta + i * layer.outputs;
      for (size_t j = 0; j < layer.outputs; ++j) gb[j] += row[j];
    }
    if (on_layer_grad_ready) on_layer_grad_ready(l, grads_.data() + layer.offset, layer.size);
    if (l == 0 && options.input_grad == nullptr) break;

    // delta_prev (rows x inputs) = delta (rows x outputs) * W (outputs x inputs), then * act'.
    // Below layer 0 that is dL/d(features), the previous pipeline stage's output gradient.
    const float* w = params_.data() + layer.weightOffset();
    float* below_grad = l == 0 ? options.input_grad : delta_prev;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(rows),
                static_cast<int>(layer.inputs), static_cast<int>(layer.outputs), 1.0f, delta,
                static_cast<int>(layer.outputs), w, static_cast<int>(layer.inputs), 0.0f,
                below_grad, static_cast<int>(layer.inputs));
    if (l == 0) break;
    const float* pre_below =
        options_.activation == Activation::kGelu ? state_.pre[l - 1].data() : nullptr;
    multiplyActivationDerivative(options_.activation, delta_prev, state_.act[l - 1].data(),
                                 pre_below, rows * layer.inputs);
    std::swap(delta, delta_prev);
  }
}

std::span<const float> Mlp::lastOutputs() const {
  return {state_.act.back().data(), state_.batch * layers_.back().outputs};
}

EvalTotals Mlp::evaluate(const float* features, const float* targets, size_t n, size_t chunk) {
  EvalTotals totals;
  chunk = std::max<size_t>(chunk, 1);
  const size_t inputs = options_.inputs;
  const size_t outputs = numOutputs();
  for (size_t start = 0; start < n; start += chunk) {
    const size_t rows = std::min(chunk, n - start);
    Batch batch{features + start * inputs, targets + start, rows};
    totals.loss_sum += static_cast<double>(forward(batch)) * static_cast<double>(rows);
    totals.samples += rows;
    if (options_.task != Task::kClassification) continue;
    const float* logits = state_.act.back().data();
    for (size_t i = 0; i < rows; ++i) {
      const float* row = logits + i * outputs;
      const size_t best = static_cast<size_t>(std::max_element(row, row + outputs) - row);
      if (static_cast<float>(best) == batch.targets[i]) ++totals.correct;
    }
  }
  return totals;
}

void setBlasThreads(int n) {
#if RM_HAVE_OPENBLAS
  if (n > 0) openblas_set_num_threads(n);
#else
  (void)n;
#endif
}

int blasThreads() {
#if RM_HAVE_OPENBLAS
  return openblas_get_num_threads();
#else
  return 1;
#endif
}

std::string blasCoreName() {
#if RM_HAVE_OPENBLAS
  const char* name = openblas_get_corename();
  return name != nullptr ? name : "";
#else
  return "";
#endif
}

}  // namespace ringmaster::train
