#pragma once
// The ranks' agreement on when to stop (see StopState in native_worker.h): every data-parallel
// and pipeline worker votes the same way, so that all ranks stop after the same step.

#include <cstdint>

#include "ringmaster/comm/communicator.h"
#include "ringmaster/job/rank_phase.h"
#include "worker/native_worker.h"

namespace ringmaster::agent {

// Whether the ranks stop after `step`: a rank asked to stop (options.stop) says so at the next
// step that is a multiple of kStopVoteEvery (a one-float allreduce over `comm`), and all of them
// stop there when any one asked. Without `comm` (one rank) the rank stops when asked.
Result<bool> stopVote(const WorkerOptions& options, comm::Communicator* comm,
                      job::PhaseBoard& phase, uint64_t step, bool done);

}  // namespace ringmaster::agent
