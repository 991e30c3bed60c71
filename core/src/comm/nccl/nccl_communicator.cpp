// The NCCL implementation of Communicator; compiled only when the CUDA toolkit is found.
//
// The communicator is created non-blocking (ncclConfig_t::blocking = 0): NCCL calls return at once
// (possibly ncclInProgress) and this class polls ncclCommGetAsyncError and cudaStreamQuery until
// the work is done, the timeout passes or abort() is called; in the last two cases it calls
// ncclCommAbort, which is what makes a hung collective return instead of blocking forever.

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "ringmaster/comm/communicator.h"

namespace ringmaster::comm {
namespace nccl {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kFinalizeTimeout = std::chrono::seconds(30);

std::string ms(std::chrono::milliseconds t) { return std::to_string(t.count()) + " ms"; }

std::string ncclError(const char* call, ncclResult_t result, ncclComm_t comm) {
  std::string message = std::string(call) + ": " + ncclGetErrorString(result);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') message += " (" + std::string(last) + ")";
  return message;
}

std::string cudaError(const char* call, cudaError_t error) {
  return std::string(call) + ": " + cudaGetErrorString(error);
}

// The communicator's asynchronous state; when the query itself fails (a destroyed or invalid
// communicator), that failure is the state.
ncclResult_t asyncState(ncclComm_t comm) {
  ncclResult_t state = ncclSuccess;
  const ncclResult_t queried = ncclCommGetAsyncError(comm, &state);
  return queried != ncclSuccess ? queried : state;
}

// Polling backs off from spinning to short sleeps: a collective on a GPU often takes
// microseconds, a hung one should not burn a CPU core.
void backoff(int iteration) {
  if (iteration < 1000) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(iteration < 10000 ? 20 : 200));
  }
}

