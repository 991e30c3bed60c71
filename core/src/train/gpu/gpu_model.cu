// The native trainer's GPU math (see gpu_model.h): cuBLAS for the three GEMMs of each layer and
// small element-wise / per-row kernels for everything else. Built only when the CUDA toolkit and
// compiler are found; gpu_model_stub.cpp stands in otherwise.
//
// Row-major data and column-major cuBLAS: a row-major R x C matrix is, byte for byte, the
// column-major C x R matrix (its transpose), so every row-major product below is computed as the
// product of the transposes in the opposite order. Each call spells out which.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "ringmaster/train/gpu_model.h"

namespace ringmaster::train {
namespace {

// ---------------------------------------------------------------------------------------------
// Errors

std::string cudaMessage(const char* call, cudaError_t error) {
  return std::string(call) + ": " + cudaGetErrorString(error);
}

Status cudaStatus(const char* call, cudaError_t error) {
  if (error == cudaSuccess) return Status::ok();
  return internalError("gpu: " + cudaMessage(call, error));
}

Status cublasStatus(const char* call, cublasStatus_t status) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::ok();
  return internalError(std::string("gpu: ") + call + ": " + cublasGetStatusString(status));
}

// After a kernel launch: a bad configuration shows up here, a fault at the next synchronisation.
Status launched(const char* kernel) { return cudaStatus(kernel, cudaGetLastError()); }

#define RM_CUDA_RETURN_IF_ERROR(call) RM_RETURN_IF_ERROR(cudaStatus(#call, (call)))
#define RM_CUBLAS_RETURN_IF_ERROR(call) RM_RETURN_IF_ERROR(cublasStatus(#call, (call)))

// ---------------------------------------------------------------------------------------------
// Device memory

// `count` elements of T in device memory, freed on destruction; move-only.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }
  ~DeviceBuffer() {
    if (data_ != nullptr) cudaFree(data_);
  }

  // Replaces the buffer with `count` elements (at least one, so data() is never null), zeroed
  // in the order of `stream`. (Not with cudaMemset: the legacy default stream it runs on does not
  // order the non-blocking streams used here.)
  Status allocate(size_t count, cudaStream_t stream) {
    DeviceBuffer fresh;
    const size_t bytes = std::max<size_t>(count, 1) * sizeof(T);
    RM_CUDA_RETURN_IF_ERROR(cudaMalloc(reinterpret_cast<void**>(&fresh.data_), bytes));
    fresh.count_ = count;
    RM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(fresh.data_, 0, bytes, stream));
    *this = std::move(fresh);
    return Status::ok();
  }

  T* data() const { return data_; }
  size_t size() const { return count_; }

 private:
  T* data_ = nullptr;
  size_t count_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Kernels. Element-wise ones use grid-stride loops over at most kMaxBlocks blocks.

constexpr int kThreads = 256;
constexpr size_t kMaxBlocks = 4096;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

