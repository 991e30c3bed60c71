#pragma once
// Reads the History view's rows from a store: every job, newest first, with the last value of
// the loss metric that rank 0 reported in the job's newest attempt. Reads only, but it reads the
// loss series of every job: call it on a thread that may block on SQLite (the I/O thread), not
// on the GUI thread.

#include <string>
#include <vector>

#include "history/history_model.h"
// store.h brings in the generated protobuf header, whose Inventory::slots() Qt's `slots` keyword
// macro would eat: hide the macro while it is parsed, whatever the includer included first.
#pragma push_macro("slots")
#undef slots
#include "ringmaster/store/store.h"
#pragma pop_macro("slots")
#include "ringmaster/util/result.h"

namespace ringmaster::gui {

struct RunLoadOptions {
  std::string loss_metric = "loss";  // the metric whose last value is "Final loss"
  int loss_rank = 0;                 // every rank of a data-parallel job reports the same loss
};

Result<std::vector<RunSummary>> loadRunSummaries(store::Store& store,
                                                 const RunLoadOptions& options = {});

}  // namespace ringmaster::gui
