#include "dashboard/log_pane.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollBar>
#include <QShortcut>
#include <QSignalBlocker>
#include <QTextBlock>
#include <QTextDocument>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>

#include "bridge/session_bridge.h"
#include "charts/palette.h"
#include "dashboard/eliding_label.h"
#include "dashboard/log_search.h"
#include "dashboard/merged_log_reader.h"
#include "dashboard/text_style_format.h"
#include "theme.h"

namespace ringmaster::gui {
namespace {
constexpr int kPollMs = 500;
constexpr int kMaxLines = 100000;
// A read appends at most this much to the text at once (a few ms), so a long log arrives in
// short turns of the event loop, not in one stall.
constexpr uint32_t kChunkBytes = 128 * 1024;
// Of a longer log only the end is shown, as `tail` would: the pane keeps kMaxLines lines anyway.
constexpr uint64_t kTailBytes = 8ull << 20;
// A match outside the shown tail is shown in a page of the log around it: one read.
constexpr uint32_t kPageBytes = 128 * 1024;

QString megabytes(uint64_t bytes) { return QString::number(bytes / 1048576.0, 'f', 1) + " MB"; }
}  // namespace

LogPane::~LogPane() = default;

LogPane::LogPane(SessionBridge* bridge, const QString& job_id, QWidget* parent)
    : QWidget(parent), bridge_(bridge), job_id_(job_id) {
  rank_box_ = new QComboBox;
  rank_box_->setMinimumContentsLength(14);
  attempt_box_ = new QComboBox;
  attempt_box_->setToolTip(
      "Which attempt's logs: each attempt's stay on the agents that ran it, after restarts too");
  attempt_box_->hide();
  stream_box_ = new QComboBox;
  stream_box_->setObjectName("logStream");
  stream_box_->addItem("stdout + stderr", static_cast<int>(client::LogStream::kBoth));
  stream_box_->addItem("stdout", static_cast<int>(client::LogStream::kStdout));
  stream_box_->addItem("stderr", static_cast<int>(client::LogStream::kStderr));
  stream_box_->setToolTip(
      "What the ranks wrote to stdout, to stderr (tracebacks, warnings, progress bars), or both "
      "as they came");
  follow_ = new QCheckBox("Follow");
  follow_->setChecked(true);
  search_ = new QLineEdit;
  search_->setPlaceholderText("Search log (Ctrl+F; Enter: next, Shift+Enter: previous)");
  search_->setClearButtonEnabled(true);
  cancel_search_ = new QPushButton("Cancel");
  cancel_search_->setToolTip("Stop searching the whole log (Esc)");
  cancel_search_->hide();
  auto* first_error = new QPushButton("First error");
  first_error->setToolTip("Jump to the first line that looks like an error or a traceback");
  status_ = new ElidingLabel;
  status_->setObjectName("log-status");
  new_lines_button_ = new QPushButton;
  new_lines_button_->setObjectName("new-lines");
  new_lines_button_->setToolTip("Lines written since you scrolled up: jump to the end and follow");
  new_lines_button_->hide();
  text_ = new QPlainTextEdit;
  text_->setReadOnly(true);
  text_->setMaximumBlockCount(kMaxLines);
  text_->setLineWrapMode(QPlainTextEdit::NoWrap);
  text_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));

  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel("Rank"));
  bar->addWidget(rank_box_);
  bar->addWidget(attempt_box_);
  bar->addWidget(stream_box_);
  bar->addWidget(follow_);
  bar->addWidget(search_, 1);
  bar->addWidget(cancel_search_);
  bar->addWidget(first_error);
  bar->addWidget(status_);
  bar->addWidget(new_lines_button_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(bar);
  layout->addWidget(text_, 1);

  timer_ = new QTimer(this);
  timer_->setInterval(kPollMs);
  timer_->setObjectName("log-poll");
  connect(timer_, &QTimer::timeout, this, &LogPane::poll);
  timer_->start();
  connect(bridge_, &SessionBridge::logChunk, this, &LogPane::onChunk);
  connect(rank_box_, &QComboBox::currentIndexChanged, this, [this](int index) {
    if (index < 0) return;
    const int rank = rank_box_->itemData(index).toInt();
    if (rank == kAllRanks) return startMerged();
    const uint32_t attempt = selectedAttempt();
    if (rank == cursor_.rank() && attempt == attempt_) return;
    startReading(rank, agentOf(rank, attempt), attempt);
  });
  connect(attempt_box_, &QComboBox::currentIndexChanged, this, [this](int index) {
    if (index < 0) return;
    const uint32_t attempt = selectedAttempt();
    int rank = rank_box_->currentData().toInt();
    if (rank == kAllRanks) {  // the merged view is of the newest attempt: one rank of an older
      if (attempt == 0) return;
      const QSignalBlocker block(rank_box_);
      rank_box_->setCurrentIndex(0);
      rank = rank_box_->currentData().toInt();
    }
    if (rank == cursor_.rank() && attempt == attempt_) return;
    startReading(rank, agentOf(rank, attempt), attempt);
  });
  connect(stream_box_, &QComboBox::currentIndexChanged, this, [this](int index) {
    stream_ = static_cast<client::LogStream>(stream_box_->itemData(index).toInt());
    whole_search_.reset();  // its matches are of both streams
    cancel_search_->hide();
    if (merged_) return startMerged();
    if (cursor_.rank() >= 0)
      startReading(cursor_.rank(), QString::fromStdString(cursor_.agent()), attempt_);
  });
  connect(search_, &QLineEdit::returnPressed, this, &LogPane::findNext);
  connect(cancel_search_, &QPushButton::clicked, this, &LogPane::cancelSearch);
  auto* escape = new QShortcut(QKeySequence(Qt::Key_Escape), search_);
  escape->setContext(Qt::WidgetShortcut);
  connect(escape, &QShortcut::activated, this, &LogPane::cancelSearch);
  auto* next = new QShortcut(QKeySequence::FindNext, this);  // F3
  next->setContext(Qt::WidgetWithChildrenShortcut);
  connect(next, &QShortcut::activated, this, &LogPane::findNext);
  auto* back = new QShortcut(QKeySequence::FindPrevious, this);  // Shift+F3
  back->setContext(Qt::WidgetWithChildrenShortcut);
  connect(back, &QShortcut::activated, this, &LogPane::findPrevious);
  // Following again after reading a page around a match: back to the end of the log.
  connect(follow_, &QCheckBox::toggled, this, [this](bool on) {
    if (on && paged_)
      startReading(cursor_.rank(), QString::fromStdString(cursor_.agent()), attempt_);
  });
  auto* previous = new QShortcut(QKeySequence("Shift+Return"), search_);
  previous->setContext(Qt::WidgetShortcut);
  connect(previous, &QShortcut::activated, this, &LogPane::findPrevious);
  auto* find = new QShortcut(QKeySequence::Find, this);
  find->setContext(Qt::WidgetWithChildrenShortcut);
  connect(find, &QShortcut::activated, this, [this] {
    search_->setFocus();
    search_->selectAll();
  });
  connect(new_lines_button_, &QPushButton::clicked, this, &LogPane::jumpToEnd);
  connect(text_->verticalScrollBar(), &QScrollBar::valueChanged, this, [this](int value) {
    if (new_lines_ > 0 && value >= text_->verticalScrollBar()->maximum() - 2) {
      new_lines_ = 0;  // read down to the end by hand
      sayNewLines();
    }
  });
  connect(first_error, &QPushButton::clicked, this, [this] {
    if (!jumpToFirstError()) status_->setText("no error found");
  });
}