int blocksFor(size_t n) {
  return static_cast<int>(std::clamp<size_t>((n + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

#define RM_GRID_STRIDE_LOOP(i, n)                                                      \
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<size_t>(gridDim.x) * blockDim.x)

// a = act(a + bias) row by row (identity for the output layer); GELU keeps z in `pre`.
__global__ void biasActivationKernel(Activation activation, bool output, float* a, float* pre,
                                     const float* bias, size_t rows, size_t cols) {
  RM_GRID_STRIDE_LOOP(i, rows * cols) {
    const float z = a[i] + bias[i % cols];
    if (output) {
      a[i] = z;
    } else if (activation == Activation::kRelu) {
      a[i] = fmaxf(z, 0.0f);
    } else if (activation == Activation::kTanh) {
      a[i] = tanhf(z);
    } else {
      pre[i] = z;
      a[i] = z * normcdff(z);
    }
  }
}

// delta *= act'(z), from what the forward pass kept (a, or z for GELU).
__global__ void activationBackwardKernel(Activation activation, float* delta, const float* a,
                                         const float* pre, size_t n) {
  RM_GRID_STRIDE_LOOP(i, n) {
    if (activation == Activation::kRelu) {
      delta[i] = a[i] > 0.0f ? delta[i] : 0.0f;
    } else if (activation == Activation::kTanh) {
      delta[i] *= 1.0f - a[i] * a[i];
    } else {
      const float z = pre[i];
      delta[i] *= normcdff(z) + z * kInvSqrt2Pi * expf(-0.5f * z * z);
    }
  }
}

// One thread per sample: softmax probabilities, the sample's cross-entropy and whether the
// argmax (the first maximum, as std::max_element) is the label. A target that is not a class
// index sets *bad_target and counts as loss 0.
__global__ void softmaxCrossEntropyKernel(const float* logits, const float* targets, float* probs,
                                          double* row_loss, int* row_correct, int* bad_target,
                                          size_t rows, size_t classes) {
  RM_GRID_STRIDE_LOOP(i, rows) {
    const float* row = logits + i * classes;
    float* p = probs + i * classes;
    const float label_value = targets[i];
    if (!(label_value >= 0.0f && label_value < static_cast<float>(classes)) ||
        floorf(label_value) != label_value) {
      *bad_target = 1;
      row_loss[i] = 0.0;
      row_correct[i] = 0;
      continue;
    }
    const auto label = static_cast<size_t>(label_value);
    float max_logit = row[0];
    size_t best = 0;
    for (size_t j = 1; j < classes; ++j) {
      if (row[j] > max_logit) {
        max_logit = row[j];
        best = j;
      }
    }
    float sum = 0.0f;
    for (size_t j = 0; j < classes; ++j) {
      p[j] = expf(row[j] - max_logit);
      sum += p[j];
    }
    const float inv = 1.0f / sum;
    for (size_t j = 0; j < classes; ++j) p[j] *= inv;
    row_loss[i] = log(static_cast<double>(sum)) - (row[label] - max_logit);
    row_correct[i] = best == label ? 1 : 0;
  }
}

__global__ void squaredErrorKernel(const float* predictions, const float* targets, double* row_loss,
                                   int* row_correct, size_t rows) {
  RM_GRID_STRIDE_LOOP(i, rows) {
    const double diff = static_cast<double>(predictions[i]) - targets[i];
    row_loss[i] = diff * diff;
    row_correct[i] = 0;
  }
}

// Sums within one block of kThreads threads; the result is valid in thread 0. A fixed order, so
// the sum is the same on every run.
template <typename T>
__device__ T blockSum(T value) {
  __shared__ T partial[kThreads];
  __syncthreads();  // a previous call's readers of partial[0] are done
  partial[threadIdx.x] = value;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride)
      partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  return partial[0];
}

// One block: the batch's loss sum and correct count into *loss_sum and *correct, and, when
// mean_total is given, the batch's mean loss added to it (or started afresh when !add).
__global__ void lossTotalsKernel(const double* row_loss, const int* row_correct, size_t rows,
                                 double* loss_sum, unsigned long long* correct, double* mean_total,
                                 bool add) {
  double loss = 0.0;
  unsigned long long hits = 0;
  for (size_t i = threadIdx.x; i < rows; i += kThreads) {
    loss += row_loss[i];
    hits += static_cast<unsigned long long>(row_correct[i]);
  }
  loss = blockSum(loss);
  hits = blockSum(hits);
  if (threadIdx.x == 0) {
    *loss_sum = loss;
    *correct = hits;
    if (mean_total != nullptr) {
      *mean_total = (add ? *mean_total : 0.0) + loss / static_cast<double>(rows);
    }
  }
}

// Batch row i is data row rows[i]: its features and target.
__global__ void gatherRowsKernel(const float* data_x, const float* data_y, const uint32_t* rows,
                                 float* x, float* y, size_t n, size_t features) {
  RM_GRID_STRIDE_LOOP(i, n * features) {
    const size_t row = i / features;
    const size_t col = i % features;
    const size_t from = rows[row];
    x[i] = data_x[from * features + col];
    if (col == 0) y[row] = data_y[from];
  }
}

// dL/dz of the output layer for softmax cross-entropy: (p - onehot(label)) * scale.
__global__ void crossEntropyDeltaKernel(const float* probs, const float* targets, float* delta,
                                        size_t rows, size_t classes, float scale) {
  RM_GRID_STRIDE_LOOP(i, rows * classes) {
    const size_t row = i / classes;
    const auto label = static_cast<size_t>(targets[row]);
    const float d = probs[i] * scale;
    delta[i] = i % classes == label ? d - scale : d;
  }
}

__global__ void squaredErrorDeltaKernel(const float* predictions, const float* targets,
                                        float* delta, size_t rows, float scale) {
  RM_GRID_STRIDE_LOOP(i, rows) { delta[i] = 2.0f * (predictions[i] - targets[i]) * scale; }
}

// gb[j] (+)= sum over rows of delta[i][j], in two passes: a thread per column and chunk of
// kBiasChunkRows rows sums its chunk into partial[chunk][j], then a thread per column sums the
// chunks. (One pass of a thread per column kept 16 blocks busy for a 4096-wide layer, walking
// 1024 rows one dependent load at a time.) A fixed order, so the same sum on every run.
constexpr size_t kBiasChunkRows = 32;

size_t biasChunks(size_t rows) { return (rows + kBiasChunkRows - 1) / kBiasChunkRows; }

__global__ void biasGradPartialKernel(const float* delta, float* partial, size_t rows,
                                      size_t cols) {
  const size_t chunk = blockIdx.y;
  const size_t begin = chunk * kBiasChunkRows;
  const size_t end = rows < begin + kBiasChunkRows ? rows : begin + kBiasChunkRows;
  for (size_t j = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; j < cols;
       j += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (size_t i = begin; i < end; ++i) sum += delta[i * cols + j];
    partial[chunk * cols + j] = sum;
  }
}

__global__ void biasGradSumKernel(const float* partial, float* gb, size_t chunks, size_t cols,
                                  bool accumulate) {
  RM_GRID_STRIDE_LOOP(j, cols) {
    float sum = accumulate ? gb[j] : 0.0f;
    for (size_t c = 0; c < chunks; ++c) sum += partial[c * cols + j];
    gb[j] = sum;
  }
}

// Per block: the sum of squares of its grid-stride share of `values`, in double.
__global__ void sumSquaresKernel(const float* values, size_t n, double* partials) {
  double sum = 0.0;
  RM_GRID_STRIDE_LOOP(i, n) { sum += static_cast<double>(values[i]) * values[i]; }
  sum = blockSum(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

__global__ void sumKernel(const double* values, size_t n, double* out) {
  double sum = 0.0;
  for (size_t i = threadIdx.x; i < n; i += kThreads) sum += values[i];
  sum = blockSum(sum);
  if (threadIdx.x == 0) *out = sum;
}

// clipGradNorm() (optimizer.cpp) on the device: values *= max_norm / (norm + 1e-6) when the norm
// (the root of *sum_squares) exceeds max_norm.
__global__ void clipKernel(float* values, size_t n, const double* sum_squares, double max_norm) {
  const double norm = sqrt(*sum_squares);
  if (!(norm > max_norm)) return;
  const auto factor = static_cast<float>(max_norm / (norm + 1e-6));
  RM_GRID_STRIDE_LOOP(i, n) { values[i] *= factor; }
}

// The update formulas of Optimizer::apply() (optimizer.cpp), one parameter per thread.
__global__ void sgdKernel(float* p, const float* g, size_t n, float lr, float wd) {
  RM_GRID_STRIDE_LOOP(i, n) { p[i] -= lr * (g[i] + wd * p[i]); }
}

__global__ void sgdMomentumKernel(float* p, const float* g, float* m, size_t n, float lr, float wd,
                                  float mu, bool nesterov) {
  RM_GRID_STRIDE_LOOP(i, n) {
    const float d = g[i] + wd * p[i];
    m[i] = mu * m[i] + d;
    p[i] -= lr * (nesterov ? d + mu * m[i] : m[i]);
  }
}

__global__ void adamWKernel(float* p, const float* g, float* m, float* v, size_t n, float b1,
                            float b2, float eps, float step_size, float inv_sqrt_bc2, float decay) {
  RM_GRID_STRIDE_LOOP(i, n) {
    m[i] = b1 * m[i] + (1.0f - b1) * g[i];
    v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
    p[i] = p[i] * decay - step_size * m[i] / (sqrtf(v[i]) * inv_sqrt_bc2 + eps);
  }
}

// ---------------------------------------------------------------------------------------------
// Device selection

Status useDevice(int device) { return cudaStatus("cudaSetDevice", cudaSetDevice(device)); }

// A non-blocking CUDA stream on one device, destroyed with it.
struct DeviceStream {
  int device = 0;
  cudaStream_t stream = nullptr;

  DeviceStream() = default;
  DeviceStream(const DeviceStream&) = delete;
  DeviceStream& operator=(const DeviceStream&) = delete;
  ~DeviceStream() {
    if (stream == nullptr) return;
    cudaSetDevice(device);
    cudaStreamDestroy(stream);
  }

  Status create(int on_device) {
    device = on_device;
    RM_RETURN_IF_ERROR(useDevice(device));
    return cudaStatus("cudaStreamCreateWithFlags",
                      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }

  Status synchronize() const {
    return cudaStatus("cudaStreamSynchronize", cudaStreamSynchronize(stream));
  }
};

// A cuBLAS handle that works on `stream`.
struct BlasHandle {
  cublasHandle_t handle = nullptr;

  BlasHandle() = default;
  BlasHandle(const BlasHandle&) = delete;
  BlasHandle& operator=(const BlasHandle&) = delete;
  ~BlasHandle() {
    if (handle != nullptr) cublasDestroy(handle);
  }

  Status create(const DeviceStream& stream) {
    RM_RETURN_IF_ERROR(useDevice(stream.device));
    RM_CUBLAS_RETURN_IF_ERROR(cublasCreate(&handle));
    RM_CUBLAS_RETURN_IF_ERROR(cublasSetStream(handle, stream.stream));
    // Full FP32: no TF32 tensor-core shortcuts, so results match the CPU path to float rounding.
    RM_CUBLAS_RETURN_IF_ERROR(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
    return Status::ok();
  }
};

Status checkDevice(int device) {
  RM_ASSIGN_OR_RETURN(const int count, gpuCount());
  if (device < 0 || device >= count) {
    return invalidArgument("gpu: device " + std::to_string(device) + " does not exist (" +
                           std::to_string(count) + " visible)");
  }
  return Status::ok();
}

// Pinned host memory for a batch's row indices: their copy to the device is queued, not waited
// for. `copied` marks when the device has read them, so the memory is reused only after that.
struct IndexStaging {
  uint32_t* host = nullptr;
  size_t capacity = 0;
  cudaEvent_t copied = nullptr;

  IndexStaging() = default;
  IndexStaging(const IndexStaging&) = delete;
  IndexStaging& operator=(const IndexStaging&) = delete;
  ~IndexStaging() {
    if (host != nullptr) cudaFreeHost(host);
    if (copied != nullptr) cudaEventDestroy(copied);
  }

  // Room for `count` indices, once the device is done with the previous ones.
  Status reserve(size_t count) {
    if (copied == nullptr) {
      RM_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
    }
    RM_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(copied));
    if (count <= capacity) return Status::ok();
    if (host != nullptr) cudaFreeHost(std::exchange(host, nullptr));
    capacity = 0;
    RM_CUDA_RETURN_IF_ERROR(cudaMallocHost(reinterpret_cast<void**>(&host), count * sizeof *host));
    capacity = count;
    return Status::ok();
  }
};

// ---------------------------------------------------------------------------------------------
// The model

class GpuMlpImpl final : public GpuMlp {
 public:
  GpuMlpImpl(const MlpOptions& options, std::vector<LayerView> layers, size_t num_params)
      : options_(options), layers_(std::move(layers)), num_params_(num_params) {}

  Status init(int device) {
    RM_RETURN_IF_ERROR(cuda_.create(device));
    RM_RETURN_IF_ERROR(blas_.create(cuda_));
    RM_RETURN_IF_ERROR(params_.allocate(num_params_, cuda_.stream));
    RM_RETURN_IF_ERROR(grads_.allocate(num_params_, cuda_.stream));
    RM_RETURN_IF_ERROR(loss_sum_.allocate(1, cuda_.stream));
    RM_RETURN_IF_ERROR(correct_.allocate(1, cuda_.stream));
    RM_RETURN_IF_ERROR(bad_target_.allocate(1, cuda_.stream));
    RM_RETURN_IF_ERROR(norm_partials_.allocate(blocksFor(num_params_), cuda_.stream));
    RM_RETURN_IF_ERROR(norm_.allocate(1, cuda_.stream));
    RM_RETURN_IF_ERROR(step_loss_.allocate(1, cuda_.stream));
    pre_.resize(layers_.size());
    act_.resize(layers_.size());
    return cuda_.synchronize();
  }

  const MlpOptions& options() const override { return options_; }
  const std::vector<LayerView>& layers() const override { return layers_; }
  size_t numParams() const override { return num_params_; }
  size_t numOutputs() const override { return layers_.back().outputs; }
  int device() const override { return cuda_.device; }
  cudaStream_t stream() const { return cuda_.stream; }
  std::span<float> deviceParams() override { return {params_.data(), num_params_}; }
  std::span<float> deviceGrads() override { return {grads_.data(), num_params_}; }

  Status copyParamsFrom(std::span<const float> host) override {
    RM_RETURN_IF_ERROR(checkSize("copyParamsFrom", host.size()));
    return copy(params_.data(), host.data(), host.size_bytes(), cudaMemcpyHostToDevice);
  }
  Status copyParamsTo(std::span<float> host) const override {
    RM_RETURN_IF_ERROR(checkSize("copyParamsTo", host.size()));
    return copy(host.data(), params_.data(), host.size_bytes(), cudaMemcpyDeviceToHost);
  }
  Status copyGradsTo(std::span<float> host) const override {
    RM_RETURN_IF_ERROR(checkSize("copyGradsTo", host.size()));
    return copy(host.data(), grads_.data(), host.size_bytes(), cudaMemcpyDeviceToHost);
  }
  Status zeroGrads() override {
    RM_RETURN_IF_ERROR(useDevice(cuda_.device));
    RM_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(grads_.data(), 0, num_params_ * sizeof(float), cuda_.stream));
    return Status::ok();
  }

  Result<float> forward(const Batch& batch) override;
  Status backward(const Batch& batch, const LayerGradReadyFn& on_layer_grad_ready,
                  const BackwardOptions& options) override;
  Result<EvalTotals> evaluate(const float* features, const float* targets, size_t n,
                              size_t chunk) override;
  Result<double> clipGradNorm(double max_norm) override;

  Status uploadData(const float* features, const float* targets, size_t n) override;
  Status forwardRows(std::span<const uint32_t> indices, bool add_to_total) override;
  Status queueClipGradNorm(double max_norm) override;
  Result<Totals> takeTotals() override;
  Status synchronize() override {
    RM_RETURN_IF_ERROR(useDevice(cuda_.device));
    return cuda_.synchronize();
  }

 private:
  Status checkSize(const char* what, size_t floats) const {
    if (floats == num_params_) return Status::ok();
    return invalidArgument(std::string("gpu: ") + what + ": given " + std::to_string(floats) +
                           " floats, the model has " + std::to_string(num_params_));
  }
  Status copy(void* to, const void* from, size_t bytes, cudaMemcpyKind kind) const {
    RM_RETURN_IF_ERROR(useDevice(cuda_.device));
    RM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(to, from, bytes, kind, cuda_.stream));
    return cuda_.synchronize();
  }
  Status reserveBatch(size_t rows);
  // out (rows x outputs) = in (rows x inputs) * W^T, W being outputs x inputs.
  Status linearForward(const LayerView& layer, const float* in, float* out, size_t rows);
  // Queues the layers and the loss of the batch in x_ / y_: its totals into loss_sum_ and
  // correct_, its mean loss into mean_total when given (see lossTotalsKernel).
  Status queueForward(size_t rows, double* mean_total, bool add);

  const MlpOptions options_;
  const std::vector<LayerView> layers_;
  const size_t num_params_;
  // Declared before the buffers, so destroyed after them: the stream outlives its work's memory.
  DeviceStream cuda_;
  BlasHandle blas_;
  DeviceBuffer<float> params_;
  DeviceBuffer<float> grads_;
  // Per layer, as in Mlp: pre-activations (GELU layers; probabilities for the output layer) and
  // activations (logits or predictions for the output layer).
  std::vector<DeviceBuffer<float>> pre_;
  std::vector<DeviceBuffer<float>> act_;
  DeviceBuffer<float> delta_;
  DeviceBuffer<float> delta_prev_;
  DeviceBuffer<float> x_;  // the batch, copied from the host or gathered from data_x_ / data_y_
  DeviceBuffer<float> y_;
  DeviceBuffer<float> bias_partials_;  // biasChunks(rows) x the widest layer
  // uploadData()'s rows, the indices of forwardRows()' batch, and the staging of those indices
  // (two, so that one step's copy is in flight while the next step's indices are written).
  DeviceBuffer<float> data_x_;
  DeviceBuffer<float> data_y_;
  size_t data_rows_ = 0;
  DeviceBuffer<uint32_t> rows_;
  IndexStaging staging_[2];
  size_t next_staging_ = 0;
  DeviceBuffer<double> step_loss_;  // forwardRows()' total of batch mean losses
  DeviceBuffer<double> row_loss_;
  DeviceBuffer<int> row_correct_;
  DeviceBuffer<double> loss_sum_;
  DeviceBuffer<unsigned long long> correct_;
  DeviceBuffer<int> bad_target_;
  DeviceBuffer<double> norm_partials_;
  DeviceBuffer<double> norm_;
  size_t capacity_ = 0;
  size_t last_batch_ = 0;
  size_t last_correct_ = 0;
};

Status GpuMlpImpl::reserveBatch(size_t rows) {
  if (rows <= capacity_) return Status::ok();
  capacity_ = 0;  // until every buffer has the new size
  size_t widest = options_.inputs;
  for (size_t l = 0; l < layers_.size(); ++l) {
    const size_t n = rows * layers_[l].outputs;
    RM_RETURN_IF_ERROR(act_[l].allocate(n, cuda_.stream));
    const bool output = l + 1 == layers_.size();
    if (output || options_.activation == Activation::kGelu) {
      RM_RETURN_IF_ERROR(pre_[l].allocate(n, cuda_.stream));
    }
    widest = std::max(widest, layers_[l].outputs);
  }
  RM_RETURN_IF_ERROR(delta_.allocate(rows * widest, cuda_.stream));
  RM_RETURN_IF_ERROR(delta_prev_.allocate(rows * widest, cuda_.stream));
  RM_RETURN_IF_ERROR(x_.allocate(rows * options_.inputs, cuda_.stream));
  RM_RETURN_IF_ERROR(y_.allocate(rows, cuda_.stream));
  RM_RETURN_IF_ERROR(row_loss_.allocate(rows, cuda_.stream));
  RM_RETURN_IF_ERROR(row_correct_.allocate(rows, cuda_.stream));
  RM_RETURN_IF_ERROR(bias_partials_.allocate(biasChunks(rows) * widest, cuda_.stream));
  RM_RETURN_IF_ERROR(rows_.allocate(rows, cuda_.stream));
  capacity_ = rows;
  return Status::ok();
}

Status GpuMlpImpl::linearForward(const LayerView& layer, const float* in, float* out, size_t rows) {
  const float one = 1.0f;
  const float zero = 0.0f;
  const float* w = params_.data() + layer.weightOffset();
  // Column-major: out^T (outputs x rows) = W * in^T. W's bytes are the column-major W^T
  // (inputs x outputs), hence op T; in's bytes are in^T (inputs x rows).
  RM_CUBLAS_RETURN_IF_ERROR(
      cublasSgemm(blas_.handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(layer.outputs),
                  static_cast<int>(rows), static_cast<int>(layer.inputs), &one, w,
                  static_cast<int>(layer.inputs), in, static_cast<int>(layer.inputs), &zero, out,
                  static_cast<int>(layer.outputs)));
  return Status::ok();
}

Result<float> GpuMlpImpl::forward(const Batch& batch) {
  if (batch.size == 0) return invalidArgument("gpu: forward() of an empty batch");
  const size_t rows = batch.size;
  last_batch_ = 0;  // until this forward() succeeds
  RM_RETURN_IF_ERROR(useDevice(cuda_.device));
  RM_RETURN_IF_ERROR(reserveBatch(rows));
  cudaStream_t stream = cuda_.stream;
  RM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(x_.data(), batch.features,
                                          rows * options_.inputs * sizeof(float),
                                          cudaMemcpyHostToDevice, stream));
  RM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(y_.data(), batch.targets, rows * sizeof(float),
                                          cudaMemcpyHostToDevice, stream));
  if (options_.task == Task::kClassification) {
    RM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(bad_target_.data(), 0, sizeof(int), stream));
  }
  RM_RETURN_IF_ERROR(queueForward(rows, nullptr, false));

  double loss_sum = 0.0;
  unsigned long long correct = 0;
  int bad_target = 0;
  RM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&loss_sum, loss_sum_.data(), sizeof loss_sum,
                                          cudaMemcpyDeviceToHost, stream));
  RM_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(&correct, correct_.data(), sizeof correct, cudaMemcpyDeviceToHost, stream));
  if (options_.task == Task::kClassification) {
    RM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&bad_target, bad_target_.data(), sizeof bad_target,
                                            cudaMemcpyDeviceToHost, stream));
  }
  RM_RETURN_IF_ERROR(cuda_.synchronize());
  if (bad_target != 0) {
    return invalidArgument("gpu: a classification target is not a class index in [0, " +
                           std::to_string(numOutputs()) + ")");
  }
  last_batch_ = rows;
  last_correct_ = static_cast<size_t>(correct);
  return static_cast<float>(loss_sum / static_cast<double>(rows));
}

