#pragma once
// MergedLogReader: the logs of all ranks of a job read side by side, for the log pane's "All
// ranks" view, as `torchrun --tee` or `mpirun --tag-output` interleave them. Each rank's log is
// read from the agent that runs it (its last kStartBytes first, as `tail` would), through the
// session's I/O thread, and its complete lines are handed over in the order they arrive. Lines
// of different ranks are in arrival order: the logs carry no common clock to order them by.

#include <QObject>
#include <map>
#include <vector>

#include "bridge/session_bridge.h"  // first: it includes the protobuf code safe from Qt's `slots`
#include "dashboard/terminal_text.h"
#include "ringmaster/client/log_cursor.h"

namespace ringmaster::gui {

class MergedLogReader : public QObject {
  Q_OBJECT
 public:
  static constexpr uint64_t kStartBytes = 256 * 1024;  // of each rank's log, at the start

  // agents: rank -> the agent that runs it. stream: what of each log is handed over.
  MergedLogReader(SessionBridge* bridge, const QString& job_id,
                  const std::map<int, QString>& agents,
                  client::LogStream stream = client::LogStream::kBoth, QObject* parent = nullptr);
  // Sends a read for every rank that may have more and has none on its way.
  void poll();

 Q_SIGNALS:
  // Complete lines of one rank's log, in order (an exited rank's last line without '\n'
  // included).
  void lines(int rank, const std::vector<TerminalLine>& lines);
  void failed(int rank, const QString& error);  // a read failed (its agent down, say)

 private:
  void onChunk(uint64_t token, const QString& job_id, int rank,
               const Result<proto::LogChunk>& chunk);

  struct RankLog {
    client::LogCursor cursor;
    TerminalText terminal;
    bool started = false;            // its first answer came (the start was chosen)
    bool drop_partial_line = false;  // after skipping to the end of a long log
  };
  SessionBridge* bridge_;
  QString job_id_;
  std::map<int, RankLog> ranks_;
};

}  // namespace ringmaster::gui
