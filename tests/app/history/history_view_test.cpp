// The History view listing runs from a real SQLite history: journal records in, Store::jobs()
// and the loss series out, through loadRunSummaries into the model, proxy and view.
#include "history/history_view.h"

#include <gtest/gtest.h>

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFrame>
#include <QHeaderView>
#include <QPushButton>
#include <QSettings>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>

#include "history/config_diff_view.h"
#include "history/history_proxy.h"
#include "history/run_edit.h"
#include "history/run_format.h"
#include "ringmaster/client/run_summary.h"
#include "ringmaster/store/store.h"
#include "table_copy.h"

namespace ringmaster::gui {
namespace {

using client::loadRunSummaries;
using client::RunLoadOptions;

// 2026-11-23 14:00:00 UTC, so every run has a fixed, realistic start time.
constexpr double kT0 = 1795442400.0;

struct JobScript {
  std::string id, name;
  int world = 2;
  double start = 0;
  double end = 0;  // 0: still running
  proto::RankState end_state = proto::SUCCEEDED;
  int failing_rank = -1;       // that rank exits with end_state, the others succeed
  std::vector<double> losses;  // reported by loss_rank, one per step; empty: none
  int loss_rank = 0;
};

class Journal {
 public:
  proto::JournalRecord& add(const std::string& job, double time, const std::string& source) {
    proto::JournalRecord& r = records_.emplace_back();
    r.set_seq(next_seq_++);
    r.set_time(time);
    r.set_job(job);
    r.set_attempt(1);
    r.set_source(source);
    return r;
  }

  void addJob(const JobScript& s) {
    proto::JobAccepted* a = add(s.id, s.start, "agent:a1").mutable_job_accepted();
    a->set_name(s.name);
    a->set_launcher(proto::NATIVE);
    a->set_world_size(s.world);
    a->set_agent("a1");
    a->set_spec_yaml("name: " + s.name + "\nlauncher: command\nworld_size: " +
                     std::to_string(s.world) + "\ncommand: [python3, train.py]\n");
    for (int r = 0; r < s.world; ++r) {
      proto::RankAssignment* ra = a->add_ranks();
      ra->set_rank(r);
      ra->set_local_rank(r);
    }
    for (int r = 0; r < s.world; ++r) {
      proto::RankStarted* st =
          add(s.id, s.start + 0.5, "rank:" + std::to_string(r)).mutable_rank_started();
      st->set_rank(r);
      st->set_local_rank(r);
      st->set_pid(1000 + r);
    }
    for (size_t i = 0; i < s.losses.size(); ++i) {
      proto::MetricSample* m =
          add(s.id, s.start + 1 + i, "rank:" + std::to_string(s.loss_rank)).mutable_metric();
      m->set_rank(s.loss_rank);
      m->set_step(static_cast<int64_t>(i + 1));
      proto::MetricValue* v = m->add_values();
      v->set_name("loss");
      v->set_value(s.losses[i]);
    }
    if (s.end <= 0) return;
    for (int r = 0; r < s.world; ++r) {
      const bool odd_one = s.failing_rank < 0 || r == s.failing_rank;
      const proto::RankState state = odd_one ? s.end_state : proto::SUCCEEDED;
      // The rank that decides the state exits last, so finished_at is s.end.
      const double t = odd_one ? s.end : s.end - 1;
      proto::RankExited* e = add(s.id, t, "rank:" + std::to_string(r)).mutable_rank_exited();
      e->set_rank(r);
      e->set_state(state);
      e->set_exit_code(state == proto::FAILED ? 1 : 0);
      if (state == proto::STOPPED) e->set_signal(15);
    }
    proto::JobFinished* f = add(s.id, s.end, "agent:a1").mutable_job_finished();
    f->set_state(s.end_state);
    f->set_agent("a1");
    f->set_ranks(s.world);
    // The leader's word: only it ends the job.
    add(s.id, s.end, "agent:a1").mutable_job_outcome()->set_state(s.end_state);
  }

  const std::vector<proto::JournalRecord>& records() const { return records_; }
  uint64_t nextSeq() const { return next_seq_; }

