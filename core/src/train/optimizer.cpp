#include "ringmaster/train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "train/byte_io.h"

namespace ringmaster::train {
namespace {

constexpr uint32_t kStateMagic = 0x4f4d5452;  // "RTMO"
constexpr uint32_t kStateVersion = 1;
constexpr double kPi = 3.14159265358979323846;

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

}  // namespace

double learningRateAt(const OptimizerOptions& options, uint64_t step) {
  const uint64_t warmup = options.warmup_steps;
  if (step < warmup) {
    return options.lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
  }
  if (options.schedule == LrSchedule::kConstant) return options.lr;
  if (options.total_steps <= warmup) return options.lr;
  const double t = std::clamp(
      static_cast<double>(step - warmup) / static_cast<double>(options.total_steps - warmup), 0.0,
      1.0);
  return options.lr * 0.5 * (1.0 + std::cos(kPi * t));
}

double sumOfSquares(std::span<const float> values) {
  // Independent partial sums so the loop is not one long chain of dependent additions.
  constexpr size_t kLanes = 8;
  double lanes[kLanes] = {};
  const size_t n = values.size();
  const float* v = values.data();
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t k = 0; k < kLanes; ++k) lanes[k] += static_cast<double>(v[i + k]) * v[i + k];
  }
  for (; i < n; ++i) lanes[0] += static_cast<double>(v[i]) * v[i];
  double sum = 0.0;
  for (double lane : lanes) sum += lane;
  return sum;
}

double globalNorm(std::span<const float> values) { return std::sqrt(sumOfSquares(values)); }

double clipGradNorm(std::span<float> grads, double max_norm) {
  const double norm = globalNorm(grads);
  if (max_norm > 0.0 && norm > max_norm) {
    const auto factor = static_cast<float>(max_norm / (norm + 1e-6));
    for (float& g : grads) g *= factor;
  }
  return norm;
}

Result<Optimizer> Optimizer::create(const OptimizerOptions& o, size_t num_params) {
  if (!(o.lr > 0.0) || !std::isfinite(o.lr)) {
    return invalidArgument("optimizer.lr: expected a positive number, got " + number(o.lr));
  }
  if (!(o.weight_decay >= 0.0) || !std::isfinite(o.weight_decay)) {
    return invalidArgument("optimizer.weight_decay: expected a number >= 0, got " +
                           number(o.weight_decay));
  }
  if (o.kind == OptimizerKind::kSgd) {
    if (!(o.momentum >= 0.0 && o.momentum < 1.0)) {
      return invalidArgument("optimizer.momentum: expected a number in [0, 1), got " +
                             number(o.momentum));
    }
    if (o.nesterov && o.momentum == 0.0) {
      return invalidArgument("optimizer.nesterov: needs momentum > 0");
    }
  } else {
    if (!(o.beta1 >= 0.0 && o.beta1 < 1.0)) {
      return invalidArgument("optimizer.beta1: expected a number in [0, 1), got " +
                             number(o.beta1));
    }
    if (!(o.beta2 >= 0.0 && o.beta2 < 1.0)) {
      return invalidArgument("optimizer.beta2: expected a number in [0, 1), got " +
                             number(o.beta2));
    }
    if (!(o.epsilon > 0.0)) {
      return invalidArgument("optimizer.eps: expected a positive number, got " + number(o.epsilon));
    }
  }
  return Optimizer(o, num_params);
}

Optimizer::Optimizer(const OptimizerOptions& options, size_t num_params)
    : options_(options), first_(num_params, 0.0f) {
  if (options.kind == OptimizerKind::kAdam) second_.assign(num_params, 0.0f);
}