Status GpuMlpImpl::uploadData(const float* features, const float* targets, size_t n) {
  if (n == 0) return invalidArgument("gpu: uploadData() of no rows");
  if (options_.task == Task::kClassification) {
    const auto classes = static_cast<float>(numOutputs());
    for (size_t i = 0; i < n; ++i) {
      const float t = targets[i];
      if (!(t >= 0.0f && t < classes) || std::floor(t) != t) {
        return invalidArgument("gpu: the target of row " + std::to_string(i) + " (" +
                               std::to_string(t) + ") is not a class index in [0, " +
                               std::to_string(numOutputs()) + ")");
      }
    }
  }
  RM_RETURN_IF_ERROR(useDevice(cuda_.device));
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  RM_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
  const size_t bytes = n * (options_.inputs + 1) * sizeof(float);
  if (bytes > free_bytes / 2) {
    return Status(ErrorCode::kResourceExhausted,
                  "gpu: the data (" + std::to_string(bytes >> 20) +
                      " MiB) would take more than half the device's free memory (" +
                      std::to_string(free_bytes >> 20) + " MiB)");
  }
  data_rows_ = 0;  // until both copies are done
  RM_RETURN_IF_ERROR(data_x_.allocate(n * options_.inputs, cuda_.stream));
  RM_RETURN_IF_ERROR(data_y_.allocate(n, cuda_.stream));
  RM_RETURN_IF_ERROR(
      copy(data_x_.data(), features, n * options_.inputs * sizeof(float), cudaMemcpyHostToDevice));
  RM_RETURN_IF_ERROR(copy(data_y_.data(), targets, n * sizeof(float), cudaMemcpyHostToDevice));
  data_rows_ = n;
  return Status::ok();
}

