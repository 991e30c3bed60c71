// LogPane against a real agent: a rank's whole log arrives through the session in chunks, the
// first error is found, and of a log longer than the pane keeps only the end is read.
// Qt's `slots` keyword macro would eat AgentProcess::slots(): this comes before any Qt header.
#include "harness.h"
// Qt and the app.
#include <gtest/gtest.h>

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollBar>
#include <QTest>
#include <QTextBlock>
#include <functional>

#include "bridge/session_bridge.h"
#include "charts/palette.h"
#include "dashboard/log_pane.h"
#include "dashboard/log_search.h"
#include "dashboard/text_style_format.h"
#include "qt_wait.h"
#include "theme.h"

namespace ringmaster::gui {
namespace {

class LogPaneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(cluster_.addAgent("a1", 1, &error)) << error;
    client::ClientPaths paths;
    paths.cluster_file = cluster_.clusterPath();
    paths.db_file = cluster_.dbPath();
    paths.config_dir = cluster_.configDir();
    ASSERT_TRUE(bridge_.start(paths).isOk());
  }

  // Runs a one-rank command job to its end; returns its id.
  QString runJob(const std::string& script) {
    const std::string spec =
        cluster_.writeSpec("job.yaml", "name: logs\nlauncher: command\ncommand: [/bin/sh, -c, '" +
                                           script + "']\nplacement:\n  - {agent: a1, ranks: 1}\n");
    auto submitted = cluster_.ctl({"submit", spec, "--wait"}, 60000);
    EXPECT_EQ(submitted.exit_code, 1) << submitted.err;  // the scripts end with a failure
    return QString::fromStdString(submitted.firstLine());
  }

  // A pane showing rank 0 of the job, as the dashboard's Logs tab does.
  std::unique_ptr<LogPane> openPane(const QString& job) {
    auto pane = std::make_unique<LogPane>(&bridge_, job);
    RankInfo info;
    info.rank = 0;
    info.agent = "a1";
    pane->setRanks({{0, info}});
    pane->resize(900, 500);
    pane->show();
    pane->showRank(0);
    return pane;
  }

  // The pane's status line (position in the log, search results).
  static QString statusText(const LogPane& pane) {
    for (const QLabel* label : pane.findChildren<QLabel*>()) {
      if (label->text() != "Rank") return label->text();
    }
    return {};
  }

  testing::Cluster cluster_;
  SessionBridge bridge_;
};

TEST_F(LogPaneTest, ShowsTheWholeLogInOrderAndJumpsToTheFirstError) {
  const QString job = runJob(
      "for i in $(seq 1 12000); do echo \"line $i of the log\"; done; "
      "echo \"Traceback (most recent call last):\"; echo \"ValueError: bad batch\"; exit 1");
  auto pane = openPane(job);
  ASSERT_TRUE(waitFor([&] { return pane->text().contains("ValueError: bad batch"); }, 30000))
      << pane->text().right(200).toStdString();
  const QString text = pane->text();
  // 12,000 lines (250 KB: two reads), each once and in order.
  int at = -1;
  for (int i = 1; i <= 12000; ++i) {
    const int next = text.indexOf(QString("line %1 of the log\n").arg(i));
    ASSERT_GT(next, at) << "line " << i;
    at = next;
  }
  EXPECT_TRUE(pane->jumpToFirstError());

  // Search: Ctrl+F to the box, Enter the next match, Shift+Enter the previous (wrapping), and
  // where it is among all of them.
  auto* search = pane->findChild<QLineEdit*>();
  ASSERT_NE(search, nullptr);
  QTest::keyClick(pane.get(), Qt::Key_F, Qt::ControlModifier);
  EXPECT_TRUE(search->hasFocus());
  search->setText("0 of the log");  // lines 10, 20, ... 12000
  QTextCursor start = pane->findChild<QPlainTextEdit*>()->textCursor();
  start.movePosition(QTextCursor::Start);
  pane->findChild<QPlainTextEdit*>()->setTextCursor(start);
  QTest::keyClick(search, Qt::Key_Return);
  EXPECT_TRUE(statusText(*pane).startsWith("match 1 of 1200")) << statusText(*pane).toStdString();
  QTest::keyClick(search, Qt::Key_Return, Qt::ShiftModifier);
  EXPECT_TRUE(statusText(*pane).startsWith("match 1200 of 1200"))
      << statusText(*pane).toStdString();
  search->setText("no such line");
  QTest::keyClick(search, Qt::Key_Return);
  EXPECT_EQ(statusText(*pane), "not found");
}

