#pragma once
// A past training run as its agents would have journaled it, written to a real SQLite history:
// `world` ranks, 8 per host (hosts gpu01, gpu02, ...), one GPU each, `steps` steps of about 0.22 s.
// Every rank reports loss, samples_per_sec, step_time, comm_wait and lr each step, a checkpoint
// every `checkpoint_every` steps; each host a health sample (CPU, memory, 8 GPUs) every 5 steps.
// Rank `slow_rank` computes twice as slowly from half the run on. Shared by the screenshots of
// big runs and bench_gui_stall (opening a 10^5-step run).
#include <string>

#include "ringmaster/util/result.h"

namespace ringmaster::testing {

struct PastRun {
  std::string job_id;
  int world = 8;
  int steps = 300;
  int slow_rank = 5;
  int checkpoint_every = 100;
  double start = 1.76e9;  // unix seconds of its acceptance
};

inline constexpr int kPastRunRanksPerHost = 8;
std::string pastRunHost(int index);  // "gpu01" for 0

// Appends the run to the history at `db` (created when missing), a host's records at a time in
// batches, so that a long run never sits whole in memory.
Status writePastRun(const std::string& db, const PastRun& run);

}  // namespace ringmaster::testing
