#pragma once
// ShmGroup: allreduce (float32 and float16), allgather and barrier between the ranks of one
// communicator that share a host, through one shared-memory segment instead of TCP over loopback.
// Gloo has no shared-memory transport, so two ranks on one machine paid two kernel copies and a
// loopback round trip per segment (about 1 ms for a 52 KB gradient against a 0.06 ms step); Open
// MPI's vader and NCCL's SHM path show what shared memory buys.
//
// The segment holds a barrier, one slot per rank and a result area. Up to kSmallBytes, every rank
// copies its buffer into its slot, and after one barrier sums every slot itself. Larger float32
// allreduces go in chunks of a slot, each rank owning a 1/size share of the chunk: every rank
// copies the others' shares of its chunk into its slot; barrier; each rank sums its own share
// (its own part read from its buffer, the others' from their slots, in rank order, the
// average's scale applied in the same pass) into its buffer and the result area; barrier;
// every rank copies the others' shares of the result out. No byte is copied that no other rank
// reads, and no system call is made while the ranks keep pace (the barrier spins briefly before
// it sleeps on a futex). The sums are comm/shm/sum_kernels.h.
//
// Point-to-point (shm_point_to_point.cpp): one channel per ordered pair of ranks, a message
// going through it in chunks of the channel's size, each rank with a doorbell its senders and
// receivers ring (a futex word it sleeps on). A receiver asked for one tag keeps a message of
// another tag from the same peer aside until it is asked for, so tags match as over Gloo. A send
// returns once its last chunk is in the channel.
//
// Failure: a rank that times out, is aborted or finds a peer process gone marks the segment
// broken, which ends every peer's wait at once (the communicator is then broken, as for Gloo). A
// segment is unlinked as soon as every rank has mapped it, so none is left behind by a crash.
//
// Thread-safety: allreduce() from one thread at a time (the communicator's collectives are);
// markBroken() from any thread.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ringmaster/util/result.h"

namespace ringmaster::comm::shm {

class ShmGroup {
 public:
  using Clock = std::chrono::steady_clock;
  // Sends rank 0's segment name to every rank (in: rank 0's name; out: everyone's), over the
  // communicator's existing connections.
  using ShareName = std::function<Status(std::string* name)>;
  // Every rank calls it once it has mapped the segment, or failed to: true when every rank did
  // (an allreduce over the communicator's connections), so all ranks decide alike.
  using Agree = std::function<Result<bool>(bool ok_here)>;

  // A segment for `size` ranks with slots of at most `slot_bytes` (smaller when /dev/shm is
  // small: the whole segment stays under kMaxSegmentBytes).
  // UNAVAILABLE (on every rank) when some rank could not make or map it.
  static Result<std::unique_ptr<ShmGroup>> create(int rank, int size, const ShareName& share_name,
                                                  const Agree& agree,
                                                  size_t slot_bytes = kDefaultSlotBytes);
  ~ShmGroup();
  ShmGroup(const ShmGroup&) = delete;
  ShmGroup& operator=(const ShmGroup&) = delete;

  static constexpr size_t kDefaultSlotBytes = size_t{256} << 10;
  static constexpr size_t kMaxSegmentBytes = size_t{32} << 20;  // Docker's /dev/shm is 64 MB
  // Up to this size an allreduce takes one barrier (every rank sums every slot) instead of two.
  static constexpr size_t kSmallBytes = size_t{64} << 10;