 private:
  std::vector<proto::JournalRecord> records_;
  uint64_t next_seq_ = 1;
};

// Durations (s): resnet 192 (3m 12s), bert 45, gpt running for 600 at kNow, mnist 1000 (16m 40s).
// As strings those sort "10m 00s" < "16m 40s" < "3m 12s" < "45s": a string sort is caught.
// Final losses 0.25, 12.5, 3.2 and none: as strings "0.25" < "12.5" < "3.2".
constexpr double kNow = kT0 + 3000 + 600;
const JobScript kResnet{"resnet-ddp-261123-140000-aa11",
                        "resnet-ddp",
                        4,
                        kT0,
                        kT0 + 192,
                        proto::SUCCEEDED,
                        -1,
                        {2.0, 0.9, 0.25}};
const JobScript kBert{"bert-large-261123-141000-bb22",
                      "bert-large",
                      2,
                      kT0 + 600,
                      kT0 + 645,
                      proto::FAILED,
                      1,
                      {20.0, 12.5}};
const JobScript kGpt{"gpt-small-261123-145000-cc33",
                     "gpt-small",
                     8,
                     kT0 + 3000,
                     0,
                     proto::SUCCEEDED,
                     -1,
                     {4.0, 3.2}};
const JobScript kMnist{"mnist-quick-261123-142000-dd44",
                       "mnist-quick",
                       1,
                       kT0 + 1200,
                       kT0 + 2200,
                       proto::STOPPED,
                       -1,
                       {}};

class HistoryViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The view keeps its header (sort, widths) in QSettings, which outlive a run of the tests:
    // a sort left by an earlier test, or an earlier run, would reorder every later one.
    QSettings().clear();
    ASSERT_TRUE(dir_.isValid());
    auto store = store::Writer::open(dir_.filePath("history.db").toStdString());
    ASSERT_TRUE(store.isOk()) << store.status().toString();
    store_ = std::move(*store);
    Journal journal;
    for (const JobScript* s : {&kResnet, &kBert, &kMnist, &kGpt}) journal.addJob(*s);
    const Status applied =
        store_->applyJournal("a1", "journal-1", journal.records(), journal.nextSeq());
    ASSERT_TRUE(applied.isOk()) << applied.toString();
  }

  std::vector<RunSummary> load() {
    auto runs = loadRunSummaries(*store_);
    EXPECT_TRUE(runs.isOk()) << runs.status().toString();
    return runs.isOk() ? std::move(*runs) : std::vector<RunSummary>{};
  }

  // Job ids in the order the view shows them.
  static QStringList shownIds(HistoryView& view) {
    QStringList ids;
    QAbstractItemModel* m = view.table()->model();
    for (int r = 0; r < m->rowCount(); ++r)
      ids << m->index(r, 0).data(HistoryModel::kJobIdRole).toString();
    return ids;
  }

  static QString cell(HistoryView& view, const std::string& id, int column) {
    HistoryModel* model = view.model();
    return model->index(model->rowOf(QString::fromStdString(id)), column).data().toString();
  }

  QTemporaryDir dir_;
  std::unique_ptr<store::Writer> store_;
};

QString q(const std::string& s) { return QString::fromStdString(s); }

// A pipeline's loss comes from its last stage (rank 2 of 3 here): that is the run's loss.
TEST_F(HistoryViewTest, TheLossOfARunWhoseFirstRankReportsNoneIsTheNextRanks) {
  Journal journal;
  JobScript pipeline{"pipe-261123-150000-ee55", "pipe", 3,           kT0, kT0 + 30,
                     proto::SUCCEEDED,          -1,     {1.5, 0.75}, 2};
  journal.addJob(pipeline);
  ASSERT_TRUE(store_->applyJournal("a2", "journal-2", journal.records(), journal.nextSeq()).isOk());
  for (const RunSummary& run : load()) {
    if (run.job.job_id != pipeline.id) continue;
    EXPECT_EQ(run.final_loss, 0.75);
    EXPECT_EQ(run.best_loss, 0.75);
    return;
  }
  ADD_FAILURE() << "the pipeline run is not in the history";
}

TEST(RunFormat, WritesDurationsTimesAndLosses) {
  EXPECT_EQ(formatDuration(45.9), "45s");
  EXPECT_EQ(formatDuration(0.36), "0.3s");
  EXPECT_EQ(formatDuration(9.99), "9.9s");
  EXPECT_EQ(formatDuration(192), "3m 12s");
  EXPECT_EQ(formatDuration(3725), "1h 02m");
  EXPECT_EQ(formatDuration(2 * 86400 + 3 * 3600 + 5), "2d 03h");
  EXPECT_EQ(formatDuration(std::nan("")), "\u2014");
  EXPECT_EQ(formatDuration(-1), "\u2014");
  EXPECT_EQ(
      formatLocalTime(kT0),
      QDateTime::fromSecsSinceEpoch(static_cast<qint64>(kT0)).toString("yyyy-MM-dd HH:mm:ss"));
  EXPECT_EQ(formatLocalTime(0), "\u2014");
  EXPECT_EQ(formatLoss(0.231456), "0.2315");
  EXPECT_EQ(formatLoss(std::nan("")), "\u2014");
}

