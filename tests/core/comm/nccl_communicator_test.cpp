// NCCL communicator tests. Most need GPUs (one per rank) and skip without them; the first one
// checks what a machine without a usable GPU gets.

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ringmaster/comm/communicator.h"
#include "ringmaster/comm/store.h"
#include "ringmaster/config.h"

#if RINGMASTER_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace ringmaster::comm {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

NcclOptions optionsFor(int rank, int size, KeyValueStore* store,
                       std::chrono::milliseconds timeout = 60s) {
  NcclOptions options;
  options.rank = rank;
  options.size = size;
  options.store = store;
  options.device = rank;
  options.timeout = timeout;
  return options;
}

TEST(NcclCommunicator, WithoutGpuReportsWhyNot) {
  if (cudaDeviceCount() > 0) GTEST_SKIP() << "a CUDA GPU is present; this checks the no-GPU path";
  InMemoryStore store;
  const auto start = Clock::now();
  auto comm = createNcclCommunicator(optionsFor(0, 1, &store));
  ASSERT_FALSE(comm.isOk());
  // UNAVAILABLE when built with NCCL (no device), UNIMPLEMENTED when built without it.
  EXPECT_TRUE(comm.status().code() == ErrorCode::kUnavailable ||
              comm.status().code() == ErrorCode::kUnimplemented)
      << comm.status().toString();
  EXPECT_FALSE(comm.status().message().empty());
  EXPECT_LT(Clock::now() - start, 10s);
}

TEST(NcclCommunicator, RejectsBadOptions) {
  InMemoryStore store;
  auto noStore = createNcclCommunicator(optionsFor(0, 1, nullptr));
  EXPECT_FALSE(noStore.isOk());
  auto badRank = createNcclCommunicator(optionsFor(3, 2, &store));
  EXPECT_FALSE(badRank.isOk());
}

#if RINGMASTER_HAVE_CUDA

// Device buffer of floats, freed on scope exit.
class DeviceFloats {
 public:
  explicit DeviceFloats(const std::vector<float>& host) : count_(host.size()) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&ptr_), count_ * sizeof(float)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(ptr_, host.data(), count_ * sizeof(float), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  ~DeviceFloats() { cudaFree(ptr_); }
  float* get() { return ptr_; }
  std::vector<float> toHost() const {
    std::vector<float> host(count_);
    EXPECT_EQ(cudaMemcpy(host.data(), ptr_, count_ * sizeof(float), cudaMemcpyDeviceToHost),
              cudaSuccess);
    return host;
  }

 private:
  size_t count_;
  float* ptr_ = nullptr;
};

void onEveryRank(int size, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) threads.emplace_back(fn, r);
  for (auto& t : threads) t.join();
}

TEST(NcclCommunicator, SingleRankAllreduceOnOneGpu) {
  if (cudaDeviceCount() < 1) GTEST_SKIP() << "needs a CUDA GPU; cudaGetDeviceCount reports none";
  InMemoryStore store;
  auto comm = createNcclCommunicator(optionsFor(0, 1, &store));
  ASSERT_TRUE(comm.isOk()) << comm.status().toString();
  EXPECT_EQ((*comm)->backend(), "nccl");
  DeviceFloats data({1.0f, 2.0f, 3.0f});
  ASSERT_TRUE((*comm)->allreduce(data.get(), 3, ReduceOp::kAverage).isOk());
  EXPECT_EQ(data.toHost(), (std::vector<float>{1.0f, 2.0f, 3.0f}));
  // Point-to-point needs another rank; NCCL cannot receive from "any" peer.
  EXPECT_EQ((*comm)->send(data.get(), 4, 0, 1).code(), ErrorCode::kInvalidArgument);
  const int peers[] = {0};
  EXPECT_EQ((*comm)->recvFromAny(data.get(), 4, peers, 1).status().code(),
            ErrorCode::kUnimplemented);
  EXPECT_TRUE((*comm)->barrier().isOk());
}

