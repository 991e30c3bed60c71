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

// The constants of one update step, in float as the element-wise arithmetic uses them.
struct UpdateConstants {
  float lr = 0, wd = 0, mu = 0, b1 = 0, b2 = 0, eps = 0, step_size = 0, inv_sqrt_bc2 = 0, decay = 0;
};

// Runs `update(i)` for every i < n, and returns the sum of the squares of g, in blocks of
// kLanes independent float sums (each lane adds its elements in the same order whatever the
// vector width, so every CPU gets the same norm), summed in double per kBlock. The squares ride
// on the update's pass: a pass of its own over 5 MB cost 40% of the update. The lanes are what
// the vectorizer turns into registers (-O3, core/src/train/CMakeLists.txt).
template <typename Update>
[[gnu::always_inline]] inline double updateInLanes(const float* g, size_t n, Update update) {
  constexpr size_t kLanes = 16;
  constexpr size_t kBlock = 4096;
  double squares = 0.0;
  for (size_t begin = 0; begin < n; begin += kBlock) {
    const size_t end = std::min(n, begin + kBlock);
    float lanes[kLanes] = {};
    size_t i = begin;
    for (; i + kLanes <= end; i += kLanes) {
      for (size_t k = 0; k < kLanes; ++k) {
        update(i + k);
        lanes[k] += g[i + k] * g[i + k];
      }
    }
    for (; i < end; ++i) {
      update(i);
      lanes[0] += g[i] * g[i];
    }
    for (float lane : lanes) squares += lane;
  }
  return squares;
}

// Each update is compiled twice on x86-64 and picked when the program loads: for AVX2 (twice
// the SSE2 baseline's width; about 1.5 -> 1.0 ms for 1.3 M SGD-momentum parameters and their
// norm, out of the L3 cache) and for the baseline. No FMA: a fused multiply-add rounds once where
// the baseline rounds twice, and ranks on different CPUs must compute the same parameters bit for
// bit.
#if defined(__x86_64__) && defined(__GNUC__)
#define RM_UPDATE_CLONES [[gnu::target_clones("avx2", "default")]]
#else
#define RM_UPDATE_CLONES
#endif

RM_UPDATE_CLONES double sgdUpdate(const UpdateConstants c, float* p, const float* g, size_t n) {
  return updateInLanes(g, n, [&](size_t i) { p[i] -= c.lr * (g[i] + c.wd * p[i]); });
}

RM_UPDATE_CLONES double momentumUpdate(const UpdateConstants c, float* p, const float* g, float* m,
                                       size_t n) {
  return updateInLanes(g, n, [&](size_t i) {
    m[i] = c.mu * m[i] + (g[i] + c.wd * p[i]);
    p[i] -= c.lr * m[i];
  });
}

// torch.optim.SGD with dampening 0: buf = mu * buf + g (buf starts at 0, which equals torch's
// buf = g on the first step); nesterov steps along g + mu * buf.
RM_UPDATE_CLONES double nesterovUpdate(const UpdateConstants c, float* p, const float* g, float* m,
                                       size_t n) {
  return updateInLanes(g, n, [&](size_t i) {
    const float d = g[i] + c.wd * p[i];
    m[i] = c.mu * m[i] + d;
    p[i] -= c.lr * (d + c.mu * m[i]);
  });
}

RM_UPDATE_CLONES double adamUpdate(const UpdateConstants c, float* p, const float* g, float* m,
                                   float* v, size_t n) {
  return updateInLanes(g, n, [&](size_t i) {
    m[i] = c.b1 * m[i] + (1.0f - c.b1) * g[i];
    v[i] = c.b2 * v[i] + (1.0f - c.b2) * g[i] * g[i];
    p[i] = p[i] * c.decay - c.step_size * m[i] / (std::sqrt(v[i]) * c.inv_sqrt_bc2 + c.eps);
  });
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
  UpdateConstants c;
  c.lr = static_cast<float>(lr_double);
  c.wd = static_cast<float>(options_.weight_decay);
  c.mu = static_cast<float>(options_.momentum);
  c.b1 = static_cast<float>(options_.beta1);
  c.b2 = static_cast<float>(options_.beta2);
  c.eps = static_cast<float>(options_.epsilon);
  // Adam's bias corrections folded into the step size and epsilon, as torch.optim.Adam does:
  // p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps).
  const double t = static_cast<double>(step_ + 1);
  const double bc1 = 1.0 - std::pow(options_.beta1, t);
  const double bc2 = 1.0 - std::pow(options_.beta2, t);
  c.step_size = static_cast<float>(lr_double / bc1);
  c.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  c.decay = 1.0f - c.lr * c.wd;

  float* p = params.data();
  const float* g = grads.data();
  float* m = first_.data();
  const size_t n = params.size();
  double squares = 0.0;
  if (options_.kind == OptimizerKind::kAdam) {
    squares = adamUpdate(c, p, g, m, second_.data(), n);
  } else if (c.mu == 0.0f) {
    squares = sgdUpdate(c, p, g, n);
  } else if (options_.nesterov) {
    squares = nesterovUpdate(c, p, g, m, n);
  } else {
    squares = momentumUpdate(c, p, g, m, n);
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