TEST_F(HistoryViewTest, LoaderReadsJobsStatesAndFinalLossFromSqlite) {
  const std::vector<RunSummary> runs = load();
  ASSERT_EQ(runs.size(), 4u);
  // Store::jobs() is newest first.
  EXPECT_EQ(runs[0].job.job_id, kGpt.id);
  EXPECT_EQ(runs[3].job.job_id, kResnet.id);
  std::map<std::string, const RunSummary*> by_id;
  for (const RunSummary& r : runs) by_id[r.job.job_id] = &r;
  EXPECT_EQ(by_id[kResnet.id]->job.state, "succeeded");
  EXPECT_EQ(by_id[kBert.id]->job.state, "failed");
  EXPECT_EQ(by_id[kGpt.id]->job.state, "running");
  EXPECT_EQ(by_id[kMnist.id]->job.state, "stopped");
  EXPECT_DOUBLE_EQ(by_id[kResnet.id]->final_loss, 0.25);
  EXPECT_DOUBLE_EQ(by_id[kBert.id]->final_loss, 12.5);
  EXPECT_DOUBLE_EQ(by_id[kGpt.id]->final_loss, 3.2);
  EXPECT_TRUE(std::isnan(by_id[kMnist.id]->final_loss));
  EXPECT_EQ(by_id[kResnet.id]->job.world_size, 4);
  EXPECT_DOUBLE_EQ(by_id[kResnet.id]->job.finished_at - by_id[kResnet.id]->job.submitted_at, 192);

  // The final loss is the value of the highest step, cross-checked against Store::metrics.
  store::MetricQuery query;
  query.job_id = kResnet.id;
  query.rank = 0;
  query.name = "loss";
  auto metrics = store_->metrics(query);
  ASSERT_TRUE(metrics.isOk());
  ASSERT_FALSE(metrics->empty());
  EXPECT_DOUBLE_EQ(metrics->back().value, by_id[kResnet.id]->final_loss);
}

TEST_F(HistoryViewTest, LoaderRejectsAnEmptyLossMetricName) {
  RunLoadOptions options;
  options.loss_metric = "";
  auto runs = loadRunSummaries(*store_, options);
  ASSERT_FALSE(runs.isOk());
  EXPECT_NE(runs.status().message().find("loss_metric"), std::string::npos);
}

TEST_F(HistoryViewTest, ListsRunsWithReadableCellsAndStateColours) {
  HistoryView view;
  view.model()->setClock([] { return kNow; });
  view.setRuns(load());
  ASSERT_EQ(view.table()->model()->rowCount(), 4);
  EXPECT_EQ(view.countText(), "4 runs");
  // Default sort: newest start first.
  EXPECT_EQ(shownIds(view), (QStringList{q(kGpt.id), q(kMnist.id), q(kBert.id), q(kResnet.id)}));

  EXPECT_EQ(cell(view, kResnet.id, HistoryModel::kName), "resnet-ddp");
  EXPECT_EQ(cell(view, kResnet.id, HistoryModel::kState), "succeeded");
  EXPECT_EQ(cell(view, kResnet.id, HistoryModel::kStarted), formatLocalTime(kT0));
  EXPECT_EQ(cell(view, kResnet.id, HistoryModel::kDuration), "3m 12s");
  EXPECT_EQ(cell(view, kResnet.id, HistoryModel::kRanks), "4");
  EXPECT_EQ(cell(view, kResnet.id, HistoryModel::kAttempt), "1");
  EXPECT_EQ(cell(view, kResnet.id, HistoryModel::kFinalLoss), "0.25");
  EXPECT_EQ(cell(view, kResnet.id, HistoryModel::kJobId), q(kResnet.id));
  EXPECT_EQ(cell(view, kBert.id, HistoryModel::kDuration), "45s");
  EXPECT_EQ(cell(view, kGpt.id, HistoryModel::kDuration), "10m 00s");
  EXPECT_EQ(cell(view, kMnist.id, HistoryModel::kFinalLoss), "\u2014");
  EXPECT_EQ(cell(view, kBert.id, HistoryModel::kBestLoss), "12.5");
  EXPECT_EQ(cell(view, kMnist.id, HistoryModel::kBestLoss), "\u2014");

  // Clone: the selected run's spec, for the editor; only with one run selected.
  QStringList cloned;
  QObject::connect(&view, &HistoryView::cloneRun,
                   [&](const QString& yaml, const QString& name) { cloned << yaml << name; });
  auto* clone = view.findChild<QPushButton*>(QStringLiteral("historyClone"));
  ASSERT_NE(clone, nullptr);
  view.selectJobIds({q(kBert.id), q(kResnet.id)});
  EXPECT_FALSE(clone->isEnabled());
  view.selectJobIds({q(kBert.id)});
  ASSERT_TRUE(clone->isEnabled());
  clone->click();
  ASSERT_EQ(cloned.size(), 2);
  EXPECT_TRUE(cloned[0].startsWith("name: bert-large\n")) << cloned[0].toStdString();
  EXPECT_EQ(cloned[1], "bert-large");
  view.selectJobIds({});

  // Each state has its own colour, none of them the plain text colour.
  std::set<QRgb> colours;
  for (const std::string& id : {kResnet.id, kBert.id, kGpt.id, kMnist.id}) {
    HistoryModel* m = view.model();
    const QVariant fg = m->index(m->rowOf(q(id)), HistoryModel::kState).data(Qt::ForegroundRole);
    ASSERT_TRUE(fg.canConvert<QBrush>()) << id;
    const QColor c = fg.value<QBrush>().color();
    EXPECT_NE(c, QApplication::palette().color(QPalette::Text)) << id;
    colours.insert(c.rgb());
  }
  EXPECT_EQ(colours.size(), 4u);
}