// What a terminal shows: colours drawn, a progress bar redrawn with \r one line in its last
// state (the whole run of updates arrives in one chunk or several).
TEST_F(LogPaneTest, ShowsColouredOutputAndProgressBarsAsATerminalWould) {
  const QString job = runJob(
      "printf \"\\033[1;32mstarting\\033[0m\\n\"; "
      "for p in 10 20 30 40 50 60 70 80 90 100; do printf \"\\r%3d%%|progress\" $p; "
      "sleep 0.05; done; printf \"\\nepoch done\\n\"; exit 1");
  auto pane = openPane(job);
  ASSERT_TRUE(waitFor([&] { return pane->text().contains("epoch done"); }, 30000))
      << pane->text().toStdString();
  EXPECT_EQ(pane->text(), "starting\n100%|progress\nepoch done\n");
  const QTextBlock first = pane->findChild<QPlainTextEdit*>()->document()->firstBlock();
  const QTextFragment starting = first.begin().fragment();
  EXPECT_EQ(starting.text(), "starting");
  EXPECT_EQ(starting.charFormat().foreground().color(),
            ansiColour(TextStyle::kIndexed | 2, isDark(pane->palette())));
  EXPECT_EQ(starting.charFormat().fontWeight(), QFont::Bold);
  // The colour was reset: the next line is in the pane's own colours.
  EXPECT_FALSE(
      first.next().begin().fragment().charFormat().hasProperty(QTextFormat::ForegroundBrush));
}

// Scrolled up while a rank writes: the pane stays where the user is, says how many lines
// arrived below, and jumps back to the end (following again) on a click.
TEST_F(LogPaneTest, ScrolledUpSaysHowManyNewLinesArrivedAndJumpsToTheEnd) {
  const std::string spec = cluster_.writeSpec(
      "live.yaml",
      "name: live\nlauncher: command\ncommand: [/bin/sh, -c, 'for i in $(seq 1 600); do echo "
      "\"line $i\"; sleep 0.05; done']\nplacement:\n  - {agent: a1, ranks: 1}\n");
  auto submitted = cluster_.ctl({"submit", spec}, 60000);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  auto pane = openPane(QString::fromStdString(submitted.firstLine()));
  auto* text = pane->findChild<QPlainTextEdit*>();
  auto* jump = pane->findChild<QPushButton*>("new-lines");
  ASSERT_NE(jump, nullptr);
  ASSERT_TRUE(waitFor([&] { return pane->text().contains("line 80\n"); }, 30000));
  EXPECT_FALSE(jump->isVisible());
  QScrollBar* bar = text->verticalScrollBar();
  bar->setValue(0);
  ASSERT_TRUE(waitFor([&] { return jump->isVisible(); }, 10000));
  EXPECT_EQ(bar->value(), 0);  // where the user is
  EXPECT_TRUE(QRegularExpression("^\\d+ new lines? \u2193$").match(jump->text()).hasMatch())
      << jump->text().toStdString();
  QTest::mouseClick(jump, Qt::LeftButton);
  EXPECT_EQ(bar->value(), bar->maximum());
  EXPECT_FALSE(jump->isVisible());
  const int lines_before = text->document()->blockCount();
  ASSERT_TRUE(waitFor([&] { return text->document()->blockCount() > lines_before + 5; }, 10000));
  EXPECT_EQ(bar->value(), bar->maximum());  // following again
  EXPECT_FALSE(jump->isVisible());
  cluster_.ctl({"stop", submitted.firstLine()}, 30000);
}

