#pragma once
// Collective communication for data-parallel training: the one interface the trainer sees, with a
// Gloo (CPU, TCP) and an NCCL (GPU) implementation behind it.
//
// Semantics shared by every backend:
// - Collectives are blocking and in place; every rank calls the same collectives in the same order
//   with the same sizes (and the same root). A mismatch is not detected: it times out.
// - Every call has a timeout (the backend's default, or the one passed in). A collective that does
//   not finish in time returns TIMEOUT; it never blocks forever.
// - Any failed collective (TIMEOUT, IO, CANCELLED) leaves the communicator broken, as in NCCL:
//   its connections are torn down so that peers fail promptly too, and every later call returns
//   at once with an error that repeats the first one. Recovery means a new communicator (in
//   Ringmaster: a new attempt of the job).
// - abort() may be called from any thread: it makes a pending call return CANCELLED promptly and
//   every later call fail fast.
// - Zero-length collectives succeed at once without communicating (all ranks must agree).
//
// Thread safety: rank(), size(), backend(), isBroken() and abort() are thread-safe (while the
// communicator is alive: not concurrently with its destructor). The collectives are not
// thread-safe with respect to each other: call them from one thread at a time (their order must
// match across ranks anyway).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "ringmaster/comm/store.h"
#include "ringmaster/util/result.h"

namespace ringmaster::comm {

enum class DataType {
  kFloat32,
  kFloat16,   // IEEE half; NCCL, and Gloo's allreduce (summed in float, rounded to half).
  kBFloat16,  // bfloat16; NCCL only.
};

// Size in bytes of one element of `type`.
size_t dataTypeSize(DataType type);
const char* dataTypeName(DataType type);

enum class ReduceOp {
  kSum,
  kAverage,  // The sum divided by size().
};

// Pass as a call's timeout to use the communicator's default (its options' `timeout`).
inline constexpr std::chrono::milliseconds kDefaultTimeout{-1};

class Communicator {
 public:
  virtual ~Communicator() = default;

  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "gloo" or "nccl".
  virtual std::string_view backend() const = 0;
  // What carries the gradients' allreduces, for the rank's log: backend() unless a backend has
  // paths of its own ("gloo; float32 allreduce in shared memory").
  virtual std::string transport() const { return std::string(backend()); }

  // Reduces `count` elements of `type` at `data` across all ranks, in place: afterwards every
  // rank holds the sum (or average) of all ranks' buffers. For NCCL, `data` is device memory on
  // the communicator's GPU.
  // Errors: INVALID_ARGUMENT (null data with count > 0, timeout <= 0), UNIMPLEMENTED (a type the
  // backend does not reduce: Gloo reduces kFloat32 and kFloat16), TIMEOUT, IO, CANCELLED.
  virtual Status allreduce(void* data, size_t count, DataType type, ReduceOp op,
                           std::chrono::milliseconds timeout = kDefaultTimeout) = 0;

  // float32 shorthand for the call above.
  Status allreduce(float* data, size_t count, ReduceOp op = ReduceOp::kSum,
                   std::chrono::milliseconds timeout = kDefaultTimeout) {
    return allreduce(data, count, DataType::kFloat32, op, timeout);
  }

  // Copies `bytes` bytes at `data` from rank `root` to every other rank, in place.
  // Errors: INVALID_ARGUMENT (root out of range, null data), TIMEOUT, IO, CANCELLED.
  virtual Status broadcast(void* data, size_t bytes, int root,
                           std::chrono::milliseconds timeout = kDefaultTimeout) = 0;

  // Gathers `bytesPerRank` bytes from every rank into `recv` (size() * bytesPerRank bytes), in
  // rank order: rank r's `send` lands at recv + r * bytesPerRank. `send` may alias that slot.
  // Errors: INVALID_ARGUMENT, TIMEOUT, IO, CANCELLED.
  virtual Status allgather(const void* send, void* recv, size_t bytesPerRank,
                           std::chrono::milliseconds timeout = kDefaultTimeout) = 0;

  // Returns once every rank has entered the barrier.
  // Errors: TIMEOUT, IO, CANCELLED.
  virtual Status barrier(std::chrono::milliseconds timeout = kDefaultTimeout) = 0;