void LogPane::setRanks(const std::map<int, RankInfo>& ranks) {
  for (const auto& [rank, info] : ranks) {
    if (!info.log_tail.empty()) tails_[rank] = QString::fromStdString(info.log_tail);
    const QString agent = QString::fromStdString(info.agent);
    if (agents_.count(rank) && agents_[rank] == agent) continue;
    agents_[rank] = agent;
    const QString label = QString("rank %1 (%2)").arg(rank).arg(agent);
    const int at = rank_box_->findData(rank);
    if (at >= 0) {
      rank_box_->setItemText(at, label);
    } else {
      rank_box_->insertItem(
          rank_box_->findData(kAllRanks) >= 0 ? rank_box_->count() - 1 : rank_box_->count(), label,
          rank);
    }
  }
  if (agents_.size() > 1 && rank_box_->findData(kAllRanks) < 0) {
    rank_box_->addItem("all ranks", kAllRanks);
  }
}

void LogPane::showRank(int rank) {
  const int at = rank_box_->findData(rank);
  if (at >= 0) rank_box_->setCurrentIndex(at);
}

void LogPane::showAttempt(int rank, const QString& agent, uint32_t attempt) {
  const QSignalBlocker block_ranks(rank_box_);
  const QSignalBlocker block_attempts(attempt_box_);
  rank_box_->setCurrentIndex(rank_box_->findData(rank));
  if (const int at = attempt_box_->findData(attempt); at >= 0) attempt_box_->setCurrentIndex(at);
  startReading(rank, agent, attempt);
}