// A rank whose agent is down: the end of its log that the history kept, said as such.
TEST_F(LogPaneTest, WithItsAgentDownShowsTheEndTheHistoryKept) {
  const QString job = runJob("echo \"loading data\"; echo \"CUDA error: out of memory\"; exit 1");
  cluster_.agent("a1").kill();
  auto pane = std::make_unique<LogPane>(&bridge_, job);
  RankInfo info;
  info.rank = 0;
  info.agent = "a1";
  info.log_tail = "loading data\nCUDA error: out of memory\n";  // as JobData has it
  pane->setRanks({{0, info}});
  pane->resize(900, 500);
  pane->show();
  pane->showRank(0);
  ASSERT_TRUE(waitFor([&] { return pane->text().contains("CUDA error: out of memory"); }, 30000))
      << pane->text().toStdString() << statusText(*pane).toStdString();
  EXPECT_TRUE(pane->text().contains("the last 2 lines of this log, kept in the history"))
      << pane->text().toStdString();
}

TEST_F(LogPaneTest, OfALongLogReadsOnlyTheEndAndSaysWhatItLeftOut) {
  // About 12 MB: more than the pane shows (8 MB), then a last line to wait for.
  const QString job = runJob(
      "i=0; while [ $i -lt 12 ]; do head -c 1048576 /dev/zero | tr \"\\\\0\" x | fold -w 99; "
      "i=$((i+1)); done; echo; echo \"the last line\"; exit 1");
  auto pane = openPane(job);
  ASSERT_TRUE(waitFor([&] { return pane->text().contains("the last line"); }, 60000));
  const QString text = pane->text();
  EXPECT_TRUE(text.startsWith("[the first ")) << text.left(200).toStdString();
  EXPECT_TRUE(text.contains("ringmasterctl logs " + job + " --rank 0"));
  EXPECT_LT(text.size(), 9 << 20);
  // The first line shown after the note is a whole line, not the end of a cut one.
  const QStringList lines = text.split('\n');
  ASSERT_GT(lines.size(), 2);
  EXPECT_EQ(lines[1].size(), 99) << lines[1].toStdString();
}

// A log longer than the pane keeps: search covers all of it (the first megabytes included) off
// the GUI thread, a match outside the shown end is shown in a page read around it, F3 and
// Shift+F3 step through the matches, and Follow returns to the end.
TEST_F(LogPaneTest, SearchesTheWholeOfALongLogAndShowsMatchesBeforeTheShownEnd) {
  const QString job = runJob(
      "echo \"Needle at the start\"; i=0; while [ $i -lt 12 ]; do head -c 1048576 /dev/zero | "
      "tr \"\\\\0\" x | fold -w 99; echo; echo \"needle $i\"; i=$((i+1)); done; "
      "echo \"the last line\"; exit 1");
  auto pane = openPane(job);
  ASSERT_TRUE(waitFor([&] { return pane->text().contains("the last line"); }, 60000));
  ASSERT_FALSE(pane->text().contains("Needle at the start"));  // not in the shown 8 MB
  auto* search = pane->findChild<QLineEdit*>();
  auto* text = pane->findChild<QPlainTextEdit*>();
  const auto selectedLine = [&] { return text->textCursor().block().text(); };
  search->setText("NEEDLE");
  QTest::keyClick(search, Qt::Key_Return);
  ASSERT_TRUE(waitFor(
      [&] {
        return statusText(*pane).startsWith(
            "match 1 of 13; 13 matches in "
            "the whole log");
      },
      30000))
      << statusText(*pane).toStdString();
  ASSERT_TRUE(waitFor([&] { return selectedLine() == "Needle at the start"; }, 10000))
      << selectedLine().toStdString();
  EXPECT_EQ(text->textCursor().selectedText(), "Needle");
  EXPECT_TRUE(statusText(*pane).contains("around the match")) << statusText(*pane).toStdString();
  // Issue 61: the search's status line widened the window past the screen (1280 -> 1559 px). It
  // fits in the window it came in, and no text of it, however long, sets the window's width.
  const int searching = pane->minimumSizeHint().width();
  EXPECT_LE(searching, 900);
  EXPECT_LE(pane->width(), 900);
  auto* status = pane->findChild<QLabel*>("log-status");
  ASSERT_NE(status, nullptr);
  status->setText(QString(3000, 'x'));
  EXPECT_EQ(pane->minimumSizeHint().width(), searching);

  QTest::keyClick(text, Qt::Key_F3);
  ASSERT_TRUE(waitFor([&] { return selectedLine() == "needle 0"; }, 10000))
      << selectedLine().toStdString();
  EXPECT_TRUE(statusText(*pane).startsWith("match 2 of 13")) << statusText(*pane).toStdString();
  QTest::keyClick(text, Qt::Key_F3, Qt::ShiftModifier);
  QTest::keyClick(text, Qt::Key_F3, Qt::ShiftModifier);  // wraps to the last
  ASSERT_TRUE(waitFor([&] { return selectedLine() == "needle 11"; }, 10000))
      << selectedLine().toStdString();
  EXPECT_TRUE(statusText(*pane).startsWith("match 13 of 13")) << statusText(*pane).toStdString();

  auto* follow = pane->findChild<QCheckBox*>();
  follow->setChecked(true);
  ASSERT_TRUE(waitFor([&] { return pane->text().contains("the last line"); }, 30000))
      << statusText(*pane).toStdString() << "\n"
      << pane->text().left(300).toStdString();
  EXPECT_TRUE(pane->text().startsWith("[the first ")) << pane->text().left(100).toStdString();
}