Status GpuMlpImpl::forwardRows(std::span<const uint32_t> indices, bool add_to_total) {
  if (data_rows_ == 0) return invalidArgument("gpu: forwardRows() before uploadData()");
  if (indices.empty()) return invalidArgument("gpu: forwardRows() of an empty batch");
  for (const uint32_t index : indices) {
    if (index >= data_rows_) {
      return invalidArgument("gpu: forwardRows(): row " + std::to_string(index) +
                             " is past the data's " + std::to_string(data_rows_) + " rows");
    }
  }
  const size_t rows = indices.size();
  last_batch_ = 0;  // until this forwardRows() succeeds
  RM_RETURN_IF_ERROR(useDevice(cuda_.device));
  RM_RETURN_IF_ERROR(reserveBatch(rows));
  cudaStream_t stream = cuda_.stream;
  IndexStaging& staging = staging_[next_staging_++ % std::size(staging_)];
  RM_RETURN_IF_ERROR(staging.reserve(rows));
  std::memcpy(staging.host, indices.data(), indices.size_bytes());
  RM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(rows_.data(), staging.host, indices.size_bytes(),
                                          cudaMemcpyHostToDevice, stream));
  RM_CUDA_RETURN_IF_ERROR(cudaEventRecord(staging.copied, stream));
  gatherRowsKernel<<<blocksFor(rows * options_.inputs), kThreads, 0, stream>>>(
      data_x_.data(), data_y_.data(), rows_.data(), x_.data(), y_.data(), rows, options_.inputs);
  RM_RETURN_IF_ERROR(launched("gatherRowsKernel"));
  RM_RETURN_IF_ERROR(queueForward(rows, step_loss_.data(), add_to_total));
  last_batch_ = rows;
  return Status::ok();
}