void LogPane::setAttempts(const std::map<uint32_t, std::map<int, QString>>& agents) {
  if (agents.size() == attempt_agents_.size()) {
    attempt_agents_ = agents;  // a rank of the newest attempt may have started meanwhile
    return;
  }
  attempt_agents_ = agents;
  const QSignalBlocker block(attempt_box_);
  const uint32_t selected = selectedAttempt();
  attempt_box_->clear();
  for (auto it = agents.rbegin(); it != agents.rend(); ++it) {
    const bool newest = it == agents.rbegin();
    // The newest is 0: it follows the job into its next attempt.
    attempt_box_->addItem(newest ? QString("attempt %1 (newest)").arg(it->first)
                                 : QString("attempt %1").arg(it->first),
                          newest ? 0u : it->first);
  }
  attempt_box_->setCurrentIndex(std::max(0, attempt_box_->findData(selected)));
  attempt_box_->setVisible(agents.size() > 1);
}

uint32_t LogPane::selectedAttempt() const {
  return attempt_box_->count() ? attempt_box_->currentData().toUInt() : 0;
}

QString LogPane::agentOf(int rank, uint32_t attempt) const {
  if (attempt > 0) {
    auto of_attempt = attempt_agents_.find(attempt);
    if (of_attempt != attempt_agents_.end()) {
      auto agent = of_attempt->second.find(rank);
      if (agent != of_attempt->second.end()) return agent->second;
    }
  }
  auto agent = agents_.find(rank);
  return agent != agents_.end() ? agent->second : QString();
}

void LogPane::startReading(int rank, const QString& agent, uint32_t attempt) {
  merged_.reset();
  if (rank != cursor_.rank() || attempt != attempt_) {  // another log: its search is no use
    whole_search_.reset();
    cancel_search_->hide();
  }
  cursor_ = client::LogCursor(agent.toStdString(), rank);
  cursor_.setStream(stream_);
  attempt_ = attempt;
  drop_partial_line_ = false;
  tail_only_ = false;
  paged_ = false;
  shown_from_ = 0;
  has_note_line_ = false;
  select_when_loaded_.reset();
  showing_tail_ = false;
  terminal_.clear();
  new_lines_ = 0;
  sayNewLines();
  text_->clear();
  status_->clear();
  poll();
}

int LogPane::currentRank() const { return cursor_.rank(); }
bool LogPane::showsALog() const { return merged_ || cursor_.rank() >= 0; }
QString LogPane::text() const { return text_->toPlainText(); }