TEST_F(HistoryViewTest, SortsByRealDurationAndLossNotByText) {
  HistoryView view;
  view.model()->setClock([] { return kNow; });
  view.setRuns(load());

  view.table()->sortByColumn(HistoryModel::kDuration, Qt::AscendingOrder);
  EXPECT_EQ(shownIds(view), (QStringList{q(kBert.id), q(kResnet.id), q(kGpt.id), q(kMnist.id)}));
  view.table()->sortByColumn(HistoryModel::kDuration, Qt::DescendingOrder);
  EXPECT_EQ(shownIds(view), (QStringList{q(kMnist.id), q(kGpt.id), q(kResnet.id), q(kBert.id)}));

  // A run without a loss stays at the bottom in both orders.
  view.table()->sortByColumn(HistoryModel::kFinalLoss, Qt::AscendingOrder);
  EXPECT_EQ(shownIds(view), (QStringList{q(kResnet.id), q(kGpt.id), q(kBert.id), q(kMnist.id)}));
  view.table()->sortByColumn(HistoryModel::kFinalLoss, Qt::DescendingOrder);
  EXPECT_EQ(shownIds(view), (QStringList{q(kBert.id), q(kGpt.id), q(kResnet.id), q(kMnist.id)}));

  view.table()->sortByColumn(HistoryModel::kRanks, Qt::DescendingOrder);
  EXPECT_EQ(shownIds(view).front(), q(kGpt.id));  // 8 ranks before 4, 2, 1
}

TEST_F(HistoryViewTest, FiltersByNameIdAndState) {
  HistoryView view;
  view.setRuns(load());
  view.setFilterText("failed");
  EXPECT_EQ(shownIds(view), QStringList{q(kBert.id)});
  EXPECT_EQ(view.countText(), "4 runs (1 shown)");
  view.setFilterText("cc33");  // a piece of the job id
  EXPECT_EQ(shownIds(view), QStringList{q(kGpt.id)});
  view.setFilterText("RESNET succeeded");  // every word must match, case-insensitively
  EXPECT_EQ(shownIds(view), QStringList{q(kResnet.id)});
  view.setFilterText("resnet failed");
  EXPECT_TRUE(shownIds(view).isEmpty());
  EXPECT_EQ(view.countText(), "4 runs (0 shown)");
  view.setFilterText("");
  EXPECT_EQ(shownIds(view).size(), 4);
}

TEST_F(HistoryViewTest, SelectionDrivesOpenAndCompare) {
  HistoryView view;
  view.model()->setClock([] { return kNow; });
  view.resize(1000, 300);
  view.setRuns(load());
  auto* open = view.findChild<QPushButton*>("historyOpen");
  auto* compare = view.findChild<QPushButton*>("historyCompare");
  ASSERT_NE(open, nullptr);
  ASSERT_NE(compare, nullptr);
  EXPECT_FALSE(open->isEnabled());
  EXPECT_FALSE(compare->isEnabled());

  QStringList compared;
  QStringList opened;
  QObject::connect(&view, &HistoryView::compareRuns,
                   [&](const QStringList& ids) { compared = ids; });
  QObject::connect(&view, &HistoryView::openRun, [&](const QString& id) { opened << id; });

  // Select rows 1 and 3 as shown (newest first: mnist, resnet) with the selection model.
  QTableView* table = view.table();
  table->selectionModel()->select(table->model()->index(1, 0),
                                  QItemSelectionModel::Select | QItemSelectionModel::Rows);
  EXPECT_TRUE(open->isEnabled());
  EXPECT_FALSE(compare->isEnabled());
  table->selectionModel()->select(table->model()->index(3, 0),
                                  QItemSelectionModel::Select | QItemSelectionModel::Rows);
  EXPECT_EQ(view.selectedJobIds(), (QStringList{q(kMnist.id), q(kResnet.id)}));
  EXPECT_TRUE(compare->isEnabled());
  EXPECT_EQ(view.countText(), "4 runs, 2 selected");
  QTest::mouseClick(compare, Qt::LeftButton);
  EXPECT_EQ(compared, (QStringList{q(kMnist.id), q(kResnet.id)}));

  // A refresh with one more run keeps the selection (by id) and the sort.
  table->sortByColumn(HistoryModel::kDuration, Qt::AscendingOrder);
  std::vector<RunSummary> runs = load();
  RunSummary extra;
  extra.job.job_id = "late-run-261123-160000-ee55";
  extra.job.name = "late-run";
  extra.job.state = "submitted";
  extra.job.submitted_at = kNow;
  runs.push_back(extra);
  view.setRuns(runs);
  EXPECT_EQ(view.countText(), "5 runs, 2 selected");
  QStringList selected = view.selectedJobIds();
  selected.sort();
  EXPECT_EQ(selected, (QStringList{q(kMnist.id), q(kResnet.id)}));
  EXPECT_EQ(table->horizontalHeader()->sortIndicatorSection(), HistoryModel::kDuration);
  EXPECT_EQ(shownIds(view).front(), q(kBert.id));

  // Double-click a row: openRun with its id.
  view.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
  const int row =
      view.proxy()->mapFromSource(view.model()->index(view.model()->rowOf(q(kGpt.id)), 0)).row();
  const QRect rect = table->visualRect(table->model()->index(row, HistoryModel::kName));
  // A person's double-click: a click, then the second press that makes it a double-click.
  QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, rect.center());
  QTest::mouseDClick(table->viewport(), Qt::LeftButton, {}, rect.center());
  ASSERT_FALSE(opened.isEmpty());
  EXPECT_EQ(opened.back(), q(kGpt.id));
  // Open opens the current (clicked) run.
  opened.clear();
  QTest::mouseClick(open, Qt::LeftButton);
  EXPECT_EQ(opened, QStringList{q(kGpt.id)});
}