Status GpuMlpImpl::queueForward(size_t rows, double* mean_total, bool add) {
  cudaStream_t stream = cuda_.stream;
  const float* in = x_.data();
  const size_t last = layers_.size() - 1;
  for (size_t l = 0; l <= last; ++l) {
    const LayerView& layer = layers_[l];
    float* out = act_[l].data();
    RM_RETURN_IF_ERROR(linearForward(layer, in, out, rows));
    biasActivationKernel<<<blocksFor(rows * layer.outputs), kThreads, 0, stream>>>(
        options_.activation, l == last, out, pre_[l].data(), params_.data() + layer.biasOffset(),
        rows, layer.outputs);
    RM_RETURN_IF_ERROR(launched("biasActivationKernel"));
    in = out;
  }

  const size_t outputs = layers_[last].outputs;
  if (options_.task == Task::kClassification) {
    softmaxCrossEntropyKernel<<<blocksFor(rows), kThreads, 0, stream>>>(
        act_[last].data(), y_.data(), pre_[last].data(), row_loss_.data(), row_correct_.data(),
        bad_target_.data(), rows, outputs);
    RM_RETURN_IF_ERROR(launched("softmaxCrossEntropyKernel"));
  } else {
    squaredErrorKernel<<<blocksFor(rows), kThreads, 0, stream>>>(
        act_[last].data(), y_.data(), row_loss_.data(), row_correct_.data(), rows);
    RM_RETURN_IF_ERROR(launched("squaredErrorKernel"));
  }
  lossTotalsKernel<<<1, kThreads, 0, stream>>>(row_loss_.data(), row_correct_.data(), rows,
                                               loss_sum_.data(), correct_.data(), mean_total, add);
  return launched("lossTotalsKernel");
}

