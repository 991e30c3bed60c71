#pragma once
// One rank of a native job with strategy.parameter_server, on the CPU over Gloo's point-to-point
// messages (the math: ringmaster/train/parameter_server.h). The last S ranks are servers, each
// holding one shard of the parameters and the optimizer state for it; the others are workers,
// each a train::Trainer on its share of the data (sampler rank = its rank, over the workers only)
// whose update is made remotely (TrainerOptions::remote_update).
//
// Every step a worker pushes each server the gradient of its shard with the shard's version it
// computed on, and pulls the shard back:
//   sync:  all pushes, then all pulls; a server replies once every worker has pushed (in worker
//          order), with the shard updated by their mean.
//   async: server by server, push then pull (a blocking Gloo send waits for the receiver, so a
//          worker never sends while a server waits to send to it); a server serves whichever
//          worker pushes first and replies at once: with the updated shard, or, for a push
//          staler than max_staleness, with the unchanged shard and the push refused. After its
//          last push a worker waits for every server's final shard, so that all workers end
//          (and evaluate, and checksum) the same parameters.
// Every rank starts from the same seeded initial parameters (Trainer::create), so nothing is
// broadcast first.
//
// Metrics (JSON lines, one per step): workers as every native rank (loss, lr, samples_per_sec,
// step_time, comm_time, comm_wait) plus bytes_sent and bytes_received (headers included),
// staleness and refused (async: the largest staleness of this step's pushes over the servers and
// how many of them were refused), ps_role (train::PsRole); evaluations and param_checksum as
// usual. A server reports per step (async: per N pushes, N the workers) samples_per_sec 0 (it
// trains on no data; the job's total stays the workers' sum), step_time, comm_time (waiting for
// and exchanging messages), bytes_sent, bytes_received, lr, ps_role, and async staleness (the
// largest of those pushes) and refused.
//
// Not done for parameter servers: checkpoints and resume (servers keep no checkpoint: a restarted
// attempt starts over from step 0), the SIGTERM stop vote (a collective, which asynchronous ranks
// at different steps cannot take together: SIGTERM ends a rank at once), compression of pushes,
// NCCL.
//
// Thread safety: one thread runs a rank.

#include <cstdio>

#include "ringmaster/comm/communicator.h"
#include "ringmaster/job/rank_phase.h"
#include "ringmaster/train/config.h"
#include "worker/native_worker.h"

namespace ringmaster::agent {

// REQUIRES: config.strategy.parameterServer(), comm non-null with size() == options.world_size.
Status runParameterServerRank(const train::NativeConfig& config, const WorkerOptions& options,
                              comm::Communicator* comm, job::PhaseBoard& phase, std::FILE* out,
                              std::FILE* log);

}  // namespace ringmaster::agent
