#include "worker/stop_vote.h"

namespace ringmaster::agent {

Result<bool> stopVote(const WorkerOptions& options, comm::Communicator* comm,
                      job::PhaseBoard& phase, uint64_t step, bool done) {
  if (!options.stop || done || options.stop->load() == kStopKills) return false;
  const bool asked = options.stop->load() == kStopAsked;
  if (!comm) return asked;
  if (step % kStopVoteEvery != 0) return false;
  float vote = asked ? 1.0f : 0.0f;
  // A collective like the gradients': a rank stopped just after its gradient allreduce holds
  // the others here, and the hang verdict must say they wait, not that they compute.
  phase.enter(job::RankPhase::kAllreduce);
  RM_RETURN_IF_ERROR(comm->allreduce(&vote, 1, comm::ReduceOp::kSum));
  return vote > 0;
}

}  // namespace ringmaster::agent
