#pragma once
// What the History asks of the history file when a person archives, deletes or undoes: one
// request type, applied by one function, so the app (on the session's writer, see
// SessionBridge::editHistory) and the tests change the file the same way.

#include <string>
#include <vector>

// store.h brings in the generated protobuf header, whose Inventory::slots() Qt's `slots` keyword
// macro would eat: hide the macro while it is parsed.
#pragma push_macro("slots")
#undef slots
#include "ringmaster/store/store.h"
#pragma pop_macro("slots")

namespace ringmaster::gui {

struct RunEdit {
  enum class Kind {
    kArchive,
    kUnarchive,
    kDelete,  // marked deleted: hidden at once, restorable (kUndelete) until purged
    kUndelete,
    kPurge,     // those of job_ids still marked deleted, for good (the undo window is over)
    kPurgeAll,  // every job marked deleted (a start after a crash inside an undo window)
  };
  Kind kind = Kind::kArchive;
  std::vector<std::string> job_ids;
};

// Applies `edit` to the history; `now` (unix seconds) is when a delete is marked.
Status applyRunEdit(store::Writer& history, const RunEdit& edit, double now);

}  // namespace ringmaster::gui