TEST(NcclCommunicator, MultiRankCollectives) {
  const int size = std::min(cudaDeviceCount(), 4);
  if (size < 2) GTEST_SKIP() << "needs two CUDA GPUs (one per rank); found " << cudaDeviceCount();
  InMemoryStore store;
  onEveryRank(size, [&](int r) {
    ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
    auto comm = createNcclCommunicator(optionsFor(r, size, &store));
    ASSERT_TRUE(comm.isOk()) << comm.status().toString();
    std::vector<float> host(1001);
    for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(r) + i;
    DeviceFloats data(host);
    ASSERT_TRUE((*comm)->allreduce(data.get(), host.size(), ReduceOp::kSum).isOk());
    auto summed = data.toHost();
    for (size_t i = 0; i < host.size(); ++i) {
      ASSERT_EQ(summed[i], static_cast<float>(size * (size - 1) / 2 + size * i));
    }
    DeviceFloats root(std::vector<float>(16, static_cast<float>(r)));
    ASSERT_TRUE((*comm)->broadcast(root.get(), 16 * sizeof(float), size - 1).isOk());
    EXPECT_EQ(root.toHost(), std::vector<float>(16, static_cast<float>(size - 1)));
    DeviceFloats mine(std::vector<float>(1, static_cast<float>(r)));
    DeviceFloats all(std::vector<float>(size, -1.0f));
    ASSERT_TRUE((*comm)->allgather(mine.get(), all.get(), sizeof(float)).isOk());
    auto gathered = all.toHost();
    for (int from = 0; from < size; ++from) EXPECT_EQ(gathered[from], static_cast<float>(from));
    // A ring of sends: even ranks send first, odd ones receive first.
    const int next = (r + 1) % size, prev = (r + size - 1) % size;
    DeviceFloats out(std::vector<float>(64, static_cast<float>(r))), in(std::vector<float>(64));
    for (int turn = 0; turn < 2; ++turn) {
      if ((r % 2 == 0) == (turn == 0)) {
        ASSERT_TRUE((*comm)->send(out.get(), 64 * sizeof(float), next, 0).isOk());
      } else {
        ASSERT_TRUE((*comm)->recv(in.get(), 64 * sizeof(float), prev, 0).isOk());
      }
    }
    EXPECT_EQ(in.toHost(), std::vector<float>(64, static_cast<float>(prev)));
    EXPECT_TRUE((*comm)->barrier().isOk());
  });
}

TEST(NcclCommunicator, MissingRankTimesOutAndAbortReleases) {
  const int size = std::min(cudaDeviceCount(), 4);
  if (size < 2) GTEST_SKIP() << "needs two CUDA GPUs (one per rank); found " << cudaDeviceCount();
  InMemoryStore store;
  std::vector<std::unique_ptr<Communicator>> comms(size);
  onEveryRank(size, [&](int r) {
    ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
    auto comm = createNcclCommunicator(optionsFor(r, size, &store));
    ASSERT_TRUE(comm.isOk()) << comm.status().toString();
    comms[r] = std::move(*comm);
  });
  // Rank 0 calls allreduce alone: it must time out, not hang.
  DeviceFloats data(std::vector<float>(1024, 1.0f));
  const auto start = Clock::now();
  Status status = comms[0]->allreduce(data.get(), 1024, ReduceOp::kSum, 500ms);
  EXPECT_EQ(status.code(), ErrorCode::kTimeout) << status.toString();
  EXPECT_NE(status.message().find("500 ms"), std::string::npos) << status.toString();
  EXPECT_LT(Clock::now() - start, 10s);
  // Rank 1 blocks alone too; abort() from another thread releases it.
  std::thread aborter([&] {
    std::this_thread::sleep_for(200ms);
    comms[1]->abort();
  });
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  DeviceFloats other(std::vector<float>(1024, 1.0f));
  const auto blocked = Clock::now();
  status = comms[1]->allreduce(other.get(), 1024, ReduceOp::kSum, 60s);
  aborter.join();
  EXPECT_EQ(status.code(), ErrorCode::kCancelled) << status.toString();
  EXPECT_LT(Clock::now() - blocked, 10s);
  comms.clear();
}

#endif  // RINGMASTER_HAVE_CUDA

}  // namespace
}  // namespace ringmaster::comm