ncclDataType_t toNcclType(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return ncclFloat32;
    case DataType::kFloat16:
      return ncclFloat16;
    case DataType::kBFloat16:
      return ncclBfloat16;
  }
  return ncclFloat32;
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(const NcclOptions& options, int device, ncclComm_t comm, cudaStream_t stream,
                   float* scratch)
      : rank_(options.rank),
        size_(options.size),
        device_(device),
        defaultTimeout_(options.timeout),
        comm_(comm),
        stream_(stream),
        scratch_(scratch) {}

  ~NcclCommunicator() override {
    std::lock_guard lock(commMutex_);
    cudaSetDevice(device_);
    if (comm_ != nullptr) {
      if (broken_) {
        ncclCommAbort(comm_);
      } else {
        // Finalize flushes outstanding work (peers take part); a destructor waits at most 30 s
        // for it, then aborts.
        ncclResult_t result = ncclCommFinalize(comm_);
        const auto deadline =
            Clock::now() + std::min<std::chrono::milliseconds>(defaultTimeout_, kFinalizeTimeout);
        ncclResult_t state = result;
        for (int i = 0; state == ncclInProgress && Clock::now() < deadline; ++i) {
          backoff(i);
          state = asyncState(comm_);
        }
        if (state == ncclSuccess) {
          ncclCommDestroy(comm_);
        } else {
          ncclCommAbort(comm_);
        }
      }
      comm_ = nullptr;
    }
    if (scratch_ != nullptr) cudaFree(scratch_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view backend() const override { return "nccl"; }

  Status allreduce(void* data, size_t count, DataType type, ReduceOp op,
                   std::chrono::milliseconds timeout) override {
    if (data == nullptr && count > 0) return invalidArgument("allreduce: data is null");
    if (count == 0) return check("allreduce", timeout);
    const ncclRedOp_t ncclOp = op == ReduceOp::kAverage ? ncclAvg : ncclSum;
    return run("allreduce", timeout, [&] {
      return ncclAllReduce(data, data, count, toNcclType(type), ncclOp, comm_, stream_);
    });
  }
  using Communicator::allreduce;

  Status broadcast(void* data, size_t bytes, int root, std::chrono::milliseconds timeout) override {
    if (root < 0 || root >= size_) {
      return invalidArgument("broadcast: root " + std::to_string(root) + " is not a rank of 0.." +
                             std::to_string(size_ - 1));
    }
    if (data == nullptr && bytes > 0) return invalidArgument("broadcast: data is null");
    if (bytes == 0) return check("broadcast", timeout);
    return run("broadcast", timeout,
               [&] { return ncclBroadcast(data, data, bytes, ncclUint8, root, comm_, stream_); });
  }

  Status allgather(const void* send, void* recv, size_t bytesPerRank,
                   std::chrono::milliseconds timeout) override {
    if ((send == nullptr || recv == nullptr) && bytesPerRank > 0) {
      return invalidArgument("allgather: send or recv is null");
    }
    if (bytesPerRank == 0) return check("allgather", timeout);
    return run("allgather", timeout,
               [&] { return ncclAllGather(send, recv, bytesPerRank, ncclUint8, comm_, stream_); });
  }

  // NCCL matches point-to-point messages between two ranks in the order posted: no tags.
  Status send(const void* data, size_t bytes, int peer, uint32_t /*tag*/,
              std::chrono::milliseconds timeout) override {
    RM_RETURN_IF_ERROR(checkPeer("send", peer, data, bytes));
    if (bytes == 0) return check("send", timeout);
    return run("send", timeout,
               [&] { return ncclSend(data, bytes, ncclUint8, peer, comm_, stream_); });
  }

  Status recv(void* data, size_t bytes, int peer, uint32_t /*tag*/,
              std::chrono::milliseconds timeout) override {
    RM_RETURN_IF_ERROR(checkPeer("recv", peer, data, bytes));
    if (bytes == 0) return check("recv", timeout);
    return run("recv", timeout,
               [&] { return ncclRecv(data, bytes, ncclUint8, peer, comm_, stream_); });
  }

  Result<int> recvFromAny(void*, size_t, std::span<const int>, uint32_t,
                          std::chrono::milliseconds) override {
    return Status(ErrorCode::kUnimplemented,
                  "recvFromAny: NCCL receives only from a named peer (use the gloo backend)");
  }

  Status barrier(std::chrono::milliseconds timeout) override {
    return run("barrier", timeout, [&] {
      return ncclAllReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, comm_, stream_);
    });
  }

  void abort() override {
    aborted_ = true;
    // A call in flight polls aborted_ and aborts the communicator itself within microseconds;
    // taking the lock waits for that. With no call in flight, abort here so that peers blocked
    // in a collective with this rank fail as well.
    std::lock_guard lock(commMutex_);
    recordFirstError(Status(ErrorCode::kCancelled, "communicator was aborted on rank " +
                                                       std::to_string(rank_) + " of " +
                                                       std::to_string(size_)));
    abortCommLocked();
  }

  bool isBroken() const override { return broken_.load(); }

 private:
  Status checkPeer(const char* what, int peer, const void* data, size_t bytes) const {
    if (peer < 0 || peer >= size_ || peer == rank_) {
      return invalidArgument(std::string(what) + ": peer " + std::to_string(peer) +
                             " is not another rank of 0.." + std::to_string(size_ - 1) +
                             " (this is rank " + std::to_string(rank_) + ")");
    }
    if (data == nullptr && bytes > 0) return invalidArgument(std::string(what) + ": data is null");
    return Status::ok();
  }

  Status check(const char* what, std::chrono::milliseconds timeout) {
    if (broken_) return brokenStatus();
    if (timeout != kDefaultTimeout && timeout.count() <= 0) {
      return invalidArgument(std::string(what) + ": timeout must be positive, got " + ms(timeout));
    }
    return Status::ok();
  }

  template <typename Enqueue>
  Status run(const char* what, std::chrono::milliseconds timeout, Enqueue&& enqueue) {
    RM_RETURN_IF_ERROR(check(what, timeout));
    if (timeout == kDefaultTimeout) timeout = defaultTimeout_;
    const std::string where = " on rank " + std::to_string(rank_) + " of " + std::to_string(size_);
    const auto deadline = Clock::now() + timeout;

    std::lock_guard lock(commMutex_);
    if (aborted_ || comm_ == nullptr) return brokenStatus();
    cudaError_t cudaStatus = cudaSetDevice(device_);
    if (cudaStatus != cudaSuccess) {
      return failLocked(
          internalError(std::string(what) + where + ": " + cudaError("cudaSetDevice", cudaStatus)));
    }
    ncclResult_t result = enqueue();
    if (result != ncclSuccess && result != ncclInProgress) {
      return failLocked(
          internalError(std::string(what) + where + ": " + ncclError("enqueue", result, comm_)));
    }
    // Non-blocking mode: the enqueue itself may still be in progress; then the stream runs.
    for (int i = 0;; ++i) {
      const ncclResult_t state = asyncState(comm_);
      if (state != ncclSuccess && state != ncclInProgress) {
        return failLocked(ioError(std::string(what) + " failed" + where + ": " +
                                  ncclError("ncclCommGetAsyncError", state, comm_)));
      }
      if (state == ncclSuccess) {
        cudaStatus = cudaStreamQuery(stream_);
        if (cudaStatus == cudaSuccess) return Status::ok();
        if (cudaStatus != cudaErrorNotReady) {
          return failLocked(internalError(std::string(what) + where + ": " +
                                          cudaError("cudaStreamQuery", cudaStatus)));
        }
      }
      if (aborted_) {
        return failLocked(Status(ErrorCode::kCancelled, std::string(what) + " cancelled" + where +
                                                            ": the communicator was aborted"));
      }
      if (Clock::now() >= deadline) {
        return failLocked(timeoutError(std::string(what) + " timed out after " + ms(timeout) +
                                       where + " (a peer did not take part in time)"));
      }
      backoff(i);
    }
  }

  // REQUIRES: commMutex_ is held.
  Status failLocked(Status status) {
    recordFirstError(status);
    abortCommLocked();
    return status;
  }

  // REQUIRES: commMutex_ is held.
  void abortCommLocked() {
    broken_ = true;
    if (comm_ != nullptr) {
      cudaSetDevice(device_);
      ncclCommAbort(comm_);
      comm_ = nullptr;
    }
  }

  void recordFirstError(const Status& status) {
    std::lock_guard lock(errorMutex_);
    if (firstError_.isOk()) firstError_ = status;
    broken_ = true;
  }

  Status brokenStatus() const {
    std::lock_guard lock(errorMutex_);
    if (firstError_.isOk()) return Status(ErrorCode::kCancelled, "communicator was aborted");
    if (firstError_.code() == ErrorCode::kCancelled) return firstError_;
    return Status(firstError_.code(),
                  "communicator unusable after an earlier failure: " + firstError_.message());
  }

  const int rank_;
  const int size_;
  const int device_;
  const std::chrono::milliseconds defaultTimeout_;

  std::atomic<bool> broken_{false};
  std::atomic<bool> aborted_{false};
  std::mutex commMutex_;  // Held by the call in flight and by abort().
  ncclComm_t comm_;       // GUARDED_BY(commMutex_); null once aborted or destroyed.
  cudaStream_t stream_;   // Owned.
  float* scratch_;        // One float of device memory for barrier().
  mutable std::mutex errorMutex_;
  Status firstError_;  // GUARDED_BY(errorMutex_)
};

}  // namespace

}  // namespace nccl