TEST_F(HistoryViewTest, RunningDurationGrowsEverySecond) {
  HistoryView view;
  double now = kNow;
  view.model()->setClock([&now] { return now; });
  view.setRuns(load());
  EXPECT_EQ(cell(view, kGpt.id, HistoryModel::kDuration), "10m 00s");
  int duration_changes = 0, other_changes = 0;
  QObject::connect(view.model(), &QAbstractItemModel::dataChanged,
                   [&](const QModelIndex& a, const QModelIndex& b) {
                     if (a.column() == HistoryModel::kDuration && b.column() == a.column())
                       ++duration_changes;
                     else
                       ++other_changes;
                   });
  now += 75;
  QTest::qWait(1300);  // the view's 1 s timer
  EXPECT_EQ(cell(view, kGpt.id, HistoryModel::kDuration), "11m 15s");
  EXPECT_GE(duration_changes, 1);
  EXPECT_EQ(other_changes, 0);
  // Finished runs do not move.
  EXPECT_EQ(cell(view, kResnet.id, HistoryModel::kDuration), "3m 12s");
}

TEST_F(HistoryViewTest, ARunWhoseAgentIsSilentIsUnknownWithItsClockStopped) {
  HistoryView view;
  double now = kNow;
  view.model()->setClock([&now] { return now; });
  view.setRuns(load());
  ASSERT_EQ(cell(view, kGpt.id, HistoryModel::kState), "running");

  client::AgentStatus silent;
  silent.name = "a1";
  silent.state = client::AgentState::kUnreachable;
  silent.answered_at = kT0 + 3000 + 300;  // five minutes after the run started
  view.model()->setAgentStatus(silent);
  HistoryModel* model = view.model();
  const QModelIndex state = model->index(model->rowOf(q(kGpt.id)), HistoryModel::kState);
  EXPECT_EQ(state.data().toString(), "unknown");
  EXPECT_EQ(state.data(HistoryModel::kStateRole).toString(), "unknown");
  EXPECT_EQ(state.data(Qt::ForegroundRole).value<QBrush>().color(),
            stateColor("unknown", QApplication::palette()));
  EXPECT_TRUE(state.data(Qt::ToolTipRole).toString().contains("agent a1 not answering since"))
      << state.data(Qt::ToolTipRole).toString().toStdString();
  EXPECT_EQ(cell(view, kGpt.id, HistoryModel::kDuration), "5m 00s");
  now += 75;
  QTest::qWait(1300);  // the view's 1 s timer: the clock stays stopped
  EXPECT_EQ(cell(view, kGpt.id, HistoryModel::kDuration), "5m 00s");
  // What ended is what the journal says, silent agent or not.
  EXPECT_EQ(cell(view, kResnet.id, HistoryModel::kState), "succeeded");
  EXPECT_EQ(cell(view, kBert.id, HistoryModel::kState), "failed");

  client::AgentStatus back = silent;
  back.state = client::AgentState::kOnline;
  view.model()->setAgentStatus(back);
  EXPECT_EQ(cell(view, kGpt.id, HistoryModel::kState), "running");
  EXPECT_EQ(cell(view, kGpt.id, HistoryModel::kDuration), "11m 15s");
}

TEST_F(HistoryViewTest, CopiesTheSelectedRunsAsTabSeparatedRows) {
  HistoryView view;
  view.setRuns(load());
  const int row =
      static_cast<int>(shownIds(view).indexOf(q(kResnet.id)));  // the view's (sorted) row
  ASSERT_GE(row, 0);
  view.table()->selectRow(row);
  const QStringList lines = selectedRowsAsTsv(*view.table()).split('\n', Qt::SkipEmptyParts);
  ASSERT_EQ(lines.size(), 2);
  EXPECT_TRUE(lines[0].startsWith("Name\tState")) << lines[0].toStdString();
  const QStringList cells = lines[1].split('\t');
  ASSERT_EQ(cells.size(), HistoryModel::kColumns);
  EXPECT_EQ(cells[HistoryModel::kName], "resnet-ddp");
  EXPECT_EQ(cells[HistoryModel::kDuration].toDouble(), 192);  // seconds, not "3m 12s"
  EXPECT_EQ(cells[HistoryModel::kFinalLoss].toDouble(), 0.25);
}

