#include "outcome_news.h"

#include <QSettings>
#include <QStringList>

namespace ringmaster::gui {

bool OutcomeNews::take(const QString& job_id, double ended_at) {
  if (ended_at > 0 && ended_at < app_started_ - kStartSlackSeconds) return false;
  QSettings settings;
  QStringList told = settings.value(kAnnouncedKey).toStringList();
  if (told.contains(job_id)) return false;
  told.append(job_id);
  while (told.size() > kMaxKept) told.removeFirst();
  settings.setValue(kAnnouncedKey, told);
  return true;
}

}  // namespace ringmaster::gui