double Optimizer::apply(std::span<float> params, std::span<const float> grads,
                        double* grad_squares) {
  if (params.size() != first_.size() || grads.size() != first_.size()) {
    std::fprintf(stderr, "%s:%d: optimizer built for %zu parameters, given %zu and %zu\n", __FILE__,
                 __LINE__, first_.size(), params.size(), grads.size());
    std::abort();
  }
  const double lr_double = learningRateAt(options_, step_);
  const auto lr = static_cast<float>(lr_double);
  const auto wd = static_cast<float>(options_.weight_decay);
  const auto mu = static_cast<float>(options_.momentum);
  const double t = static_cast<double>(step_ + 1);
  const auto b1 = static_cast<float>(options_.beta1);
  const auto b2 = static_cast<float>(options_.beta2);
  const auto eps = static_cast<float>(options_.epsilon);
  // Adam's bias corrections folded into the step size and epsilon, as torch.optim.Adam does:
  // p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps).
  const double bc1 = 1.0 - std::pow(options_.beta1, t);
  const double bc2 = 1.0 - std::pow(options_.beta2, t);
  const auto step_size = static_cast<float>(lr_double / bc1);
  const auto inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  const float decay = 1.0f - lr * wd;

  // One block of the update; the loops are the vectorized part (-O3, core/src/train/CMakeLists).
  const auto update = [&](float* p, const float* g, float* m, float* v, size_t n) {
    if (options_.kind == OptimizerKind::kAdam) {
      for (size_t i = 0; i < n; ++i) {
        m[i] = b1 * m[i] + (1.0f - b1) * g[i];
        v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
        p[i] = p[i] * decay - step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_bc2 + eps);
      }
    } else if (mu == 0.0f) {
      for (size_t i = 0; i < n; ++i) p[i] -= lr * (g[i] + wd * p[i]);
    } else if (options_.nesterov) {
      // torch.optim.SGD with dampening 0: buf = mu * buf + g (buf starts at 0, which equals
      // torch's buf = g on the first step); nesterov steps along g + mu * buf.
      for (size_t i = 0; i < n; ++i) {
        const float d = g[i] + wd * p[i];
        m[i] = mu * m[i] + d;
        p[i] -= lr * (d + mu * m[i]);
      }
    } else {
      for (size_t i = 0; i < n; ++i) {
        m[i] = mu * m[i] + (g[i] + wd * p[i]);
        p[i] -= lr * m[i];
      }
    }
  };
  // In blocks that stay in the L1 cache, so that the sum of squares (the gradient's norm, when
  // asked for) reads each block again from there instead of the whole gradient from memory.
  constexpr size_t kBlock = 4096;
  const size_t n = params.size();
  double squares = 0.0;
  for (size_t begin = 0; begin < n; begin += kBlock) {
    const size_t count = std::min(kBlock, n - begin);
    float* v = second_.empty() ? nullptr : second_.data() + begin;
    update(params.data() + begin, grads.data() + begin, first_.data() + begin, v, count);
    if (grad_squares) squares += sumOfSquares(grads.subspan(begin, count));
  }
  if (grad_squares) *grad_squares = squares;
  ++step_;
  return lr_double;
}

std::string Optimizer::serializeState() const {
  std::string out;
  ByteWriter w(&out);
  w.put<uint32_t>(kStateMagic);
  w.put<uint32_t>(kStateVersion);
  w.put<uint32_t>(static_cast<uint32_t>(options_.kind));
  w.put<uint64_t>(step_);
  w.put<uint64_t>(first_.size());
  w.put<uint64_t>(second_.size());
  w.putBytes(first_.data(), first_.size() * sizeof(float));
  w.putBytes(second_.data(), second_.size() * sizeof(float));
  return out;
}

Status Optimizer::restoreState(std::string_view bytes) {
  ByteReader r(bytes);
  const auto magic = r.get<uint32_t>();
  const auto version = r.get<uint32_t>();
  if (!r.ok() || magic != kStateMagic)
    return invalidArgument("optimizer state: not an optimizer state");
  if (version != kStateVersion) {
    return {ErrorCode::kUnsupportedVersion, "optimizer state: version " + std::to_string(version) +
                                                ", expected " + std::to_string(kStateVersion)};
  }
  const auto kind = r.get<uint32_t>();
  const auto step = r.get<uint64_t>();
  const auto first = r.get<uint64_t>();
  const auto second = r.get<uint64_t>();
  if (!r.ok()) return invalidArgument("optimizer state: truncated header");
  if (kind != static_cast<uint32_t>(options_.kind)) {
    return invalidArgument(std::string("optimizer state: saved by ") +
                           (kind == 0   ? "sgd"
                            : kind == 1 ? "adam"
                                        : "an unknown optimizer") +
                           ", this optimizer is " + optimizerKindName(options_.kind));
  }
  if (first != first_.size() || second != second_.size()) {
    return invalidArgument("optimizer state: holds " + std::to_string(first) +
                           " parameters, this model has " + std::to_string(first_.size()));
  }
  if (r.remaining() != (first + second) * sizeof(float)) {
    return invalidArgument("optimizer state: expected " +
                           std::to_string((first + second) * sizeof(float)) +
                           " bytes of moments, got " + std::to_string(r.remaining()));
  }
  r.getBytes(first_.data(), first * sizeof(float));
  r.getBytes(second_.data(), second * sizeof(float));
  step_ = step;
  return Status::ok();
}

}  // namespace ringmaster::train