TEST(HistoryProxy, SortsNamesInNaturalOrder) {
  HistoryModel model;
  std::vector<RunSummary> runs;
  for (const char* name : {"tiny-190", "tiny-19", "Tiny-2", "tiny-100"}) {
    RunSummary run;
    run.job.name = name;
    run.job.job_id = std::string(name) + "-id";
    runs.push_back(run);
  }
  model.setRuns(runs);
  HistoryProxy proxy;
  proxy.setSourceModel(&model);
  proxy.setSortRole(HistoryModel::kSortRole);
  proxy.sort(HistoryModel::kName, Qt::AscendingOrder);
  QStringList names;
  for (int r = 0; r < proxy.rowCount(); ++r)
    names << proxy.index(r, HistoryModel::kName).data().toString();
  EXPECT_EQ(names, (QStringList{"Tiny-2", "tiny-19", "tiny-100", "tiny-190"}));
}

// The state box keeps the runs in one state, or those not over yet; words still apply.
// The names of the runs listed, sorted.
QStringList shownNames(HistoryView& view) {
  QStringList names;
  const QAbstractItemModel* m = view.table()->model();
  for (int r = 0; r < m->rowCount(); ++r)
    names << m->index(r, HistoryModel::kName).data().toString();
  names.sort();
  return names;
}

// A preflight's link tests (2,016 of them for 64 agents) are not runs to list: hidden and not
// counted, said so in the count, and listed when searched for.
TEST(HistoryProxy, APreflightsLinkTestsAreListedOnlyWhenSearchedFor) {
  std::vector<RunSummary> runs;
  for (const char* name : {"resnet-1", "preflight-link-a1-a2", "preflight-link-a1-a3",
                           "preflight-link-a2-a3", "bert-1"}) {
    RunSummary run;
    run.job.name = name;
    run.job.job_id = std::string(name) + "-id";
    run.job.state = "succeeded";
    runs.push_back(run);
  }
  HistoryView view;
  view.setRuns(runs);
  auto shown = [&] { return shownNames(view); };
  EXPECT_EQ(shown(), (QStringList{"bert-1", "resnet-1"}));
  EXPECT_EQ(view.countText(), QString::fromUtf8("2 runs · 3 link tests hidden"));
  view.setFilterText("a1");  // an agent's name is not a search for link tests
  EXPECT_TRUE(shown().isEmpty());
  view.setFilterText("preflight");
  EXPECT_EQ(shown().size(), 3);
  EXPECT_EQ(view.countText(), "5 runs (3 shown)");
  view.setFilterText("link a1");
  EXPECT_EQ(shown(), (QStringList{"preflight-link-a1-a2", "preflight-link-a1-a3"}));
}

TEST(HistoryProxy, TheStateBoxKeepsOnlyRunsInThoseStates) {
  std::vector<RunSummary> runs;
  for (const auto& [name, state] :
       std::vector<std::pair<const char*, const char*>>{{"resnet-1", "failed"},
                                                        {"resnet-2", "succeeded"},
                                                        {"bert-1", "failed"},
                                                        {"bert-2", "running"},
                                                        {"gpt-1", "restarting"}}) {
    RunSummary run;
    run.job.name = name;
    run.job.job_id = std::string(name) + "-id";
    run.job.state = state;
    runs.push_back(run);
  }
  HistoryView view;
  view.setRuns(runs);
  auto* box = view.findChild<QComboBox*>("historyState");
  ASSERT_NE(box, nullptr);
  auto shown = [&] { return shownNames(view); };
  box->setCurrentIndex(box->findText("failed"));
  EXPECT_EQ(shown(), (QStringList{"bert-1", "resnet-1"}));
  view.setFilterText("resnet");
  EXPECT_EQ(shown(), QStringList{"resnet-1"});
  view.setFilterText("");
  box->setCurrentIndex(box->findText("Not over"));
  EXPECT_EQ(shown(), (QStringList{"bert-2", "gpt-1"}));
  box->setCurrentIndex(0);
  EXPECT_EQ(shown().size(), 5);
}

// The view asks, the history file changes, the runs are read again: as MainWindow does on the
// session's threads, here on the test's, with the same applyRunEdit.
void applyEditsTo(HistoryView& view, std::function<store::Writer&()> store,
                  std::function<std::vector<RunSummary>()> load) {
  QObject::connect(&view, &HistoryView::editRuns, &view, [&view, store, load](const RunEdit& edit) {
    const Status applied = applyRunEdit(store(), edit, kNow);
    ASSERT_TRUE(applied.isOk()) << applied.toString();
    view.setRuns(load());
  });
}