  // Point-to-point, for strategies whose ranks are not symmetric (parameter servers, pipeline
  // stages). Blocking: send() returns once its bytes are out (on Gloo's TCP transport that is
  // after the receiver posted the matching recv, so two ranks that both send first deadlock:
  // order the calls; between ranks of one host Gloo's shared-memory channels take a message
  // without waiting for the recv), recv() once they are in. A send matches the recv of the same tag
  // from that peer; the sizes must be equal. Tags are the caller's and never collide with the
  // collectives'. NCCL has no tags: there messages between two ranks match in the order posted.
  // Like a collective, a failed call breaks the communicator for every rank.
  // Errors: INVALID_ARGUMENT (peer out of range or this rank, null data), TIMEOUT, IO, CANCELLED.
  virtual Status send(const void* data, size_t bytes, int peer, uint32_t tag,
                      std::chrono::milliseconds timeout = kDefaultTimeout) = 0;
  virtual Status recv(void* data, size_t bytes, int peer, uint32_t tag,
                      std::chrono::milliseconds timeout = kDefaultTimeout) = 0;
  // Receives the first message of `tag` sent by any of `peers` and returns who sent it (an
  // asynchronous parameter server serves whichever worker pushes first). UNIMPLEMENTED on NCCL.
  virtual Result<int> recvFromAny(void* data, size_t bytes, std::span<const int> peers,
                                  uint32_t tag,
                                  std::chrono::milliseconds timeout = kDefaultTimeout) = 0;

  // Makes the pending call (if any) return CANCELLED promptly and every later call fail fast.
  // Tears the connections down, so peers waiting on this rank in a collective fail as well.
  // Safe to call from any thread, more than once, while the communicator is alive.
  virtual void abort() = 0;

  // True once abort() was called or a collective failed; later calls fail fast.
  virtual bool isBroken() const = 0;