void LogPane::poll() {
  if (merged_) {
    if (isVisible() && follow_->isChecked()) merged_->poll();
    return;
  }
  if (cursor_.rank() < 0 || !cursor_.wantsRead() || cursor_.agent().empty() || !isVisible()) {
    return;
  }
  // Not following: read what is there once, then stop. A page around a match is one read.
  if (!follow_->isChecked() && cursor_.caughtUp()) return;
  if (paged_ && cursor_.offset() > shown_from_) return;
  cursor_.sent(bridge_->readLog(QString::fromStdString(cursor_.agent()), job_id_, cursor_.rank(),
                                cursor_.offset(), attempt_, kChunkBytes));
}

void LogPane::onChunk(uint64_t token, const QString& job_id, int rank,
                      const Result<proto::LogChunk>& chunk) {
  if (job_id != job_id_ || rank != cursor_.rank()) return;
  const uint64_t from = cursor_.offset();
  std::optional<Result<std::string>> taken = cursor_.take(token, chunk);
  if (!taken) return;  // the answer to a read of another rank
  if (!taken->isOk()) {
    status_->setText(QString::fromStdString(taken->status().message()).left(120));
    status_->setToolTip(QString::fromStdString(taken->status().message()));
    // Its agent cannot be read (down, or the log gone): the end the history kept, said as such.
    auto tail = tails_.find(rank);
    if (attempt_ == 0 && from == 0 && text_->document()->isEmpty() && tail != tails_.end() &&
        !showing_tail_) {
      showing_tail_ = true;
      text_->setPlainText(
          QString("[%1: the last %2 lines of this log, kept in the history when the rank "
                  "exited]\n")
              .arg(QString::fromStdString(taken->status().message()).left(200))
              .arg(tail->second.count('\n')) +
          tail->second);
    }
    return;
  }
  if (showing_tail_) {  // the agent answers again: the live log replaces the kept tail
    showing_tail_ = false;
    text_->clear();
  }
  if (from == 0 && !paged_ && cursor_.size() > kTailBytes) {
    const uint64_t skipped = cursor_.size() - kTailBytes;
    cursor_.skipTo(skipped);
    drop_partial_line_ = true;
    tail_only_ = true;
    has_note_line_ = true;
    shown_from_ = skipped;
    // Ends with a newline: the last block stays the (empty) line being written.
    QTextCursor(text_->document())
        .insertText(QString("[the first %1 MB are not shown (search finds them): `ringmasterctl "
                            "logs %2 --rank %3` prints the whole log]\n")
                        .arg(skipped / (1 << 20))
                        .arg(job_id_)
                        .arg(rank));
    poll();
    return;
  }
  std::string_view data = **taken;
  if (drop_partial_line_) {
    const size_t newline = data.find('\n');
    data.remove_prefix(newline == std::string_view::npos ? data.size() : newline + 1);
    drop_partial_line_ = newline == std::string_view::npos;
    shown_from_ = from + (taken->value().size() - data.size());
  }
  if (!data.empty()) {
    std::vector<TerminalLine> lines = terminal_.feed(data);
    const size_t completed = lines.size();
    lines.push_back(terminal_.pending());
    replaceLastLine(lines, completed);
  }
  if (select_when_loaded_ && !drop_partial_line_) {
    const uint64_t match = *select_when_loaded_;
    select_when_loaded_.reset();
    selectShownMatch(match);
  }
  if (whole_search_ || paged_) {
    sayWholeSearch();
  } else {
    QString where = QString("%1 KB").arg((cursor_.offset() + 1023) / 1024);
    if (attempt_ > 0) {
      where =
          QString("attempt %1 on %2, ").arg(attempt_).arg(QString::fromStdString(cursor_.agent())) +
          where;
    }
    status_->setText(cursor_.complete() ? where + ", rank exited" : where);
  }
  if (!cursor_.complete() && !cursor_.caughtUp()) poll();  // more is there already
}