TEST_F(HistoryViewTest, ArchiveHidesRunsUntilShownAndStaysAfterReopening) {
  HistoryView view;
  view.model()->setClock([] { return kNow; });
  applyEditsTo(
      view, [this]() -> store::Writer& { return *store_; }, [this] { return load(); });
  view.setRuns(load());
  auto* archive = view.findChild<QPushButton*>("historyArchive");
  auto* show_archived = view.findChild<QCheckBox*>("historyShowArchived");
  ASSERT_NE(archive, nullptr);
  ASSERT_NE(show_archived, nullptr);
  EXPECT_FALSE(archive->isEnabled());

  view.selectJobIds({q(kResnet.id), q(kBert.id)});
  EXPECT_EQ(archive->text(), "Archive");
  QTest::mouseClick(archive, Qt::LeftButton);
  EXPECT_EQ(shownIds(view), (QStringList{q(kGpt.id), q(kMnist.id)}));
  EXPECT_EQ(view.countText(), "4 runs (2 shown)");

  // Never lost: the file still has them whole, archived, after it is opened again.
  store_.reset();
  auto reopened = store::Writer::open(dir_.filePath("history.db").toStdString());
  ASSERT_TRUE(reopened.isOk());
  store_ = std::move(*reopened);
  EXPECT_TRUE(store_->job(kResnet.id)->archived);
  EXPECT_EQ(*store_->countMetrics(kResnet.id), 3);
  view.setRuns(load());
  EXPECT_EQ(shownIds(view).size(), 2);

  // Show archived: listed again, marked as archived.
  show_archived->setChecked(true);
  EXPECT_EQ(shownIds(view).size(), 4);
  EXPECT_EQ(cell(view, kResnet.id, HistoryModel::kName), "resnet-ddp · archived");
  EXPECT_EQ(cell(view, kResnet.id, HistoryModel::kFinalLoss), "0.25");
  const QModelIndex name =
      view.model()->index(view.model()->rowOf(q(kResnet.id)), HistoryModel::kName);
  EXPECT_TRUE(name.data(HistoryModel::kArchivedRole).toBool());
  EXPECT_TRUE(name.data(Qt::FontRole).value<QFont>().italic());
  // "archived" is a word the filter finds.
  view.setFilterText("archived");
  EXPECT_EQ(shownIds(view).size(), 2);
  view.setFilterText("");

  // Unarchive: both selected are archived, so the button undoes it.
  view.selectJobIds({q(kResnet.id), q(kBert.id)});
  EXPECT_EQ(archive->text(), "Unarchive");
  QTest::mouseClick(archive, Qt::LeftButton);
  show_archived->setChecked(false);
  EXPECT_EQ(shownIds(view).size(), 4);
  EXPECT_FALSE(store_->job(kBert.id)->archived);
  EXPECT_EQ(cell(view, kResnet.id, HistoryModel::kName), "resnet-ddp");
}

