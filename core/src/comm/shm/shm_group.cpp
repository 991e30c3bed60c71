#include "comm/shm/shm_group.h"

#include <fcntl.h>
#include <gloo/types.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "comm/shm/futex.h"
#include "comm/shm/sum_kernels.h"
#include "ringmaster/comm/shm_segments.h"

namespace ringmaster::comm::shm {
namespace {

std::string errnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

struct ShmGroup::Header {
  alignas(kLine) std::atomic<uint32_t> arrived{0};
  alignas(kLine) std::atomic<uint32_t> generation{0};
  alignas(kLine) std::atomic<uint32_t> sleepers{0};
  alignas(kLine) std::atomic<uint32_t> broken{0};
  alignas(kLine) int32_t pids[1];  // one per rank: the segment is sized for them
};

size_t ShmGroup::headerBytes(int size) {
  return roundUp(offsetof(Header, pids) + sizeof(int32_t) * static_cast<size_t>(size), kLine);
}

Result<std::unique_ptr<ShmGroup>> ShmGroup::create(int rank, int size, const ShareName& share_name,
                                                   const Agree& agree, size_t slot_bytes) {
  slot_bytes = std::min(slot_bytes, kMaxSegmentBytes / static_cast<size_t>(size + 1));
  slot_bytes = std::max<size_t>(4096, slot_bytes / kLine * kLine);
  const size_t bytes =
      headerBytes(size) + slot_bytes * static_cast<size_t>(size + 1) + mailboxBytes(size);

  std::string name;
  std::string error;
  int fd = -1;
  if (rank == 0) {
    std::random_device random;
    name = segmentPrefix(getpid()) + std::to_string(random()) + std::to_string(random());
    fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
      error = errnoText("creating shared memory " + name);
    } else if (int rc = ftruncate(fd, static_cast<off_t>(bytes)) != 0
                            ? errno
                            : posix_fallocate(fd, 0, static_cast<off_t>(bytes));
               rc != 0) {
      // Without the pages reserved, a full /dev/shm would kill a rank with SIGBUS mid-step.
      error =
          "reserving " + std::to_string(bytes >> 10) + " KB of shared memory: " + std::strerror(rc);
    }
    if (!error.empty()) {
      if (fd >= 0) shm_unlink(name.c_str());  // made but unusable: not left in /dev/shm
      name.clear();                           // tells the others
    }
  }
  RM_RETURN_IF_ERROR(share_name(&name));
  if (name.empty() && error.empty()) error = "rank 0 could not create the shared memory";
  if (rank != 0 && error.empty()) {
    fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) error = errnoText("opening shared memory " + name);
  }
  void* base = MAP_FAILED;
  if (error.empty()) {
    base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) error = errnoText("mapping shared memory " + name);
  }
  if (fd >= 0) close(fd);
  std::unique_ptr<ShmGroup> group;
  if (base != MAP_FAILED) {
    group.reset(new ShmGroup(rank, size, base, bytes, slot_bytes / sizeof(float)));
    group->header_->pids[rank] = static_cast<int32_t>(getpid());
  }
  // Every rank has mapped it (or failed): the name can go. Nothing is left behind by a crash.
  Result<bool> everyone = agree(error.empty());
  if (rank == 0 && !name.empty()) shm_unlink(name.c_str());
  RM_RETURN_IF_ERROR(everyone.status());
  if (!error.empty()) return Status(ErrorCode::kUnavailable, error);
  if (!*everyone) return Status(ErrorCode::kUnavailable, "a peer could not map the shared memory");
  return group;
}

ShmGroup::ShmGroup(int rank, int size, void* base, size_t bytes, size_t slot_floats)
    : rank_(rank),
      size_(size),
      base_(base),
      bytes_(bytes),
      slot_floats_(slot_floats),
      header_(static_cast<Header*>(base)) {
  mailbox_offset_ = headerBytes(size) + slot_floats * sizeof(float) * static_cast<size_t>(size + 1);
}

ShmGroup::~ShmGroup() { munmap(base_, bytes_); }

float* ShmGroup::slot(int rank) const {
  return reinterpret_cast<float*>(static_cast<char*>(base_) + headerBytes(size_) +
                                  slot_floats_ * sizeof(float) * static_cast<size_t>(rank));
}

float* ShmGroup::result() const { return slot(size_); }

