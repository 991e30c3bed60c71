#pragma once
// TcpRing: float32 and float16 allreduce between ranks on different hosts over plain TCP
// connections of its own, driven by the calling thread with poll(2): rank r sends to rank r+1 and
// receives from rank r-1 (mod size) on two one-way connections, reduce-scatter then allgather (the
// bandwidth-optimal ring, each rank sending and receiving 2(n-1)/n of the buffer).
//
// Why not Gloo's ring over Gloo's connections: Gloo reads on a device thread that hands each
// segment to the calling thread, and while the calling thread writes a segment it holds the
// connection's lock, so the device thread, woken by the peer's data on the same connection, spins
// on epoll_wait (level-triggered, the lock only tried): 480,000 epoll_wait calls a second in a
// 2-rank job on 2 cores, and a 5.3 MB allreduce took 7-9 ms of a 15.5 ms step. Here one thread
// sends, receives and sums, in pieces as they arrive: 2.5-2.8 ms for the same 5.3 MB on loopback.
//
// Every rank gets the same floats bit for bit: each chunk is summed (and scaled) by one rank and
// then copied to the others.
//
// Connections are made at create() through the job's rendezvous store (which only the job's
// ranks can reach): each rank listens on its address (the one Gloo binds) on a port of the
// kernel's choosing, and publishes the address with a random token; a rank connecting to its next
// presents the token it read there, so nothing else that reaches the port can pose as a rank.
// The listener is closed once the previous rank is in. Like Gloo's, the data is not encrypted.
//
// Failure: a peer that closes its connection (a crashed or aborted process) fails the call at
// once, naming the rank; a deadline passes as TIMEOUT; shutdown() (from any thread) ends every
// wait here and, through the closed connections, the peers' waits too.
//
// Thread-safety: allreduce() from one thread at a time (the communicator's collectives are);
// shutdown() from any thread.

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ringmaster/comm/store.h"
#include "ringmaster/util/result.h"

namespace ringmaster::comm::tcp {

class TcpRing {
 public:
  using Clock = std::chrono::steady_clock;

  // Connects the ring of `size` >= 2 ranks: listens on `address` (its port is ignored),
  // publishes it under `key_prefix` + "ring/" + rank in `store`, connects to the next rank and
  // accepts the previous one, all before `deadline`.
  // Errors: TIMEOUT (a rank did not publish or connect in time: named), IO (a socket call
  // failed), INVALID_ARGUMENT (a published address that does not parse).
  static Result<std::unique_ptr<TcpRing>> create(int rank, int size,
                                                 const sockaddr_storage& address,
                                                 KeyValueStore& store,
                                                 const std::string& key_prefix,
                                                 Clock::time_point deadline);
  ~TcpRing();
  TcpRing(const TcpRing&) = delete;
  TcpRing& operator=(const TcpRing&) = delete;

  // data[i] = (sum over ranks of data[i]) * scale on every rank.
  // Errors: TIMEOUT (`deadline` passed), CANCELLED (`aborted` became true or shutdown() was
  // called), IO (a peer closed its connection or a socket call failed: the message names it).
  Status allreduce(float* data, size_t count, float scale, Clock::time_point deadline,
                   const std::atomic<bool>& aborted);
  // The same for IEEE halves, rounded after each addition and after the scale (as Gloo's ring).
  Status allreduceHalf(uint16_t* data, size_t count, float scale, Clock::time_point deadline,
                       const std::atomic<bool>& aborted);

  // Shuts both connections down: this rank's waits end, and its neighbours see the end of their
  // streams. Idempotent; the descriptors are closed by the destructor.
  void shutdown();

 private:
  TcpRing(int rank, int size, int to_next, int from_prev);

  // The ring of either allreduce: `add(target, incoming, n, factor)` folds n received elements
  // into the chunk being summed (factor: the scale on the last step, else 1).
  template <typename T, typename Add>
  Status ring(T* data, size_t count, float scale, Add&& add, Clock::time_point deadline,
              const std::atomic<bool>& aborted);
  // Sends [send, send + send_bytes) to the next rank while receiving recv_bytes from the previous
  // one into `recv`; `received(bytes)` is called as the received prefix grows (in pieces of
  // kPieceBytes and at the end).
  template <typename Received>
  Status exchange(const char* send, size_t send_bytes, char* recv, size_t recv_bytes,
                  Received&& received, Clock::time_point deadline,
                  const std::atomic<bool>& aborted);

  const int rank_;
  const int size_;
  const int to_next_;    // written only
  const int from_prev_;  // read only
  std::atomic<bool> shut_{false};
  std::vector<char> incoming_;  // a chunk received during the reduce-scatter
};

}  // namespace ringmaster::comm::tcp