  // data[i] = scale * sum over ranks of their data[i], in place. Errors: TIMEOUT (a peer did not
  // take part before `deadline`), CANCELLED (`aborted` became true), IO (a peer failed or its
  // process is gone). Any error leaves the group broken.
  Status allreduce(float* data, size_t count, float scale, Clock::time_point deadline,
                   const std::atomic<bool>& aborted);
  // The same for IEEE half values (fp16 gradient compression): each element summed over the ranks
  // in float, in rank order, scaled, and rounded to half once. Always in chunks of a slot.
  Status allreduceHalf(uint16_t* data, size_t count, float scale, Clock::time_point deadline,
                       const std::atomic<bool>& aborted);
  // recv + r * bytes receives rank r's `bytes` bytes at `send` (which may alias this rank's
  // part of recv). Up to half a slot it takes one barrier, like a small allreduce; larger ones go
  // in chunks of a slot, two barriers each. The same errors.
  Status allgather(const void* send, void* recv, size_t bytes, Clock::time_point deadline,
                   const std::atomic<bool>& aborted);
  // Returns once every rank has entered it; the same errors.
  Status barrier(Clock::time_point deadline, const std::atomic<bool>& aborted);
  // Communicator::send / recv / recvFromAny through the channels; the same errors, and
  // INVALID_ARGUMENT when the message of `tag` has another size than `bytes`.
  Status send(const void* data, size_t bytes, int peer, uint32_t tag, Clock::time_point deadline,
              const std::atomic<bool>& aborted);
  Status recv(void* data, size_t bytes, int peer, uint32_t tag, Clock::time_point deadline,
              const std::atomic<bool>& aborted);
  Result<int> recvFromAny(void* data, size_t bytes, std::span<const int> peers, uint32_t tag,
                          Clock::time_point deadline, const std::atomic<bool>& aborted);
  // Ends every peer's wait; later calls fail. Any thread.
  void markBroken();

 private:
  struct Header;
  struct Bell;
  struct Channel;
  static size_t headerBytes(int size);  // the header and one pid per rank, whole cache lines
  // Data bytes of one channel (smaller with more ranks: size^2 channels), and all the channels
  // with their heads and the bells.
  static size_t channelBytes(int size);
  static size_t mailboxBytes(int size);
  Bell* bell(int rank) const;
  Channel* channel(int from, int to) const;
  void ring(int rank);
  // Waits until `ready()`, woken by this rank's bell; the same errors as wait().
  template <typename Ready>
  Status waitForBell(Ready&& ready, Clock::time_point deadline, const std::atomic<bool>& aborted);
  // Reads the message at the head of `peer`'s channel to this rank (of message_bytes) into `out`.
  Status takeMessage(int peer, char* out, Clock::time_point deadline,
                     const std::atomic<bool>& aborted);
  // A message of `tag` from `peer` kept aside, if any, copied into data (sizes checked).
  std::optional<Status> takeAside(int peer, uint32_t tag, void* data, size_t bytes);
  // Moves messages of other tags at the head of `peer`'s channel aside; true when the head is
  // a message of `tag`.
  Result<bool> headIs(int peer, uint32_t tag, Clock::time_point deadline,
                      const std::atomic<bool>& aborted);
  ShmGroup(int rank, int size, void* base, size_t bytes, size_t slot_floats);
  Status wait(Clock::time_point deadline, const std::atomic<bool>& aborted);
  Status allreduceSmall(float* data, size_t count, float scale, Clock::time_point deadline,
                        const std::atomic<bool>& aborted);
  Status peerGone() const;  // IO when a peer's process has exited, else OK
  bool brokenFlag() const;  // markBroken() was called here or by a peer
  float* slot(int rank) const;
  float* result() const;
  // Every rank's slot + offset, in rank order (kept in inputs_), this rank's replaced by `own`
  // unless it is null.
  const float* const* inputsAt(size_t offset, const float* own);

  const int rank_;
  const int size_;
  void* const base_;
  const size_t bytes_;
  const size_t slot_floats_;
  Header* const header_;
  size_t mailbox_offset_ = 0;  // where the bells and channels start in the segment
  std::map<std::pair<int, uint32_t>, std::deque<std::vector<char>>> aside_;  // (peer, tag)
  uint64_t small_calls_ = 0;          // which half of the slots the next small one uses
  bool small_reads_pending_ = false;  // peers may still read the last small one's slots
  std::vector<const float*> inputs_;  // inputsAt's answer, kept to spare an allocation a call
};

}  // namespace ringmaster::comm::shm