int cudaDeviceCount() {
  int count = 0;
  // Any error (no driver, driver older than the runtime, no device) means "no usable GPU".
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

Result<std::unique_ptr<Communicator>> createNcclCommunicator(const NcclOptions& options) {
  using nccl::Clock;
  using nccl::ms;
  if (options.size < 1) {
    return invalidArgument("nccl: size must be at least 1, got " + std::to_string(options.size));
  }
  if (options.rank < 0 || options.rank >= options.size) {
    return invalidArgument("nccl: rank " + std::to_string(options.rank) + " is not in 0.." +
                           std::to_string(options.size - 1));
  }
  if (options.store == nullptr) return invalidArgument("nccl: no rendezvous store given");
  if (options.timeout.count() <= 0) {
    return invalidArgument("nccl: timeout must be positive, got " + ms(options.timeout));
  }
  const std::string where =
      " (rank " + std::to_string(options.rank) + " of " + std::to_string(options.size) + ")";

  int deviceCount = 0;
  cudaError_t cudaStatus = cudaGetDeviceCount(&deviceCount);
  if (cudaStatus != cudaSuccess || deviceCount == 0) {
    return unavailable("nccl: no usable CUDA device" + where + ": " +
                       (cudaStatus != cudaSuccess ? cudaGetErrorString(cudaStatus)
                                                  : std::string("no device visible")));
  }
  const int device = options.device >= 0 ? options.device : options.rank % deviceCount;
  if (device >= deviceCount) {
    return invalidArgument("nccl: device " + std::to_string(device) + " does not exist; " +
                           std::to_string(deviceCount) + " visible" + where);
  }
  cudaStatus = cudaSetDevice(device);
  if (cudaStatus != cudaSuccess) {
    return unavailable("nccl: " + nccl::cudaError("cudaSetDevice", cudaStatus) + where);
  }

  // Rank 0 creates the id; everyone else waits for it in the store.
  const std::string key = options.storePrefix + "unique_id";
  ncclUniqueId id;
  if (options.rank == 0) {
    ncclResult_t result = ncclGetUniqueId(&id);
    if (result != ncclSuccess) {
      return internalError("nccl: " + nccl::ncclError("ncclGetUniqueId", result, nullptr));
    }
    RM_RETURN_IF_ERROR(
        options.store->set(key, std::string_view(reinterpret_cast<const char*>(&id), sizeof(id))));
  } else {
    auto value = options.store->get(key, options.timeout);
    if (!value.isOk()) {
      if (value.status().code() == ErrorCode::kTimeout) {
        return timeoutError("nccl rendezvous timed out after " + ms(options.timeout) + where +
                            ": rank 0 did not publish the ncclUniqueId; " +
                            value.status().message());
      }
      return value.status();
    }
    if (value->size() != sizeof(id)) {
      return protocolError("nccl: the ncclUniqueId in the store has " +
                           std::to_string(value->size()) + " bytes, expected " +
                           std::to_string(sizeof(id)));
    }
    std::memcpy(&id, value->data(), sizeof(id));
  }

  cudaStream_t stream = nullptr;
  cudaStatus = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (cudaStatus != cudaSuccess) {
    return internalError("nccl: " + nccl::cudaError("cudaStreamCreateWithFlags", cudaStatus));
  }
  float* scratch = nullptr;
  cudaStatus = cudaMalloc(reinterpret_cast<void**>(&scratch), sizeof(float));
  if (cudaStatus != cudaSuccess) {
    cudaStreamDestroy(stream);
    return internalError("nccl: " + nccl::cudaError("cudaMalloc", cudaStatus));
  }
  auto cleanup = [&] {
    cudaFree(scratch);
    cudaStreamDestroy(stream);
  };

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclResult_t result = ncclCommInitRankConfig(&comm, options.size, id, options.rank, &config);
  ncclResult_t state = result;
  const auto deadline = Clock::now() + options.timeout;
  for (int i = 0; state == ncclInProgress; ++i) {
    if (Clock::now() >= deadline) {
      ncclCommAbort(comm);
      cleanup();
      return timeoutError("nccl init timed out after " + ms(options.timeout) + where +
                          ": a rank did not join");
    }
    nccl::backoff(i);
    state = nccl::asyncState(comm);
  }
  if (state != ncclSuccess) {
    std::string message = nccl::ncclError("ncclCommInitRankConfig", state, comm);
    if (comm != nullptr) ncclCommAbort(comm);
    cleanup();
    return internalError("nccl init failed" + where + ": " + message);
  }
  return std::unique_ptr<Communicator>(
      std::make_unique<nccl::NcclCommunicator>(options, device, comm, stream, scratch));
}

}  // namespace ringmaster::comm
