#include "history/run_edit.h"

namespace ringmaster::gui {

Status applyRunEdit(store::Writer& history, const RunEdit& edit, double now) {
  switch (edit.kind) {
    case RunEdit::Kind::kArchive:
      return history.setArchived(edit.job_ids, true);
    case RunEdit::Kind::kUnarchive:
      return history.setArchived(edit.job_ids, false);
    case RunEdit::Kind::kDelete:
      return history.markDeleted(edit.job_ids, now);
    case RunEdit::Kind::kUndelete:
      return history.undelete(edit.job_ids);
    case RunEdit::Kind::kPurge:
      return history.purgeDeleted(edit.job_ids).status();
    case RunEdit::Kind::kPurgeAll:
      return history.purgeAllDeleted().status();
  }
  return invalidArgument("applyRunEdit: unknown kind");
}

}  // namespace ringmaster::gui