Status GpuMlpImpl::backward(const Batch& batch, const LayerGradReadyFn& on_layer_grad_ready,
                            const BackwardOptions& options) {
  if (batch.size == 0 || batch.size != last_batch_) {
    return invalidArgument("gpu: backward() needs the batch of the last successful forward()");
  }
  RM_RETURN_IF_ERROR(useDevice(cuda_.device));
  cudaStream_t stream = cuda_.stream;
  const size_t rows = batch.size;
  const size_t last = layers_.size() - 1;
  const float scale = options.loss_scale / static_cast<float>(rows);
  const float one = 1.0f;
  const float zero = 0.0f;
  const float grad_beta = options.accumulate ? 1.0f : 0.0f;

  float* delta = delta_.data();
  float* delta_prev = delta_prev_.data();
  const size_t outputs = layers_[last].outputs;
  if (options_.task == Task::kClassification) {
    crossEntropyDeltaKernel<<<blocksFor(rows * outputs), kThreads, 0, stream>>>(
        pre_[last].data(), y_.data(), delta, rows, outputs, scale);
    RM_RETURN_IF_ERROR(launched("crossEntropyDeltaKernel"));
  } else {
    squaredErrorDeltaKernel<<<blocksFor(rows), kThreads, 0, stream>>>(act_[last].data(), y_.data(),
                                                                      delta, rows, scale);
    RM_RETURN_IF_ERROR(launched("squaredErrorDeltaKernel"));
  }

  for (size_t l = last + 1; l-- > 0;) {
    const LayerView& layer = layers_[l];
    const int n_in = static_cast<int>(layer.inputs);
    const int n_out = static_cast<int>(layer.outputs);
    const float* below = l == 0 ? x_.data() : act_[l - 1].data();
    float* gw = grads_.data() + layer.weightOffset();
    float* gb = grads_.data() + layer.biasOffset();
    // dW (outputs x inputs) (+)= delta^T * below. Column-major: dW^T (inputs x outputs) =
    // below^T (below's bytes, inputs x rows) * delta (op T of delta's bytes, rows x outputs).
    RM_CUBLAS_RETURN_IF_ERROR(cublasSgemm(blas_.handle, CUBLAS_OP_N, CUBLAS_OP_T, n_in, n_out,
                                          static_cast<int>(rows), &one, below, n_in, delta, n_out,
                                          &grad_beta, gw, n_in));
    const size_t chunks = biasChunks(rows);  // the grid's y: at most 65535, for 2M rows
    const dim3 grid(static_cast<unsigned>(blocksFor(layer.outputs)), static_cast<unsigned>(chunks));
    biasGradPartialKernel<<<grid, kThreads, 0, stream>>>(delta, bias_partials_.data(), rows,
                                                         layer.outputs);
    RM_RETURN_IF_ERROR(launched("biasGradPartialKernel"));
    biasGradSumKernel<<<blocksFor(layer.outputs), kThreads, 0, stream>>>(
        bias_partials_.data(), gb, chunks, layer.outputs, options.accumulate);
    RM_RETURN_IF_ERROR(launched("biasGradSumKernel"));
    if (on_layer_grad_ready) {
      RM_RETURN_IF_ERROR(cuda_.synchronize());  // the callee may hand the block to another stream
      on_layer_grad_ready(l, grads_.data() + layer.offset, layer.size);
    }
    if (l == 0) break;

    // delta_prev (rows x inputs) = delta * W. Column-major: delta_prev^T (inputs x rows) =
    // W^T (W's bytes, inputs x outputs) * delta^T (delta's bytes, outputs x rows).
    RM_CUBLAS_RETURN_IF_ERROR(cublasSgemm(
        blas_.handle, CUBLAS_OP_N, CUBLAS_OP_N, n_in, static_cast<int>(rows), n_out, &one,
        params_.data() + layer.weightOffset(), n_in, delta, n_out, &zero, delta_prev, n_in));
    activationBackwardKernel<<<blocksFor(rows * layer.inputs), kThreads, 0, stream>>>(
        options_.activation, delta_prev, act_[l - 1].data(), pre_[l - 1].data(),
        rows * layer.inputs);
    RM_RETURN_IF_ERROR(launched("activationBackwardKernel"));
    std::swap(delta, delta_prev);
  }
  return Status::ok();
}

