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
//   async: server by server, push then pull, each (server, worker) pair on a Gloo communicator
//          of its own; a server serves each worker from a thread of its own (the shard under a
//          mutex), so a worker that is slow to push or to take its reply holds up nobody else
//          (a blocking send waits for its receiver: one server thread for all workers made
//          every worker wait for a straggler). A server replies at once: with the updated shard,
//          or, for a push staler than max_staleness, with the unchanged shard and the push
//          refused. With max_lead, a worker more than that many pushes ahead of the others
//          (the upper median of those still going) gets its reply only once they catch up.
//          Workers do not take a fixed number of steps: server 0 takes the job's
//          pushes (N workers x the spec's steps, as many gradients as the synchronous job) and
//          answers each later one with done, unapplied; the worker then tells the other servers
//          it leaves. A fast worker takes more steps than a slow one (each draws from its own
//          share of the data, epoch after epoch, at most N times the spec's length). Once every
//          worker has left, each server sends every worker the final shard, so that all workers
//          end (and evaluate, and checksum) the same parameters.
// Every rank starts from the same seeded initial parameters (Trainer::create), so nothing is
// broadcast first.
//
// Wire: a push is a 24-byte header and the gradient's shard, a reply a 40-byte header and the
// parameters' shard (float32).
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
// Thread safety: one thread runs a rank (an async server starts one more per worker and joins
// them).

#include <cstdio>

#include "ringmaster/comm/communicator.h"
#include "ringmaster/job/rank_phase.h"
#include "ringmaster/train/config.h"
#include "worker/native_worker.h"

namespace ringmaster::agent {

// REQUIRES: config.strategy.parameterServer(), comm non-null with size() == options.world_size;
// `store`: the job's rendezvous store (async ranks make their pair communicators through it).
Status runParameterServerRank(const train::NativeConfig& config, const WorkerOptions& options,
                              comm::KeyValueStore* store, comm::Communicator* comm,
                              job::PhaseBoard& phase, std::FILE* out, std::FILE* log);

}  // namespace ringmaster::agent