void LogPane::startMerged() {
  cursor_ = client::LogCursor();  // no rank of its own: the reader reads them all
  whole_search_.reset();
  cancel_search_->hide();
  attempt_ = 0;
  tail_only_ = paged_ = has_note_line_ = showing_tail_ = false;
  select_when_loaded_.reset();
  new_lines_ = 0;
  sayNewLines();
  text_->clear();
  status_->setText(QString("all ranks: the last %1 KB of each, then what they write")
                       .arg(MergedLogReader::kStartBytes / 1024));
  merged_ = std::make_unique<MergedLogReader>(bridge_, job_id_, agents_, stream_);
  connect(merged_.get(), &MergedLogReader::lines, this, &LogPane::appendMerged);
  connect(merged_.get(), &MergedLogReader::failed, this, [this](int rank, const QString& error) {
    status_->setText(QString("rank %1: %2").arg(rank).arg(error.left(100)));
    status_->setToolTip(error);
  });
  merged_->poll();
}

void LogPane::appendMerged(int rank, const std::vector<TerminalLine>& lines) {
  // "[r3] " in the rank's colour (as on the charts and in the rank table), then the line.
  const std::string prefix = "[r" + std::to_string(rank) + "] ";
  const QColor colour = seriesColor(rank, isDark(palette()));
  const TextStyle prefix_style{TextStyle::kRgb | (colour.rgb() & 0xffffff), 0, TextStyle::kBold};
  std::vector<TerminalLine> tagged;
  tagged.reserve(lines.size() + 1);
  for (const TerminalLine& line : lines) {
    TerminalLine& out = tagged.emplace_back();
    out.text = prefix + line.text;
    out.runs.push_back({0, prefix.size() - 1, prefix_style});
    for (StyleRun run : line.runs) {
      run.begin += prefix.size();
      out.runs.push_back(run);
    }
  }
  tagged.emplace_back();  // the text ends with a newline: the next lines go after it
  replaceLastLine(tagged, lines.size());
}

void LogPane::replaceLastLine(const std::vector<TerminalLine>& lines, size_t completed) {
  QScrollBar* bar = text_->verticalScrollBar();
  const bool at_end = bar->value() >= bar->maximum() - 2;
  QTextCursor cursor(text_->document());
  cursor.beginEditBlock();
  cursor.movePosition(QTextCursor::End);
  cursor.movePosition(QTextCursor::StartOfBlock, QTextCursor::KeepAnchor);
  cursor.removeSelectedText();
  insertLines(cursor, lines);
  cursor.endEditBlock();
  if (at_end && follow_->isChecked()) {
    bar->setValue(bar->maximum());
  } else {
    new_lines_ += completed;
    sayNewLines();
  }
}

void LogPane::insertLines(QTextCursor& cursor, const std::vector<TerminalLine>& lines) {
  const QTextCharFormat plain;  // not the format of the text before the cursor
  QString run_of_plain;         // plain lines go in together: one insert for most chunks
  for (size_t i = 0; i < lines.size(); ++i) {
    const TerminalLine& line = lines[i];
    const bool last = i + 1 == lines.size();
    if (line.runs.empty()) {
      run_of_plain += QString::fromUtf8(line.text.data(), static_cast<int>(line.text.size()));
      if (!last) run_of_plain += '\n';
      continue;
    }
    cursor.insertText(run_of_plain, plain);
    run_of_plain.clear();
    size_t at = 0;
    const auto insert = [&](size_t begin, size_t end, const QTextCharFormat& format) {
      if (end > begin) {
        cursor.insertText(
            QString::fromUtf8(line.text.data() + begin, static_cast<int>(end - begin)), format);
      }
    };
    for (const StyleRun& run : line.runs) {
      insert(at, run.begin, plain);
      insert(run.begin, run.begin + run.length, charFormat(run.style, text_->palette()));
      at = run.begin + run.length;
    }
    insert(at, line.text.size(), plain);
    if (!last) cursor.insertText(QStringLiteral("\n"), plain);
  }
  cursor.insertText(run_of_plain, plain);
}

