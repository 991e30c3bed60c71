#pragma once
// LogSearch: finds a text in a rank's whole log, however long, without holding up the GUI. The
// log is read from its agent in 4 MB chunks through the session's I/O thread, and each chunk is
// scanned on a worker thread (client::LogMatcher) while the next one is on its way. It searches
// the log as long as it was when the search began; a running rank's later output is for the
// next search. Signals progress as it goes, so the pane can show the count and the first match
// long before the end.

#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <optional>
#include <string>
#include <vector>

#include "bridge/session_bridge.h"  // first: it includes the protobuf code safe from Qt's `slots`
#include "ringmaster/client/log_cursor.h"
#include "ringmaster/client/log_matcher.h"

namespace ringmaster::gui {

class LogSearch : public QObject {
  Q_OBJECT
 public:
  // More matches than this are counted no further ("1,000,000+"): their offsets take 8 MB.
  static constexpr size_t kMaxMatches = 1'000'000;

  LogSearch(SessionBridge* bridge, const QString& job_id, const QString& agent, int rank,
            uint32_t attempt, const QString& needle, QObject* parent = nullptr);
  ~LogSearch() override;  // stops, waiting for the chunk being scanned

  void start();
  void cancel();  // no more reads or scans; done() follows

  const QString& needle() const { return needle_; }
  // The log offsets where matches start, in order: all of them once finished().
  const std::vector<uint64_t>& matches() const { return matches_; }
  bool capped() const { return matches_.size() >= kMaxMatches; }
  uint64_t searched() const { return searched_; }  // bytes scanned so far
  uint64_t total() const { return total_; }        // what will be searched (0: not known yet)
  bool finished() const { return finished_; }
  bool cancelled() const { return cancelled_; }
  const QString& error() const { return error_; }  // why it stopped early, when it did

 Q_SIGNALS:
  void progressed();  // more scanned (and maybe more matches)
  void done();        // finished, cancelled or failed

 private:
  void onChunk(uint64_t token, const QString& job_id, int rank,
               const Result<proto::LogChunk>& chunk);
  void readNext();
  void scan(uint64_t offset, std::string data);
  void onScanned();
  void finish(const QString& error);

  SessionBridge* bridge_;
  QString job_id_;
  uint32_t attempt_;
  QString needle_;
  client::LogCursor cursor_;
  client::LogMatcher matcher_;  // used by the scanning thread only while a scan runs
  QFutureWatcher<std::vector<uint64_t>> scanning_;
  std::optional<std::pair<uint64_t, std::string>> read_ahead_;  // read while the last is scanned
  std::vector<uint64_t> matches_;
  // A scan was started and its result not taken yet. Not scanning_.isRunning(): that turns false
  // before the finished signal arrives, and a new setFuture() then drops the unread result.
  bool scan_busy_ = false;
  uint64_t scanning_end_ = 0;  // of the chunk being scanned
  uint64_t searched_ = 0;
  uint64_t total_ = 0;
  bool finished_ = false;
  bool cancelled_ = false;
  QString error_;
};

}  // namespace ringmaster::gui
