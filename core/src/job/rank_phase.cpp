#include "ringmaster/job/rank_phase.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>
#include <utility>

namespace ringmaster::job {
namespace {

constexpr uint32_t kMagic = 0x484d5052;  // "RPMH": a phase file, layout 1
constexpr size_t kFileSize = 32;

// steady_clock is CLOCK_MONOTONIC: one clock for every process of the host.
int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// The file's layout; every word is naturally aligned and lock-free, so two processes may share it.
struct PhaseBoard::Words {
  std::atomic<uint32_t> magic;
  std::atomic<uint32_t> phase;
  std::atomic<uint64_t> step;
  std::atomic<int64_t> since_ns;
  uint64_t reserved;
};
static_assert(std::atomic<uint64_t>::is_always_lock_free);

const char* phaseName(RankPhase phase) {
  switch (phase) {
    case RankPhase::kStarting:
      return "starting";
    case RankPhase::kCompute:
      return "compute";
    case RankPhase::kAllreduce:
      return "allreduce";
    case RankPhase::kBroadcast:
      return "broadcast";
    case RankPhase::kBarrier:
      return "barrier";
    case RankPhase::kCheckpoint:
      return "checkpoint";
    case RankPhase::kEvaluation:
      return "evaluation";
  }
  return "unknown";
}

std::optional<RankPhase> phaseNamed(std::string_view name) {
  for (uint32_t p = 0; p <= static_cast<uint32_t>(RankPhase::kEvaluation); ++p) {
    if (name == phaseName(static_cast<RankPhase>(p))) return static_cast<RankPhase>(p);
  }
  return std::nullopt;
}

bool isCollective(RankPhase phase) {
  return phase == RankPhase::kAllreduce || phase == RankPhase::kBroadcast ||
         phase == RankPhase::kBarrier;
}

Result<PhaseBoard> PhaseBoard::open(const std::string& path) {
  static_assert(sizeof(Words) == kFileSize);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ioError("cannot create the phase file " + path + ": " + std::strerror(errno));
  void* mapped = MAP_FAILED;
  if (::ftruncate(fd, kFileSize) == 0) {
    mapped = ::mmap(nullptr, kFileSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  const int saved = errno;
  ::close(fd);
  if (mapped == MAP_FAILED) {
    return ioError("cannot map the phase file " + path + ": " + std::strerror(saved));
  }
  PhaseBoard board;
  board.words_ = new (mapped) Words{};
  board.words_->since_ns.store(nowNs(), std::memory_order_relaxed);
  board.words_->magic.store(kMagic, std::memory_order_release);
  return board;
}

PhaseBoard::PhaseBoard(PhaseBoard&& other) noexcept
    : words_(std::exchange(other.words_, nullptr)), step_(other.step_) {}

PhaseBoard& PhaseBoard::operator=(PhaseBoard&& other) noexcept {
  if (this != &other) {
    if (words_) ::munmap(words_, kFileSize);
    words_ = std::exchange(other.words_, nullptr);
    step_ = other.step_;
  }
  return *this;
}

PhaseBoard::~PhaseBoard() {
  if (words_) ::munmap(words_, kFileSize);
}

void PhaseBoard::enter(RankPhase phase, uint64_t step) {
  if (!words_) return;
  if (step != step_) {
    step_ = step;
    words_->step.store(step, std::memory_order_relaxed);
  }
  enter(phase);
}

void PhaseBoard::enter(RankPhase phase) {
  if (!words_) return;
  words_->since_ns.store(nowNs(), std::memory_order_relaxed);
  words_->phase.store(static_cast<uint32_t>(phase), std::memory_order_relaxed);
}

Result<PhaseReading> readPhase(const std::string& path) {
  // The rank owns the file: a link is not followed and a FIFO does not block the agent.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    return errno == ENOENT ? notFound("no phase file " + path)
                           : ioError("cannot read " + path + ": " + std::strerror(errno));
  }
  unsigned char bytes[kFileSize];
  const ssize_t n = ::pread(fd, bytes, sizeof bytes, 0);
  ::close(fd);
  uint32_t magic = 0;
  uint32_t phase = 0;
  uint64_t step = 0;
  int64_t since_ns = 0;
  if (n == static_cast<ssize_t>(kFileSize)) {
    std::memcpy(&magic, bytes, 4);
    std::memcpy(&phase, bytes + 4, 4);
    std::memcpy(&step, bytes + 8, 8);
    std::memcpy(&since_ns, bytes + 16, 8);
  }
  if (magic != kMagic || phase > static_cast<uint32_t>(RankPhase::kEvaluation)) {
    return invalidArgument(path + " is not a rank's phase file");
  }
  PhaseReading reading;
  reading.phase = static_cast<RankPhase>(phase);
  reading.step = step;
  reading.seconds = std::max(0.0, static_cast<double>(nowNs() - since_ns) / 1e9);
  return reading;
}

}  // namespace ringmaster::job