void LogPane::sayNewLines() {
  new_lines_button_->setVisible(new_lines_ > 0);
  if (new_lines_ > 0) {
    new_lines_button_->setText(QString("%1 new line%2 \u2193")
                                   .arg(QLocale().toString(static_cast<qulonglong>(new_lines_)),
                                        new_lines_ == 1 ? "" : "s"));
  }
}

void LogPane::jumpToEnd() {
  follow_->setChecked(true);
  text_->verticalScrollBar()->setValue(text_->verticalScrollBar()->maximum());
  new_lines_ = 0;
  sayNewLines();
}

bool LogPane::jumpToFirstError() {
  static const QRegularExpression kError(
      R"((Traceback|[Ee]rror|ERROR|[Ee]xception|FAILED|[Ff]atal|Segmentation fault|Killed))");
  QTextCursor found = text_->document()->find(kError, 0);
  if (found.isNull()) return false;
  follow_->setChecked(false);
  text_->setTextCursor(found);
  text_->centerCursor();
  return true;
}

void LogPane::findNext() { find(true); }
void LogPane::findPrevious() { find(false); }

void LogPane::find(bool forward) {
  const QString needle = search_->text();
  if (needle.isEmpty()) return;
  follow_->setChecked(false);  // or the next chunk scrolls away from the match
  // One stream shown: the text is not the log's bytes in a row, so the whole-log search's
  // offsets would not find their place in it.
  if ((!tail_only_ && !paged_) || stream_ != client::LogStream::kBoth) {
    return findInShownText(needle, forward);
  }
  // Only part of the log is shown: search all of it, on the agent's copy.
  if (!whole_search_ || whole_search_->needle() != needle) return startWholeSearch(needle);
  const std::vector<uint64_t>& matches = whole_search_->matches();
  if (matches.empty()) return sayWholeSearch();
  if (match_index_ >= matches.size()) {
    match_index_ = forward ? 0 : matches.size() - 1;
  } else {
    match_index_ = (match_index_ + (forward ? 1 : matches.size() - 1)) % matches.size();
  }
  goToMatch(matches[match_index_]);
}

void LogPane::findInShownText(const QString& needle, bool forward) {
  const QTextDocument::FindFlags flags =
      forward ? QTextDocument::FindFlags() : QTextDocument::FindBackward;
  bool found = text_->find(needle, flags);
  if (!found) {
    text_->moveCursor(forward ? QTextCursor::Start : QTextCursor::End);  // wrap around
    found = text_->find(needle, flags);
  }
  sayWhereFound(found);
}

void LogPane::startWholeSearch(const QString& needle) {
  whole_search_ = std::make_unique<LogSearch>(
      bridge_, job_id_, QString::fromStdString(cursor_.agent()), cursor_.rank(), attempt_, needle);
  match_index_ = kNoMatch;
  connect(whole_search_.get(), &LogSearch::progressed, this, &LogPane::onSearchProgress);
  connect(whole_search_.get(), &LogSearch::done, this, &LogPane::onSearchProgress);
  cancel_search_->show();
  whole_search_->start();
  sayWholeSearch();
}

void LogPane::cancelSearch() {
  if (whole_search_) whole_search_->cancel();
}

void LogPane::onSearchProgress() {
  const std::vector<uint64_t>& matches = whole_search_->matches();
  if (match_index_ == kNoMatch && !matches.empty()) {  // the first match: show it at once
    match_index_ = 0;
    goToMatch(matches[0]);
  }
  if (whole_search_->finished()) cancel_search_->hide();
  sayWholeSearch();
}

void LogPane::goToMatch(uint64_t offset) {
  if (!selectShownMatch(offset)) loadPageAround(offset);
  sayWholeSearch();
}