const float* const* ShmGroup::inputsAt(size_t offset, const float* own) {
  inputs_.resize(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) inputs_[static_cast<size_t>(r)] = slot(r) + offset;
  if (own != nullptr) inputs_[static_cast<size_t>(rank_)] = own;
  return inputs_.data();
}

Status ShmGroup::barrier(Clock::time_point deadline, const std::atomic<bool>& aborted) {
  return wait(deadline, aborted);
}

void ShmGroup::markBroken() {
  header_->broken.store(1, std::memory_order_release);
  header_->generation.fetch_add(1, std::memory_order_seq_cst);  // wakes waits at once
  futexWakeAll(header_->generation);
  for (int r = 0; r < size_; ++r) ring(r);  // and point-to-point waits
}

bool ShmGroup::brokenFlag() const { return header_->broken.load(std::memory_order_acquire) != 0; }

Status ShmGroup::peerGone() const {
  for (int r = 0; r < size_; ++r) {
    const int32_t pid = header_->pids[r];
    if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) {
      return ioError("the process of rank " + std::to_string(r) + " (pid " + std::to_string(pid) +
                     ") is gone");
    }
  }
  return Status::ok();
}

Status ShmGroup::wait(Clock::time_point deadline, const std::atomic<bool>& aborted) {
  const uint32_t generation = header_->generation.load(std::memory_order_acquire);
  const auto brokenStatus = [] { return ioError("a peer failed or was aborted"); };
  if (header_->broken.load(std::memory_order_acquire)) return brokenStatus();
  if (header_->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 ==
      static_cast<uint32_t>(size_)) {
    header_->arrived.store(0, std::memory_order_relaxed);
    header_->generation.fetch_add(1, std::memory_order_seq_cst);
    if (header_->sleepers.load(std::memory_order_seq_cst) > 0) futexWakeAll(header_->generation);
    return Status::ok();
  }
  return spinThenSleep(
      header_->generation, header_->sleepers,
      [&]() -> std::optional<Status> {
        if (header_->generation.load(std::memory_order_acquire) == generation) return std::nullopt;
        return header_->broken.load(std::memory_order_acquire) ? brokenStatus() : Status::ok();
      },
      [this] { return peerGone(); }, deadline, aborted);
}

Status ShmGroup::allreduce(float* data, size_t count, float scale, Clock::time_point deadline,
                           const std::atomic<bool>& aborted) {
  if (count <= std::min(kSmallBytes / sizeof(float), slot_floats_ / 2)) {
    return allreduceSmall(data, count, scale, deadline, aborted);
  }
  if (small_reads_pending_) {  // the slots are about to be overwritten whole: see allreduceSmall
    RM_RETURN_IF_ERROR(wait(deadline, aborted));
    small_reads_pending_ = false;
  }
  const size_t line_floats = kLine / sizeof(float);
  for (size_t offset = 0; offset < count; offset += slot_floats_) {
    const size_t n = std::min(slot_floats_, count - offset);
    float* chunk = data + offset;
    // This rank's share, whole cache lines apart from its neighbours' writes.
    const size_t share = roundUp((n + static_cast<size_t>(size_) - 1) / size_, line_floats);
    const size_t lo = std::min(n, share * static_cast<size_t>(rank_));
    const size_t hi = std::min(n, lo + share);
    // Peers read only their shares of this rank's slot: its own share stays in `data`.
    std::memcpy(slot(rank_), chunk, lo * sizeof(float));
    std::memcpy(slot(rank_) + hi, chunk + hi, (n - hi) * sizeof(float));
    RM_RETURN_IF_ERROR(wait(deadline, aborted));
    // This rank's share of the sum, into its buffer and into the result area for the peers.
    float* out = result();
    sumScaled(chunk + lo, out + lo, inputsAt(lo, chunk + lo), size_, hi - lo, scale);
    RM_RETURN_IF_ERROR(wait(deadline, aborted));
    std::memcpy(chunk, out, lo * sizeof(float));
    std::memcpy(chunk + hi, out + hi, (n - hi) * sizeof(float));
  }
  return Status::ok();
}