TEST_F(HistoryViewTest, DeleteAsksNamingTheRunsAndUndoBringsThemBackWithTheirMetrics) {
  HistoryView view;
  view.model()->setClock([] { return kNow; });
  applyEditsTo(
      view, [this]() -> store::Writer& { return *store_; }, [this] { return load(); });
  view.setRuns(load());
  QStringList asked;
  bool answer = false;
  view.setDeleteConfirmation([&](const QStringList& runs) {
    asked = runs;
    return answer;
  });
  auto* remove = view.findChild<QPushButton*>("historyDelete");
  ASSERT_NE(remove, nullptr);

  view.selectJobIds({q(kResnet.id), q(kBert.id)});
  // Cancelled: nothing changes.
  QTest::mouseClick(remove, Qt::LeftButton);
  EXPECT_EQ(asked, (QStringList{QString("bert-large (%1)").arg(q(kBert.id)),
                                QString("resnet-ddp (%1)").arg(q(kResnet.id))}));
  EXPECT_EQ(shownIds(view).size(), 4);
  EXPECT_TRUE(view.pendingDelete().isEmpty());

  answer = true;
  QTest::mouseClick(remove, Qt::LeftButton);
  EXPECT_EQ(shownIds(view), (QStringList{q(kGpt.id), q(kMnist.id)}));
  EXPECT_EQ(view.undoText(), "Deleted 2 runs: bert-large, resnet-ddp");
  EXPECT_FALSE(view.findChild<QFrame*>("historyUndoBar")->isHidden());
  EXPECT_EQ(store_->job(kResnet.id).status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(*store_->countMetrics(kResnet.id), 3);  // only marked, within the undo window
  view.resize(1100, 260);
  view.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
  const QString shots = QStringLiteral(RM_BIN_DIR "/../screenshots");
  ASSERT_TRUE(QDir().mkpath(shots));
  EXPECT_TRUE(view.grab().save(shots + "/history-undo.png"));

  QTest::mouseClick(view.findChild<QPushButton*>("historyUndo"), Qt::LeftButton);
  EXPECT_TRUE(view.undoText().isEmpty());
  EXPECT_TRUE(view.findChild<QFrame*>("historyUndoBar")->isHidden());
  EXPECT_EQ(shownIds(view).size(), 4);
  EXPECT_EQ(cell(view, kResnet.id, HistoryModel::kFinalLoss), "0.25");
  EXPECT_EQ(cell(view, kBert.id, HistoryModel::kState), "failed");
  auto losses = store_->metrics({.job_id = kResnet.id, .name = std::string("loss")});
  ASSERT_TRUE(losses.isOk());
  ASSERT_EQ(losses->size(), 3u);
  EXPECT_DOUBLE_EQ(losses->back().value, 0.25);
}

TEST_F(HistoryViewTest, ADeleteNotUndoneIsGoneWhenTheUndoWindowEnds) {
  HistoryView view;
  view.model()->setClock([] { return kNow; });
  applyEditsTo(
      view, [this]() -> store::Writer& { return *store_; }, [this] { return load(); });
  view.setRuns(load());
  view.setDeleteConfirmation([](const QStringList&) { return true; });
  view.setUndoWindowMs(50);
  auto* remove = view.findChild<QPushButton*>("historyDelete");

  // A run still going cannot be deleted: its own records would write it again.
  view.selectJobIds({q(kGpt.id)});
  EXPECT_FALSE(remove->isEnabled());

  view.selectJobIds({q(kResnet.id)});
  ASSERT_TRUE(remove->isEnabled());
  QTest::mouseClick(remove, Qt::LeftButton);
  EXPECT_EQ(view.pendingDelete(), QStringList{q(kResnet.id)});
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.pendingDelete().isEmpty(); }, 5000));
  EXPECT_TRUE(view.undoText().isEmpty());
  EXPECT_EQ(shownIds(view).size(), 3);
  EXPECT_EQ(*store_->countMetrics(kResnet.id), 0);
  EXPECT_TRUE(store_->events(kResnet.id)->empty());
  EXPECT_EQ(applyRunEdit(*store_, {RunEdit::Kind::kUndelete, {kResnet.id}}, kNow).code(),
            ErrorCode::kOk);  // undoing now finds nothing to bring back
  EXPECT_EQ(load().size(), 3u);
  EXPECT_EQ(*store_->countMetrics(kBert.id), 2);  // the others untouched

  // A second delete while Undo is offered makes the first final at once.
  view.setUndoWindowMs(60000);
  view.selectJobIds({q(kBert.id)});
  QTest::mouseClick(remove, Qt::LeftButton);
  view.selectJobIds({q(kMnist.id)});
  QTest::mouseClick(remove, Qt::LeftButton);
  EXPECT_EQ(view.pendingDelete(), QStringList{q(kMnist.id)});
  EXPECT_EQ(*store_->countMetrics(kBert.id), 0);
  EXPECT_EQ(view.undoText(), "Deleted 1 run: mnist-quick");
}

TEST_F(HistoryViewTest, CompareConfigsNeedsTwoRunsAndHandsOutTheirSpecs) {
  HistoryView view;
  view.setRuns(load());
  auto* configs = view.findChild<QPushButton*>("historyConfigs");
  ASSERT_NE(configs, nullptr);
  QStringList asked;
  QObject::connect(&view, &HistoryView::compareConfigs,
                   [&](const QStringList& ids) { asked = ids; });
  view.selectJobIds({q(kResnet.id)});
  EXPECT_FALSE(configs->isEnabled());
  view.selectJobIds({q(kResnet.id), q(kBert.id)});
  QTest::mouseClick(configs, Qt::LeftButton);
  ASSERT_EQ(asked.size(), 2);
  const std::vector<RunSpec> specs = view.specsOf(asked);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].label, "bert-large · bb22");
  EXPECT_NE(specs[1].spec_yaml.find("world_size: 4"), std::string::npos);
  ConfigDiffView diff(specs);
  EXPECT_EQ(diff.shownKeys(), (QStringList{"name", "world_size"}));
}

TEST_F(HistoryViewTest, Screenshot) {
  HistoryView view;
  view.model()->setClock([] { return kNow; });
  view.resize(1100, 260);
  view.setRuns(load());
  view.selectJobIds({q(kResnet.id), q(kBert.id)});
  view.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
  const QString dir = QStringLiteral(RM_BIN_DIR "/../screenshots");
  ASSERT_TRUE(QDir().mkpath(dir));
  const QString path = dir + "/history.png";
  ASSERT_TRUE(view.grab().save(path)) << path.toStdString();
  // The app fits a 1024x600 screen (main_window_test): the History asks for no more.
  EXPECT_LE(view.minimumSizeHint().width(), 900);
  // Nothing clipped: every column is at least as wide as its widest text.
  QHeaderView* header = view.table()->horizontalHeader();
  for (int c = 0; c + 1 < HistoryModel::kColumns; ++c) {
    int widest = header->fontMetrics().horizontalAdvance(
        view.model()->headerData(c, Qt::Horizontal).toString());
    for (int r = 0; r < view.model()->rowCount(); ++r)
      widest = std::max(widest, view.table()->fontMetrics().horizontalAdvance(
                                    view.model()->index(r, c).data().toString()));
    EXPECT_GE(header->sectionSize(c), widest) << "column " << c;
  }
}

}  // namespace
}  // namespace ringmaster::gui