// The pane as a person sees it (build/screenshots/log-view.png, in docs/): a training log with
// coloured levels, a tqdm bar redrawn in place, a traceback, and a search of it.
TEST_F(LogPaneTest, Screenshot) {
  const QString job = runJob(
      "G=\"\\033[32m\"; Y=\"\\033[33m\"; R=\"\\033[1;31m\"; D=\"\\033[2m\"; N=\"\\033[0m\"; "
      "for e in 1 2 3; do printf \"${D}2026-11-26 03:12:0$e${N} ${G}INFO${N} epoch $e: loss "
      "0.$((90 - e * 20)) acc 0.$((60 + e * 9))\\n\"; for p in 25 50 75 100; do printf "
      "\"\\rtrain: %3d%%|\\033[36m%s\\033[0m| $p/100\" $p $(printf \"%*s\" $((p / 5)) \"\" | "
      "tr \" \" \"#\"); done; printf \"\\n\"; done; "
      "printf \"${Y}WARNING${N} rank 3 data loader slow (2.1 s per batch)\\n\"; "
      "printf \"${R}ERROR${N} NaN loss at step 3072\\n\"; "
      "printf \"Traceback (most recent call last):\\n  File \\\"train.py\\\", line 88, in "
      "<module>\\n${R}FloatingPointError${N}: loss is NaN\\n\"; exit 1");
  auto pane = openPane(job);
  pane->resize(1000, 380);
  ASSERT_TRUE(waitFor([&] { return pane->text().contains("loss is NaN"); }, 30000));
  auto* search = pane->findChild<QLineEdit*>();
  search->setText("nan");
  QTest::keyClick(search, Qt::Key_Return);
  EXPECT_TRUE(statusText(*pane).startsWith("match 1 of 2")) << statusText(*pane).toStdString();
  EXPECT_TRUE(pane->text().contains("train: 100%|####################| 100/100\n"));
  const QString dir = QString(RM_BIN_DIR) + "/../screenshots";
  QDir().mkpath(dir);
  EXPECT_TRUE(pane->grab().save(dir + "/log-view.png"));
}

