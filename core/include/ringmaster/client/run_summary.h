#pragma once
// The rows of a history list: every job, newest first, with the last value of the loss metric
// that rank 0 reported in the job's newest attempt. Reads only, but it reads the loss series of
// every job listed: call it on a thread that may block on SQLite (the I/O thread), not the GUI's.

#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "ringmaster/client/job_liveness.h"
#include "ringmaster/store/store.h"
#include "ringmaster/util/result.h"

namespace ringmaster::client {

struct RunSummary {
  store::JobRow job;
  double final_loss = std::numeric_limits<double>::quiet_NaN();  // NaN: none reported
  double best_loss = std::numeric_limits<double>::quiet_NaN();   // its lowest; NaN: none
  // Unfinished jobs only: each rank's agent and whether it was still going, so that a view can
  // tell a job whose agents went silent from one that runs (judgeLiveness).
  std::vector<RankLastKnown> ranks;
};

struct RunLoadOptions {
  std::string loss_metric = "loss";  // the metric whose last value is "final loss"
  int loss_rank = 0;                 // every rank of a data-parallel job reports the same loss
  size_t limit = 1000;               // newest jobs listed
};

Result<std::vector<RunSummary>> loadRunSummaries(store::Reader& store,
                                                 const RunLoadOptions& options = {});

}  // namespace ringmaster::client