Result<EvalTotals> GpuMlpImpl::evaluate(const float* features, const float* targets, size_t n,
                                        size_t chunk) {
  EvalTotals totals;
  chunk = std::max<size_t>(chunk, 1);
  for (size_t start = 0; start < n; start += chunk) {
    const size_t rows = std::min(chunk, n - start);
    const Batch batch{features + start * options_.inputs, targets + start, rows};
    RM_ASSIGN_OR_RETURN(const float loss, forward(batch));
    totals.loss_sum += static_cast<double>(loss) * static_cast<double>(rows);
    totals.samples += rows;
    if (options_.task == Task::kClassification) totals.correct += last_correct_;
  }
  return totals;
}

Result<double> GpuMlpImpl::clipGradNorm(double max_norm) {
  RM_RETURN_IF_ERROR(queueClipGradNorm(max_norm));
  RM_ASSIGN_OR_RETURN(const Totals totals, takeTotals());
  return totals.grad_norm;
}

Status GpuMlpImpl::queueClipGradNorm(double max_norm) {
  RM_RETURN_IF_ERROR(useDevice(cuda_.device));
  cudaStream_t stream = cuda_.stream;
  const int blocks = blocksFor(num_params_);
  sumSquaresKernel<<<blocks, kThreads, 0, stream>>>(grads_.data(), num_params_,
                                                    norm_partials_.data());
  RM_RETURN_IF_ERROR(launched("sumSquaresKernel"));
  sumKernel<<<1, kThreads, 0, stream>>>(norm_partials_.data(), static_cast<size_t>(blocks),
                                        norm_.data());
  RM_RETURN_IF_ERROR(launched("sumKernel"));
  if (max_norm <= 0.0) return Status::ok();
  clipKernel<<<blocks, kThreads, 0, stream>>>(grads_.data(), num_params_, norm_.data(), max_norm);
  return launched("clipKernel");
}

Result<GpuMlp::Totals> GpuMlpImpl::takeTotals() {
  RM_RETURN_IF_ERROR(useDevice(cuda_.device));
  double loss = 0.0;
  double sum_squares = 0.0;
  RM_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(&loss, step_loss_.data(), sizeof loss, cudaMemcpyDeviceToHost, cuda_.stream));
  RM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&sum_squares, norm_.data(), sizeof sum_squares,
                                          cudaMemcpyDeviceToHost, cuda_.stream));
  RM_RETURN_IF_ERROR(cuda_.synchronize());
  return Totals{loss, std::sqrt(sum_squares)};
}

// ---------------------------------------------------------------------------------------------
// The optimizer

// Optimizer::serializeState()'s layout: u32 magic | u32 version | u32 kind | u64 step |
// u64 first count | u64 second count | first moments | second moments.
constexpr size_t kStateStepOffset = 12;

class GpuOptimizerImpl final : public GpuOptimizer {
 public:
  // Works on the model's stream, so that its updates follow the model's queued work in order.
  GpuOptimizerImpl(const OptimizerOptions& options, GpuMlpImpl* model)
      : options_(options), model_(model) {}

  Status init() {
    RM_RETURN_IF_ERROR(useDevice(model_->device()));
    const size_t n = model_->numParams();
    RM_RETURN_IF_ERROR(first_.allocate(n, model_->stream()));
    if (options_.kind == OptimizerKind::kAdam) {
      RM_RETURN_IF_ERROR(second_.allocate(n, model_->stream()));
    }
    return model_->synchronize();
  }

  const OptimizerOptions& options() const override { return options_; }
  uint64_t step() const override { return step_; }