// "all ranks": every rank's lines, each after "[rN] " in the rank's colour, the lines' own
// colours kept; then back to one rank.
TEST_F(LogPaneTest, AllRanksShowsEveryRanksLinesTaggedWithItsRank) {
  std::string error;
  ASSERT_TRUE(cluster_.addAgent("a2", 1, &error)) << error;
  bridge_.reloadCluster();  // the session started knowing a1 only
  const std::string spec = cluster_.writeSpec(
      "two.yaml",
      "name: two\nlauncher: command\ncommand: [/bin/sh, -c, 'for i in 1 2 3; do echo \"line $i "
      "of rank $RANK\"; done; printf \"\\033[31mred $RANK\\033[0m\\n\"']\nplacement:\n  - "
      "{agent: a1, ranks: 1}\n  - {agent: a2, ranks: 1}\n");
  auto submitted = cluster_.ctl({"submit", spec, "--wait"}, 60000);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  auto pane = std::make_unique<LogPane>(&bridge_, QString::fromStdString(submitted.firstLine()));
  RankInfo first, second;
  first.rank = 0;
  first.agent = "a1";
  second.rank = 1;
  second.agent = "a2";
  pane->setRanks({{0, first}, {1, second}});
  pane->resize(900, 500);
  pane->show();
  auto* box = pane->findChild<QComboBox*>();
  ASSERT_EQ(box->count(), 3);
  EXPECT_EQ(box->itemText(2), "all ranks");
  box->setCurrentIndex(2);
  ASSERT_TRUE(waitFor([&] { return pane->text().contains("[r1] red 1"); }, 30000))
      << pane->text().toStdString() << statusText(*pane).toStdString();
  ASSERT_TRUE(waitFor([&] { return pane->text().contains("[r0] red 0"); }, 30000))
      << pane->text().toStdString();
  for (int rank : {0, 1}) {
    for (int i : {1, 2, 3}) {
      EXPECT_TRUE(pane->text().contains(QString("[r%1] line %2 of rank %1\n").arg(rank).arg(i)));
    }
  }
  // Each rank's lines in its own order.
  EXPECT_LT(pane->text().indexOf("[r1] line 1"), pane->text().indexOf("[r1] line 3"));
  const bool dark = isDark(pane->palette());
  QTextDocument* document = pane->findChild<QPlainTextEdit*>()->document();
  for (QTextBlock block = document->begin(); block.isValid(); block = block.next()) {
    if (!block.text().startsWith("[r1] red")) continue;
    QTextBlock::iterator part = block.begin();
    EXPECT_EQ(part.fragment().text(), "[r1]");
    EXPECT_EQ(part.fragment().charFormat().foreground().color(), seriesColor(1, dark));
    ++part;
    EXPECT_EQ(part.fragment().text(), " ");
    ++part;
    EXPECT_EQ(part.fragment().text(), "red 1");
    EXPECT_EQ(part.fragment().charFormat().foreground().color(),
              ansiColour(TextStyle::kIndexed | 1, dark));
  }
  box->setCurrentIndex(0);
  ASSERT_TRUE(waitFor([&] { return pane->text().contains("red 0"); }, 30000));
  EXPECT_FALSE(pane->text().contains("[r"));
  EXPECT_FALSE(pane->text().contains("red 1"));
}

// A job restarted once: the attempt box lists both attempts, and each attempt's log is read
// from the agent that ran it; the newest follows the job.
TEST_F(LogPaneTest, EachAttemptsLogIsChosenInTheAttemptBox) {
  const std::string spec = cluster_.writeSpec(
      "restarted.yaml",
      "name: restarted\nlauncher: command\ncommand: [/bin/sh, -c, 'echo \"this is attempt "
      "$RINGMASTER_ATTEMPT\"; test $RINGMASTER_ATTEMPT = 2']\nplacement:\n  - {agent: a1, ranks: "
      "1}\nrestart: {max_restarts: 1, backoff_seconds: 0}\n");
  auto submitted = cluster_.ctl({"submit", spec, "--wait"}, 60000);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  auto pane = openPane(QString::fromStdString(submitted.firstLine()));
  auto* attempts = pane->findChild<QComboBox*>();
  for (QComboBox* box : pane->findChildren<QComboBox*>()) {
    if (box->count() == 0 || box->itemText(0).startsWith("attempt")) attempts = box;
  }
  EXPECT_FALSE(attempts->isVisible());  // one attempt known so far
  pane->setAttempts({{1, {{0, "a1"}}}, {2, {{0, "a1"}}}});
  ASSERT_TRUE(attempts->isVisible());
  ASSERT_EQ(attempts->count(), 2);
  EXPECT_EQ(attempts->itemText(0), "attempt 2 (newest)");
  EXPECT_EQ(attempts->itemText(1), "attempt 1");
  ASSERT_TRUE(waitFor([&] { return pane->text().contains("this is attempt 2"); }, 30000))
      << pane->text().toStdString();
  attempts->setCurrentIndex(1);
  ASSERT_TRUE(waitFor([&] { return pane->text().contains("this is attempt 1"); }, 30000))
      << pane->text().toStdString() << statusText(*pane).toStdString();
  EXPECT_FALSE(pane->text().contains("this is attempt 2"));
  EXPECT_TRUE(statusText(*pane).startsWith("attempt 1 on a1")) << statusText(*pane).toStdString();
  attempts->setCurrentIndex(0);
  ASSERT_TRUE(waitFor([&] { return pane->text().contains("this is attempt 2"); }, 30000));
}

