#pragma once
// OutcomeNews: whether a job's outcome (succeeded, failed, stopped) is news worth a banner. It is
// once: not when the banner told of it already, in this run of the app or an earlier one (kept in
// QSettings), and not when the job ended before this app started. After a relaunch an old
// "twinB stopped" came back as its dashboard was restored, and opening a long-finished run popped
// "flood8 succeeded"; the History tells of those.
//
// Thread safety: GUI thread only (QSettings of the app).

#include <QString>

namespace ringmaster::gui {

class OutcomeNews {
 public:
  static constexpr const char* kAnnouncedKey = "banner/announcedOutcomes";  // QStringList of ids
  static constexpr int kMaxKept = 500;  // the newest; a job older than that is long over
  // A job that ended this close before the app started may not have been seen by the last one.
  static constexpr double kStartSlackSeconds = 5;

  // app_started: when this app started, in Unix seconds.
  explicit OutcomeNews(double app_started) : app_started_(app_started) {}

  // True once per job: when its outcome, which came at `ended_at` (Unix seconds; 0 when not
  // known), is news. Then it counts as told.
  bool take(const QString& job_id, double ended_at);

 private:
  double app_started_;
};

}  // namespace ringmaster::gui