  Result<double> apply() override {
    RM_RETURN_IF_ERROR(useDevice(model_->device()));
    cudaStream_t stream = model_->stream();
    const size_t n = model_->numParams();
    float* p = model_->deviceParams().data();
    const float* g = model_->deviceGrads().data();
    const int blocks = blocksFor(n);
    // Host-side constants computed exactly as Optimizer::apply() does.
    const double lr_double = learningRateAt(options_, step_);
    const auto lr = static_cast<float>(lr_double);
    const auto wd = static_cast<float>(options_.weight_decay);
    if (options_.kind == OptimizerKind::kSgd) {
      const auto mu = static_cast<float>(options_.momentum);
      if (mu == 0.0f) {
        sgdKernel<<<blocks, kThreads, 0, stream>>>(p, g, n, lr, wd);
      } else {
        sgdMomentumKernel<<<blocks, kThreads, 0, stream>>>(p, g, first_.data(), n, lr, wd, mu,
                                                           options_.nesterov);
      }
    } else {
      const double t = static_cast<double>(step_ + 1);
      const double bc1 = 1.0 - std::pow(options_.beta1, t);
      const double bc2 = 1.0 - std::pow(options_.beta2, t);
      adamWKernel<<<blocks, kThreads, 0, stream>>>(
          p, g, first_.data(), second_.data(), n, static_cast<float>(options_.beta1),
          static_cast<float>(options_.beta2), static_cast<float>(options_.epsilon),
          static_cast<float>(lr_double / bc1), static_cast<float>(1.0 / std::sqrt(bc2)),
          1.0f - lr * wd);
    }
    RM_RETURN_IF_ERROR(launched("optimizer update"));
    ++step_;
    return lr_double;
  }

  // The header comes from a CPU Optimizer of the same options (its magic, version and kind), the
  // step and moments from here; restoring the result into that Optimizer checks the layout.
  Result<std::string> serializeState() const override {
    RM_ASSIGN_OR_RETURN(Optimizer cpu, Optimizer::create(options_, model_->numParams()));
    std::string bytes = cpu.serializeState();
    const size_t moment_bytes = (first_.size() + second_.size()) * sizeof(float);
    const size_t header = bytes.size() - moment_bytes;
    std::memcpy(bytes.data() + kStateStepOffset, &step_, sizeof step_);
    RM_RETURN_IF_ERROR(
        copy(bytes.data() + header, first_.data(), first_.size(), cudaMemcpyDeviceToHost));
    RM_RETURN_IF_ERROR(copy(bytes.data() + header + first_.size() * sizeof(float), second_.data(),
                            second_.size(), cudaMemcpyDeviceToHost));
    const Status check = cpu.restoreState(bytes);
    if (!check.isOk() || cpu.step() != step_) {
      return internalError(
          "gpu: Optimizer::serializeState()'s layout changed; update gpu_model.cu");
    }
    return bytes;
  }

  Status restoreState(std::string_view bytes) override {
    RM_ASSIGN_OR_RETURN(Optimizer cpu, Optimizer::create(options_, model_->numParams()));
    RM_RETURN_IF_ERROR(cpu.restoreState(bytes));  // validates; the moments are the tail
    const size_t header = bytes.size() - (first_.size() + second_.size()) * sizeof(float);
    RM_RETURN_IF_ERROR(
        copy(first_.data(), bytes.data() + header, first_.size(), cudaMemcpyHostToDevice));
    RM_RETURN_IF_ERROR(copy(second_.data(), bytes.data() + header + first_.size() * sizeof(float),
                            second_.size(), cudaMemcpyHostToDevice));
    step_ = cpu.step();
    return Status::ok();
  }

 private:
  // `floats` moments between host and device, on this optimizer's stream.
  Status copy(void* to, const void* from, size_t floats, cudaMemcpyKind kind) const {
    if (floats == 0) return Status::ok();
    RM_RETURN_IF_ERROR(useDevice(model_->device()));
    RM_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(to, from, floats * sizeof(float), kind, model_->stream()));
    return model_->synchronize();
  }

  const OptimizerOptions options_;
  GpuMlpImpl* const model_;
  DeviceBuffer<float> first_;   // sgd: momentum buffer; adam: m
  DeviceBuffer<float> second_;  // adam: v; empty for sgd
  uint64_t step_ = 0;
};

}  // namespace

Result<int> gpuCount() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();  // clear it for later calls
    return unavailable(std::string("no CUDA device on this host: ") + cudaGetErrorString(error));
  }
  if (count == 0) return unavailable("no CUDA device on this host: none visible");
  return count;
}

bool gpuAvailable() { return gpuCount().isOk(); }

Result<std::unique_ptr<GpuMlp>> createGpuMlp(const MlpOptions& options, int device) {
  // The CPU Mlp validates the options and lays the parameters out; only its layout is kept.
  RM_ASSIGN_OR_RETURN(const Mlp layout, Mlp::create(options));
  RM_RETURN_IF_ERROR(checkDevice(device));
  auto model = std::make_unique<GpuMlpImpl>(options, layout.layers(), layout.numParams());
  RM_RETURN_IF_ERROR(model->init(device));
  return std::unique_ptr<GpuMlp>(std::move(model));
}

Result<std::unique_ptr<GpuOptimizer>> createGpuOptimizer(const OptimizerOptions& options,
                                                         GpuMlp* model) {
  auto* impl = dynamic_cast<GpuMlpImpl*>(model);
  if (impl == nullptr) {
    return invalidArgument("gpu: createGpuOptimizer() needs a model made by createGpuMlp()");
  }
  // Optimizer::create() validates (each error names the field).
  RM_RETURN_IF_ERROR(Optimizer::create(options, 0).status());
  auto optimizer = std::make_unique<GpuOptimizerImpl>(options, impl);
  RM_RETURN_IF_ERROR(optimizer->init());
  return std::unique_ptr<GpuOptimizer>(std::move(optimizer));
}

}  // namespace ringmaster::train