 protected:
  Communicator() = default;
};

// ----------------------------------------------------------------------------------------------
// Gloo: CPU collectives over TCP.
//
// Allreduce algorithm (GlooOptions::Algorithm::kAuto): a ring (reduce-scatter then allgather)
// for buffers of kGlooRingMinBytes and more, and for two ranks: the communicator's own TCP ring
// between hosts (GlooOptions::tcpRing), Gloo's ring (pipelined in segments of at most 1 MiB)
// with tcpRing off; Gloo's bcube (recursive halving/doubling for
// power-of-two sizes) for smaller buffers with more than two ranks, where the ring's 2(n-1)
// latency-bound steps dominate.
// Measured with `bench_allreduce --algorithms` on the 2-core build machine (loopback TCP, float32,
// best of 7..64 repetitions, under load from concurrent builds, so about +-15% noise):
// - 4 ranks, 1 MiB: bcube 0.74..0.80 GB/s busbw, ring 0.69..0.72, AllreduceHalvingDoubling
//   0.75..0.88, AllreduceRingChunked 0.58..0.68. 2..8 MiB: ring and bcube within noise.
// - 4 ranks, 16..64 MiB: the ring leads (64 MiB: ring 0.88, AllreduceRingChunked 0.72,
//   AllreduceHalvingDoubling 0.70, bcube 0.53 GB/s); bcube falls to about half the ring.
// - 2 ranks: everything within noise below 16 MiB; the ring leads above (64 MiB: 1.24 vs
//   1.18 / 1.07 / 0.83 GB/s).
// The older algorithm classes (AllreduceRingChunked, AllreduceHalvingDoubling) also bind one
// buffer at construction, which a per-call API would have to cache; they are not used.
// Timeouts: every call's timeout is enforced by a watchdog of the communicator as well as by Gloo
// (this Gloo version's bcube waits with the connection timeout instead of the call's).
//
// End of life: destroying a Gloo communicator closes its connections. A peer still finishing its
// last collective then sees "Connection closed by peer". Call barrier() as the last collective
// before destroying the communicator (the caller's business: this class cannot know which
// collective is the last one).
//
// Process-wide side effect: createGlooCommunicator() sets SIGPIPE to SIG_IGN if it is at its
// default action. Gloo writes with writev(2), so a peer that goes away would otherwise kill this
// process with SIGPIPE instead of failing the collective (Python, hence PyTorch, does the same).
inline constexpr size_t kGlooRingMinBytes = size_t{2} << 20;

struct GlooOptions {
  int rank = 0;
  int size = 1;
  // Where ranks exchange their addresses. Not owned; must stay alive until
  // createGlooCommunicator() returns (it is not used after that). REQUIRES: non-null.
  KeyValueStore* store = nullptr;
  // Prefix of every key this communicator writes, so that several communicators (or attempts)
  // can share one store. Every rank of one communicator must use the same prefix.
  std::string storePrefix = "gloo/";
  // Network interface to bind (e.g. "eth0"). Takes precedence over `hostname` when set.
  std::string interface;
  // Address or host name to bind when `interface` is empty (e.g. "127.0.0.1" for tests). When
  // both are empty, Gloo binds the address this machine's host name resolves to.
  std::string hostname;
  // Rendezvous, connection set-up and the default timeout of every collective. 5 minutes: long
  // enough for a slow peer (checkpointing, loading data), short enough that a hang is reported.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
  // Allreduce algorithm; kAuto picks by size as described above.
  enum class Algorithm { kAuto, kRing, kBcube };
  Algorithm allreduceAlgorithm = Algorithm::kAuto;
  // When every rank is on this host (same host name, boot, IPC, PID and network namespaces),
  // allreduce (float32 and float16), allgather, barrier and point-to-point messages go through
  // one shared-memory segment
  // instead of TCP over loopback (the average's scale fused into the reduction). Falls back to TCP,
  // silently, when the segment cannot be made (a full /dev/shm). RINGMASTER_GLOO_SHM=0 in the
  // environment turns it off too.
  bool sharedMemory = true;
  // Between hosts (no shared memory), allreduces that would take Gloo's ring (and every one
  // between two ranks) go over a ring of TCP connections of the communicator's own, made at
  // creation through `store`: one thread sends, receives and sums, where Gloo hands each segment
  // between two threads (comm/tcp/tcp_ring.h says what that cost). RINGMASTER_TCP_RING=0 in the
  // environment turns it off.
  bool tcpRing = true;
};

// Rendezvous over `options.store`, then a full mesh of TCP connections to every other rank.
// Blocks until every rank has joined or `options.timeout` has passed.
// Errors: INVALID_ARGUMENT (bad rank/size, no store, unknown interface or host), TIMEOUT (a rank
// did not join in time: the message names the timeout and the missing rank's key), IO.
Result<std::unique_ptr<Communicator>> createGlooCommunicator(const GlooOptions& options);

// ----------------------------------------------------------------------------------------------
// NCCL: GPU collectives. Built when the CUDA toolkit (RINGMASTER_HAVE_CUDA in
// "ringmaster/config.h") and NCCL are found; otherwise createNcclCommunicator() returns
// UNIMPLEMENTED. Every buffer passed to an NCCL communicator is device memory on its GPU.
//
// Rank 0 creates the ncclUniqueId and publishes it through the store; the other ranks read it.
// The communicator is non-blocking: every call enqueues on the communicator's own CUDA stream and
// then polls the stream and ncclCommGetAsyncError, so a hung collective is aborted with
// ncclCommAbort when its timeout passes (or when abort() is called) instead of blocking forever.
// Each rank needs its own GPU (NCCL rejects two ranks of one communicator on one device).
struct NcclOptions {
  int rank = 0;
  int size = 1;
  // Not owned; must stay alive until createNcclCommunicator() returns. REQUIRES: non-null.
  KeyValueStore* store = nullptr;
  std::string storePrefix = "nccl/";
  // CUDA device ordinal; -1 picks rank % (number of visible devices).
  int device = -1;
  // Initialisation and the default timeout of every collective.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
};

// Errors: UNIMPLEMENTED (built without CUDA or NCCL), UNAVAILABLE (no usable GPU: the message says
// why), INVALID_ARGUMENT, TIMEOUT (a rank did not join in time), INTERNAL (an NCCL or CUDA error).
Result<std::unique_ptr<Communicator>> createNcclCommunicator(const NcclOptions& options);

// Number of CUDA devices this process can use; 0 when built without CUDA or when the CUDA runtime
// reports any error (no driver, driver too old, no device).
int cudaDeviceCount();

}  // namespace ringmaster::comm