bool LogPane::selectShownMatch(uint64_t offset) {
  const QString needle = whole_search_ ? whole_search_->needle() : QString();
  QTextDocument* document = text_->document();
  // Shown when its bytes have been read, and no line was dropped from the top of the text
  // (the pane keeps kMaxLines): then it is the k-th match after where the text starts.
  if (needle.isEmpty() || offset < shown_from_ || offset + needle.size() > cursor_.offset() ||
      document->blockCount() >= kMaxLines) {
    return false;
  }
  const std::vector<uint64_t>& matches = whole_search_->matches();
  const auto first = std::lower_bound(matches.begin(), matches.end(), shown_from_);
  const auto k = std::lower_bound(matches.begin(), matches.end(), offset) - first;
  QTextCursor found(has_note_line_ ? document->findBlockByNumber(1) : document->begin());
  for (ptrdiff_t i = 0; i <= k && !found.isNull(); ++i) found = document->find(needle, found);
  if (found.isNull()) return false;
  text_->setTextCursor(found);
  text_->centerCursor();
  return true;
}

void LogPane::loadPageAround(uint64_t offset) {
  const uint64_t start = offset > kPageBytes / 2 ? offset - kPageBytes / 2 : 0;
  cursor_ = client::LogCursor(cursor_.agent(), cursor_.rank());  // an answer on its way is dropped
  cursor_.setStream(stream_);
  cursor_.skipTo(start);
  paged_ = true;
  tail_only_ = false;
  has_note_line_ = false;
  shown_from_ = start;
  drop_partial_line_ = start > 0;
  select_when_loaded_ = offset;
  terminal_.clear();
  new_lines_ = 0;
  sayNewLines();
  text_->clear();
  poll();
}

void LogPane::sayWholeSearch() {
  QString text;
  if (whole_search_) {
    const LogSearch& search = *whole_search_;
    const QString count = QLocale().toString(static_cast<qulonglong>(search.matches().size())) +
                          (search.capped() ? "+" : "");
    const QString scanned = megabytes(search.searched());
    if (!search.error().isEmpty()) {
      text = QString("search stopped at %1: %2").arg(scanned, search.error().left(120));
    } else if (search.cancelled()) {
      text = QString("search cancelled at %1: %2 matches").arg(scanned, count);
    } else if (!search.finished()) {
      text = QString("searching the whole log: %1 of %2, %3 matches")
                 .arg(scanned, search.total() ? megabytes(search.total()) : "?", count);
    } else if (search.matches().empty()) {
      text = QString("not found in the whole log (%1)").arg(megabytes(search.total()));
    } else {
      text = QString("%1 matches in the whole log (%2)").arg(count, megabytes(search.total()));
    }
    if (match_index_ < search.matches().size()) {
      text = QString("match %1 of %2; ")
                 .arg(QLocale().toString(static_cast<qulonglong>(match_index_ + 1)), count) +
             text;
    }
  }
  if (paged_) {
    text += QString("%1showing %2 around the match; tick Follow for the end")
                .arg(text.isEmpty() ? "" : " · ", megabytes(shown_from_));
  }
  status_->setText(text);
  status_->setToolTip(text);
}

void LogPane::sayWhereFound(bool found) {
  const QString needle = search_->text();
  const QString where = tail_only_ ? QStringLiteral(
                                         " in the last %1 MB shown (`ringmasterctl "
                                         "logs` has the whole log)")
                                         .arg(kTailBytes >> 20)
                                   : QString();
  if (!found) {
    status_->setText("not found" + where);
    return;
  }
  const QString text = text_->toPlainText();
  const int total = text.count(needle, Qt::CaseInsensitive);
  const int before =
      text.left(text_->textCursor().selectionStart()).count(needle, Qt::CaseInsensitive);
  status_->setText(QString("match %1 of %2%3").arg(before + 1).arg(total).arg(where));
}

}  // namespace ringmaster::gui