// A search stopped halfway says so and where; the pane stays usable.
TEST_F(LogPaneTest, AWholeLogSearchCanBeCancelled) {
  const QString job = runJob(
      "i=0; while [ $i -lt 40 ]; do head -c 1048576 /dev/zero | tr \"\\\\0\" x | fold -w 99; "
      "i=$((i+1)); done; echo; echo \"the last line\"; exit 1");
  LogSearch search(&bridge_, job, "a1", 0, 0, "no such text");
  bool done = false;
  QObject::connect(&search, &LogSearch::done, [&] { done = true; });
  search.start();
  ASSERT_TRUE(waitFor([&] { return search.searched() > 0; }, 30000));
  search.cancel();
  EXPECT_TRUE(done);
  EXPECT_TRUE(search.cancelled());
  EXPECT_LT(search.searched(), search.total());
  const uint64_t searched = search.searched();
  QTest::qWait(300);  // answers still on their way change nothing
  EXPECT_EQ(search.searched(), searched);
}

// Issue 35: the log view could not tell stdout from stderr. The agent reads each from a pipe of
// its own, keeps which log bytes came from stderr, and the pane (and `ringmasterctl logs
// --stream`) shows either alone, each in its own order.
TEST_F(LogPaneTest, TheStreamBoxShowsWhatTheRankWroteToStdoutOrToStderrAlone) {
  const QString job = runJob(
      "for i in 1 2 3; do echo \"out $i\"; echo \"err $i\" >&2; done; "
      "printf \"half \"; printf \"a warning\\n\" >&2; echo \"of a line\"; exit 1");
  auto pane = openPane(job);
  ASSERT_TRUE(waitFor([&] { return pane->text().contains("of a line"); }, 30000))
      << pane->text().toStdString();
  EXPECT_TRUE(pane->text().contains("err 3")) << pane->text().toStdString();
  auto* streams = pane->findChild<QComboBox*>("logStream");
  ASSERT_NE(streams, nullptr);
  streams->setCurrentText("stderr");
  ASSERT_TRUE(waitFor([&] { return pane->text().contains("a warning"); }, 10000));
  EXPECT_EQ(pane->text().trimmed(), "err 1\nerr 2\nerr 3\na warning") << pane->text().toStdString();
  streams->setCurrentText("stdout");
  // stdout's own lines, whole: its "half " and "of a line" are one line of its own.
  ASSERT_TRUE(waitFor([&] { return pane->text().contains("of a line"); }, 10000));
  EXPECT_EQ(pane->text().trimmed(), "out 1\nout 2\nout 3\nhalf of a line")
      << pane->text().toStdString();

  auto errors = cluster_.ctl({"logs", job.toStdString(), "--rank", "0", "--stream", "stderr"});
  EXPECT_EQ(errors.exit_code, 0) << errors.err;
  EXPECT_EQ(errors.out, "err 1\nerr 2\nerr 3\na warning\n");
  auto bad = cluster_.ctl({"logs", job.toStdString(), "--stream", "stdin"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("stdin"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace ringmaster::gui
