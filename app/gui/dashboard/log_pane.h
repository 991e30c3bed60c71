#pragma once
// The log of one rank of a job (any attempt), or of all its ranks at once, read from the agents
// that run them in chunks through the I/O thread: follow (new output appears as it is written),
// search (Ctrl+F; Enter or F3 next, Shift+Enter or Shift+F3 previous, "3 of 12"), and jump to the
// first error. Of a log longer than the pane keeps (its last 8 MB), search covers the whole log
// off the GUI thread (LogSearch: progress, count, Esc cancels), and a match before the shown end
// is shown in a page of the log read around it. Shown as a terminal would show it: ANSI colours
// drawn, a progress bar redrawn with '\r' one line (TerminalText). Scrolled up while new lines
// arrive, "N new lines ↓" says how many and jumps back to the end. The stream box shows what the
// ranks wrote to stdout, to stderr, or both as they came.

#include <QWidget>
#include <map>
#include <memory>
#include <optional>

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

class ElidingLabel;
class LogSearch;
class MergedLogReader;
class SessionBridge;

class LogPane : public QWidget {
  Q_OBJECT
 public:
  LogPane(SessionBridge* bridge, const QString& job_id, QWidget* parent = nullptr);
  ~LogPane() override;
  void setRanks(const std::map<int, RankInfo>& ranks);  // keeps the selected rank
  void showRank(int rank);                              // the newest attempt's log of `rank`
  // The log an earlier attempt's rank left on `agent` (a failure's culprit after a restart).
  void showAttempt(int rank, const QString& agent, uint32_t attempt);
  // Each attempt's ranks and the agents that ran them (from the job's rank_started events): the
  // attempt box lists them once there are two or more.
  void setAttempts(const std::map<uint32_t, std::map<int, QString>>& agents);
  int currentRank() const;  // -1 in the "all ranks" view
  bool showsALog() const;   // one rank's log or all ranks' logs
  // Scrolls to the first line that looks like an error; false when there is none (yet).
  bool jumpToFirstError();
  QString text() const;

 private:
  void poll();
  void onChunk(uint64_t token, const QString& job_id, int rank,
               const Result<proto::LogChunk>& chunk);
  void findNext();
  void findPrevious();
  // Of a log shown whole, in the text; of a longer one, in all of it (LogSearch).
  void find(bool forward);
  void findInShownText(const QString& needle, bool forward);
  void startWholeSearch(const QString& needle);
  void cancelSearch();
  void onSearchProgress();
  // Selects the match at this log offset: in the text when it is shown, else in a page of the
  // log read around it.
  void goToMatch(uint64_t offset);
  bool selectShownMatch(uint64_t offset);
  void loadPageAround(uint64_t offset);
  // "match 3 of 1,204; searching the whole log: 45.0 of 214.0 MB" and the like.
  void sayWholeSearch();
  // "match 3 of 12" for the selection just found; the tail's limit when there is none.
  void sayWhereFound(bool found);
  void startReading(int rank, const QString& agent, uint32_t attempt);
  uint32_t selectedAttempt() const;  // 0: the newest
  QString agentOf(int rank, uint32_t attempt) const;
  // "all ranks": every rank's lines as they come, each after "[rN] " in the rank's colour.
  void startMerged();
  void appendMerged(int rank, const std::vector<TerminalLine>& lines);
  // The text's last line (the one being written, or empty) becomes `lines`; follows the end, or
  // counts the `completed` lines among them as new ones below the user's place.
  void replaceLastLine(const std::vector<TerminalLine>& lines, size_t completed);
  // Appends terminal lines at `cursor`, each styled run in its colours; no '\n' after the last.
  void insertLines(QTextCursor& cursor, const std::vector<TerminalLine>& lines);
  void sayNewLines();  // "N new lines ↓" while scrolled up, hidden at the end
  void jumpToEnd();

  SessionBridge* bridge_;
  QString job_id_;
  std::map<int, QString> agents_;                              // rank -> agent
  std::map<uint32_t, std::map<int, QString>> attempt_agents_;  // attempt -> rank -> agent
  std::map<int, QString> tails_;  // rank -> the end of its log, from the history
  bool showing_tail_ = false;     // text_ holds a tail from the history, not the live log
  client::LogCursor cursor_;      // the shown rank's place in its log
  client::LogStream stream_ = client::LogStream::kBoth;  // what of the logs is shown
  uint32_t attempt_ = 0;                                 // of the shown log; 0: the newest
  bool drop_partial_line_ = false;                       // after skipping to the tail of a long log
  bool tail_only_ = false;                               // the log's start was skipped (kTailBytes)
  bool has_note_line_ = false;                           // text_'s first line says so
  bool paged_ = false;                          // text_ holds a page of the log around a match
  uint64_t shown_from_ = 0;                     // the log offset of text_'s first line
  std::optional<uint64_t> select_when_loaded_;  // a match to select once its page is read
  std::unique_ptr<LogSearch> whole_search_;     // of the shown log, when it is not all shown
  std::unique_ptr<MergedLogReader> merged_;     // "all ranks" is shown
  static constexpr int kAllRanks = -1;          // the rank box's entry for the merged view
  static constexpr size_t kNoMatch = static_cast<size_t>(-1);
  size_t match_index_ = kNoMatch;  // the selected one of whole_search_'s matches
  TerminalText terminal_;          // the last block of text_ is its pending line
  size_t new_lines_ = 0;           // completed lines that arrived below the shown part
  QComboBox* rank_box_;
  QComboBox* attempt_box_;
  QComboBox* stream_box_;  // stdout + stderr, stdout, stderr
  QCheckBox* follow_;
  QLineEdit* search_;
  ElidingLabel* status_;  // never widens the window, however long the search's word
  QPushButton* cancel_search_;
  QPushButton* new_lines_button_;
  QPlainTextEdit* text_;
  QTimer* timer_;
};

}  // namespace ringmaster::gui
