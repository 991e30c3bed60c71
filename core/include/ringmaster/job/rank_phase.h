#pragma once
// Where a native rank is in its training loop, for hang verdicts: which step, and whether it is
// computing or waiting in which collective, since when. A hung rank cannot say so itself, so the
// worker keeps a 32-byte file (RINGMASTER_PHASE_FILE, in the attempt's dir) up to date through a
// shared mapping: an update is two relaxed atomic stores and a clock read, no system call. The
// agent reads the file when it judges progress.
//
// The words are written one at a time, so a reader may see a phase with the previous step or
// start time for the moment of an update. That is harmless here: a verdict is about a rank stuck
// in one place for seconds.

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ringmaster/util/result.h"

namespace ringmaster::job {

enum class RankPhase : uint32_t {
  kStarting = 0,  // rendezvous, connecting, resuming from a checkpoint
  kCompute = 1,   // forward, backward, optimizer
  kAllreduce = 2,
  kBroadcast = 3,
  kBarrier = 4,
  kCheckpoint = 5,
  kEvaluation = 6,
};

// "starting", "compute", "allreduce", ...
const char* phaseName(RankPhase phase);
// The phase of a name phaseName() gave; nullopt for any other text.
std::optional<RankPhase> phaseNamed(std::string_view name);
// True for phases spent waiting for the other ranks.
bool isCollective(RankPhase phase);

// The writer, in the worker. Without a path (or when the file cannot be made) it does nothing:
// training never fails for want of a phase file.
class PhaseBoard {
 public:
  PhaseBoard() = default;
  static Result<PhaseBoard> open(const std::string& path);
  PhaseBoard(PhaseBoard&& other) noexcept;
  PhaseBoard& operator=(PhaseBoard&& other) noexcept;
  ~PhaseBoard();

  // From now on the rank is in `phase` of step `step` (the step it is working on: completed + 1).
  void enter(RankPhase phase, uint64_t step);
  // The same step, another phase.
  void enter(RankPhase phase);

 private:
  struct Words;
  Words* words_ = nullptr;
  uint64_t step_ = 0;
};

struct PhaseReading {
  RankPhase phase = RankPhase::kStarting;
  uint64_t step = 0;
  double seconds = 0;  // in this phase, until the reading
};

// The rank's phase, read from its file. Not found before the worker made it; invalid for a file
// that is not a phase file.
Result<PhaseReading> readPhase(const std::string& path);

}  // namespace ringmaster::job
