#pragma once
// How the shared-memory collectives and point-to-point channels wait: spin, yield, then sleep on
// a futex (the constants below), with futex waits and wakes on a std::atomic<uint32_t> that lives
// in memory shared between processes (lock-free and address-free, so its 4 bytes are the futex
// word).

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <optional>
#include <thread>

#include "ringmaster/util/result.h"

namespace ringmaster::comm::shm {

inline constexpr size_t kLine = 64;

inline size_t roundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

// A waiting rank first spins (tens of microseconds: a peer on another core reaching the barrier
// when the ranks keep pace), then yields its core for a while (a peer without a core of its own
// gets it: ranks often outnumber cores), and only then sleeps on the futex, whose wake-up costs
// tens of microseconds more. Open MPI's shared-memory transport polls the same way.
inline constexpr int kSpins = 64;
inline constexpr auto kYieldFor = std::chrono::milliseconds(2);
// How often a waiting rank looks whether a peer's process is gone (and the longest futex sleep):
// a killed rank is noticed about as fast as a closed TCP connection would be. At 100 ms,
// bench_recovery's teardown took 137 ms instead of 36-38.
inline constexpr auto kPeerCheckEvery = std::chrono::milliseconds(5);

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static_assert(std::atomic<uint32_t>::is_always_lock_free);

// Sleeps while `atomic` holds `expected`, at most `most` (or until woken).
inline void futexWait(std::atomic<uint32_t>& atomic, uint32_t expected,
                      std::chrono::nanoseconds most) {
  timespec timeout{static_cast<time_t>(most.count() / 1'000'000'000),
                   static_cast<long>(most.count() % 1'000'000'000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&atomic), FUTEX_WAIT, expected, &timeout, nullptr,
          0);
}

inline void futexWakeAll(std::atomic<uint32_t>& atomic) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&atomic), FUTEX_WAKE, INT_MAX, nullptr, nullptr,
          0);
}

// Waits the way described above until `check()` gives a Status (nullopt: not yet), woken by a
// change of `word` (the waker increments it, then wakes if `sleepers` > 0). `peer_gone()` gives
// an error when a peer's process is gone. TIMEOUT after `deadline`, CANCELLED once `aborted`.
template <typename Check, typename PeerGone>
Status spinThenSleep(std::atomic<uint32_t>& word, std::atomic<uint32_t>& sleepers, Check&& check,
                     PeerGone&& peer_gone, std::chrono::steady_clock::time_point deadline,
                     const std::atomic<bool>& aborted) {
  using Clock = std::chrono::steady_clock;
  const auto waiting_since = Clock::now();
  auto next_check = waiting_since + kPeerCheckEvery;
  for (int spins = 0;; ++spins) {
    // The word is read before looking: a wake after the look changes it, and the sleep below then
    // returns at once instead of missing it.
    const uint32_t seen = word.load(std::memory_order_seq_cst);
    if (aborted.load(std::memory_order_relaxed)) {  // first: an abort here also breaks the group
      return Status(ErrorCode::kCancelled, "the communicator was aborted");
    }
    if (std::optional<Status> done = check()) return *done;
    if (spins < kSpins) {
      cpuRelax();
      continue;
    }
    const auto now = Clock::now();
    if (now >= deadline) return timeoutError("a peer did not take part in time");
    if (now >= next_check) {
      RM_RETURN_IF_ERROR(peer_gone());
      next_check = now + kPeerCheckEvery;
    }
    if (now - waiting_since < kYieldFor) {
      std::this_thread::yield();
      continue;
    }
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    futexWait(word, seen, std::min<Clock::duration>(deadline - now, kPeerCheckEvery));
    sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }
}

}  // namespace ringmaster::comm::shm