// One barrier instead of two: every rank writes its buffer into its slot, and after the barrier
// every rank sums all slots itself, in rank order (so every rank gets the same floats, bit for
// bit). The slots alternate between two halves from call to call: a rank writing a half again
// two calls later has passed the barrier of the call between, which every rank reached only
// after reading that half. A large allreduce, which writes whole slots, first waits once more.
Status ShmGroup::allreduceSmall(float* data, size_t count, float scale, Clock::time_point deadline,
                                const std::atomic<bool>& aborted) {
  const size_t base = (small_calls_++ % 2) * (slot_floats_ / 2);
  std::memcpy(slot(rank_) + base, data, count * sizeof(float));
  RM_RETURN_IF_ERROR(wait(deadline, aborted));
  sumScaled(data, nullptr, inputsAt(base, nullptr), size_, count, scale);
  small_reads_pending_ = true;
  return Status::ok();
}

Status ShmGroup::allreduceHalf(uint16_t* data, size_t count, float scale,
                               Clock::time_point deadline, const std::atomic<bool>& aborted) {
  if (small_reads_pending_) {  // whole slots are about to be overwritten: see allreduceSmall
    RM_RETURN_IF_ERROR(wait(deadline, aborted));
    small_reads_pending_ = false;
  }
  const size_t slot_halves = slot_floats_ * 2;
  const size_t line_halves = kLine / sizeof(uint16_t);
  for (size_t offset = 0; offset < count; offset += slot_halves) {
    const size_t n = std::min(slot_halves, count - offset);
    std::memcpy(slot(rank_), data + offset, n * sizeof(uint16_t));
    RM_RETURN_IF_ERROR(wait(deadline, aborted));
    const size_t share = roundUp((n + static_cast<size_t>(size_) - 1) / size_, line_halves);
    const size_t lo = std::min(n, share * static_cast<size_t>(rank_));
    const size_t hi = std::min(n, lo + share);
    auto* out = reinterpret_cast<uint16_t*>(result());
    for (size_t i = lo; i < hi; ++i) {
      float sum = 0.0f;
      ::gloo::float16 value;
      for (int r = 0; r < size_; ++r) {
        value.x = reinterpret_cast<const uint16_t*>(slot(r))[i];
        sum += ::gloo::cpu_half2float(value);
      }
      out[i] = ::gloo::cpu_float2half_rn(sum * scale).x;
    }
    RM_RETURN_IF_ERROR(wait(deadline, aborted));
    std::memcpy(data + offset, out, n * sizeof(uint16_t));
  }
  return Status::ok();
}

Status ShmGroup::allgather(const void* send, void* recv, size_t bytes, Clock::time_point deadline,
                           const std::atomic<bool>& aborted) {
  auto* out = static_cast<char*>(recv);
  const size_t slot_bytes = slot_floats_ * sizeof(float);
  if (bytes <= slot_bytes / 2) {  // one barrier, the slot halves alternating (allreduceSmall)
    const size_t base = (small_calls_++ % 2) * (slot_floats_ / 2);
    std::memcpy(slot(rank_) + base, send, bytes);
    RM_RETURN_IF_ERROR(wait(deadline, aborted));
    for (int r = 0; r < size_; ++r) {
      std::memcpy(out + static_cast<size_t>(r) * bytes, slot(r) + base, bytes);
    }
    small_reads_pending_ = true;
    return Status::ok();
  }
  if (small_reads_pending_) {
    RM_RETURN_IF_ERROR(wait(deadline, aborted));
    small_reads_pending_ = false;
  }
  const auto* in = static_cast<const char*>(send);
  for (size_t offset = 0; offset < bytes; offset += slot_bytes) {
    const size_t n = std::min(slot_bytes, bytes - offset);
    // `send` may alias this rank's part of `recv`: it is only ever overwritten with itself.
    std::memcpy(slot(rank_), in + offset, n);
    RM_RETURN_IF_ERROR(wait(deadline, aborted));
    for (int r = 0; r < size_; ++r) {
      std::memcpy(out + static_cast<size_t>(r) * bytes + offset, slot(r), n);
    }
    RM_RETURN_IF_ERROR(wait(deadline, aborted));  // nobody refills a slot still being read
  }
  return Status::ok();
}

}  // namespace ringmaster::comm::shm

namespace ringmaster::comm {

std::string segmentPrefix(pid_t creator) { return "/ringmaster-" + std::to_string(creator) + "-"; }

int removeSegmentsOf(pid_t creator) {
  const std::string prefix = segmentPrefix(creator).substr(1);  // as /dev/shm lists it
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.compare(0, prefix.size(), prefix) == 0 && shm_unlink(("/" + name).c_str()) == 0) {
      ++removed;
    }
  }
  return removed;
}

}  // namespace ringmaster::comm
