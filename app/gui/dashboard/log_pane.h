#pragma once
// The log of one rank of a job, read from the agent that runs it in chunks through the I/O
// thread: follow (new output appears as it is written), search (Ctrl+F; Enter next, Shift+Enter
// previous, "3 of 12"), and jump to the first error. Shown as a terminal would show it: ANSI
// colours drawn, a progress bar redrawn with '\r' one line (TerminalText). Scrolled up while
// new lines arrive, "N new lines ↓" says how many and jumps back to the end.

#include <QWidget>
#include <map>

#include "dashboard/job_data.h"
#include "dashboard/terminal_text.h"
#include "ringmaster/client/log_cursor.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QTextCursor;
class QTimer;

namespace ringmaster::gui {

class SessionBridge;

class LogPane : public QWidget {
  Q_OBJECT
 public:
  LogPane(SessionBridge* bridge, const QString& job_id, QWidget* parent = nullptr);
  void setRanks(const std::map<int, RankInfo>& ranks);  // keeps the selected rank
  void showRank(int rank);                              // the newest attempt's log of `rank`
  // The log an earlier attempt's rank left on `agent` (a failure's culprit after a restart).
  void showAttempt(int rank, const QString& agent, uint32_t attempt);
  int currentRank() const;
  // Scrolls to the first line that looks like an error; false when there is none (yet).
  bool jumpToFirstError();
  QString text() const;

 private:
  void poll();
  void onChunk(uint64_t token, const QString& job_id, int rank,
               const Result<proto::LogChunk>& chunk);
  void findNext();
  void findPrevious();
  // "match 3 of 12" for the selection just found; the tail's limit when there is none.
  void sayWhereFound(bool found);
  void startReading(int rank, const QString& agent, uint32_t attempt);
  // Appends terminal lines at `cursor`, each styled run in its colours; no '\n' after the last.
  void insertLines(QTextCursor& cursor, const std::vector<TerminalLine>& lines);
  void sayNewLines();  // "N new lines ↓" while scrolled up, hidden at the end
  void jumpToEnd();

  SessionBridge* bridge_;
  QString job_id_;
  std::map<int, QString> agents_;   // rank -> agent
  std::map<int, QString> tails_;    // rank -> the end of its log, from the history
  bool showing_tail_ = false;       // text_ holds a tail from the history, not the live log
  client::LogCursor cursor_;        // the shown rank's place in its log
  uint32_t attempt_ = 0;            // of the shown log; 0: the newest
  bool drop_partial_line_ = false;  // after skipping to the tail of a long log
  bool tail_only_ = false;          // the log's start was skipped (kTailBytes)
  TerminalText terminal_;           // the last block of text_ is its pending line
  size_t new_lines_ = 0;            // completed lines that arrived below the shown part
  QComboBox* rank_box_;
  QCheckBox* follow_;
  QLineEdit* search_;
  QLabel* status_;
  QPushButton* new_lines_button_;
  QPlainTextEdit* text_;
  QTimer* timer_;
};

}  // namespace ringmaster::gui
