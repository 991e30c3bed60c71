#pragma once
// The Gloo implementation of Communicator: CPU collectives over Gloo's TCP transport, using Gloo's
// "new style" collectives (gloo::allreduce, gloo::broadcast, ...) that take per-call buffers and a
// per-call timeout.

#include <gloo/rendezvous/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "comm/shm/shm_group.h"
#include "comm/tcp/tcp_ring.h"
#include "ringmaster/comm/communicator.h"

namespace ringmaster::comm::gloo {

class GlooCommunicator final : public Communicator {
 public:
  // Use createGlooCommunicator(); this takes an already connected context.
  GlooCommunicator(std::shared_ptr<::gloo::rendezvous::Context> context,
                   const GlooOptions& options);
  ~GlooCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view backend() const override { return "gloo"; }
  std::string transport() const override;

  Status allreduce(void* data, size_t count, DataType type, ReduceOp op,
                   std::chrono::milliseconds timeout) override;
  using Communicator::allreduce;
  Status broadcast(void* data, size_t bytes, int root, std::chrono::milliseconds timeout) override;
  Status allgather(const void* send, void* recv, size_t bytesPerRank,
                   std::chrono::milliseconds timeout) override;
  Status barrier(std::chrono::milliseconds timeout) override;
  Status send(const void* data, size_t bytes, int peer, uint32_t tag,
              std::chrono::milliseconds timeout) override;
  Status recv(void* data, size_t bytes, int peer, uint32_t tag,
              std::chrono::milliseconds timeout) override;
  Result<int> recvFromAny(void* data, size_t bytes, std::span<const int> peers, uint32_t tag,
                          std::chrono::milliseconds timeout) override;
  void abort() override;
  bool isBroken() const override { return broken_.load(); }

  // The Gloo context underneath, for benchmarks that call Gloo directly on the very same
  // connections and threads to measure what this class adds (tests/bench/bench_allreduce.cpp).
  const std::shared_ptr<::gloo::rendezvous::Context>& glooContext() const { return context_; }

  // Called once by createGlooCommunicator() on every rank: when all ranks share this host,
  // float32 allreduce and barrier go through shared memory (GlooOptions::sharedMemory). Errors only
  // when the exchange over the connections failed; a segment that cannot be made leaves TCP.
  Status setUpSharedMemory();
  bool usesSharedMemory() const { return shm_ != nullptr; }
  // Called once by createGlooCommunicator() on every rank when the ranks are not all on this host:
  // large allreduces (and all of them between two ranks) then go over a ring of TCP
  // connections of this communicator's own (comm/tcp/tcp_ring.h) instead of Gloo's ring.
  Status setUpTcpRing(const sockaddr_storage& address, KeyValueStore& store,
                      const std::string& key_prefix);
  bool usesTcpRing() const { return ring_ != nullptr; }

 private:
  // Registers the buffers of the collective in flight so that abort() can release waits on them.
  // Declare it after the gloo options that own the buffers: it must unregister them first.
  class InflightGuard {
   public:
    InflightGuard(GlooCommunicator& comm, ::gloo::transport::UnboundBuffer* buffer);
    ~InflightGuard();
    InflightGuard(const InflightGuard&) = delete;
    InflightGuard& operator=(const InflightGuard&) = delete;

   private:
    GlooCommunicator& comm_;
    ::gloo::transport::UnboundBuffer* buffer_;
  };

  // Checks the state and the timeout, runs `body` with the effective timeout and turns whatever
  // Gloo throws into a Status (and a broken communicator).
  template <typename Body>
  Status run(const char* what, std::chrono::milliseconds timeout, Body&& body);
  Status fail(Status status);
  // Runs `body(deadline)` on a transport of this class's own (`transport`: the shared-memory
  // group, the TCP ring) and words its errors as run() does.
  template <typename Body>
  Status runDirect(const char* what, const char* transport, std::chrono::milliseconds timeout,
                   Body&& body);
  Status brokenStatus() const;
  Status checkPeer(const char* what, int peer, const void* data, size_t bytes) const;
  uint32_t nextTag() { return nextTag_++; }

  // Wakes every pending operation of this context with an error and closes the connections.
  void closeConnections();

  // The watchdog enforces each call's timeout whatever Gloo does: this Gloo version's bcube
  // allreduce, for one, waits with the context's timeout instead of the call's.
  void armWatchdog(std::chrono::steady_clock::time_point deadline);
  bool disarmWatchdog();  // Returns whether the deadline passed.
  void watchdogLoop();
  // Whether an allreduce of `bytes` goes over the TCP ring: all of them between two ranks, the
  // large ones (where Gloo would use its ring) between more.
  bool ringCarries(size_t bytes) const {
    return ring_ && algorithm_ == GlooOptions::Algorithm::kAuto &&
           (size_ == 2 || bytes >= kGlooRingMinBytes);
  }

  const std::shared_ptr<::gloo::rendezvous::Context> context_;
  const int rank_;
  const int size_;
  const std::chrono::milliseconds defaultTimeout_;
  const GlooOptions::Algorithm algorithm_;
  uint32_t nextTag_ = 0;                // Only touched by the thread running collectives.
  std::unique_ptr<shm::ShmGroup> shm_;  // set before the first collective; markBroken() any thread
  std::unique_ptr<tcp::TcpRing> ring_;  // set before the first collective; shutdown() any thread

  std::atomic<bool> broken_{false};
  std::atomic<bool> aborted_{false};
  mutable std::mutex mutex_;
  Status firstError_;                                        // GUARDED_BY(mutex_)
  bool connectionsClosed_ = false;                           // GUARDED_BY(mutex_)
  std::vector<::gloo::transport::UnboundBuffer*> inflight_;  // GUARDED_BY(mutex_)

  std::mutex watchdogMutex_;
  std::condition_variable watchdogWake_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;  // GUARDED_BY(watchdogMutex_)
  // When the watchdog will look next; it is only woken for a deadline earlier than that.
  std::chrono::steady_clock::time_point watchdogSleepsUntil_;  // GUARDED_BY(watchdogMutex_)
  bool watchdogFired_ = false;                                 // GUARDED_BY(watchdogMutex_)
  bool watchdogStop_ = false;                                  // GUARDED_BY(watchdogMutex_)
  std::thread watchdog_;  // Last: started when everything above is initialised.
};

}  // namespace ringmaster::comm::gloo
