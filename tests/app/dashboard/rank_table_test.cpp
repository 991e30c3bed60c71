// The rank table (issue 22): each rank's colour, last loss and step time; sorted by real values
// through a proxy, with the selection kept across updates; Ctrl+C copies the selected rows as
// tab-separated text with a header, numbers at full precision.
#include <gtest/gtest.h>

#include <QApplication>
#include <QClipboard>
#include <QIcon>
#include <QImage>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTest>
#include <QVBoxLayout>
#include <set>
#include <utility>
#include <vector>

#include "charts/palette.h"
#include "dashboard/job_data.h"
#include "dashboard/rank_table_model.h"
#include "dashboard/rank_table_view.h"
#include "table_copy.h"

namespace ringmaster::gui {
namespace {

proto::JournalRecord record(uint64_t seq, const std::string& source) {
  proto::JournalRecord r;
  r.set_job("job-1");
  r.set_attempt(1);
  r.set_seq(seq);
  r.set_time(100 + static_cast<double>(seq));
  r.set_source(source);
  return r;
}

// Three ranks; rank r reports step_time 0.01 * (3 - r) + 1e-9 and loss 1/3 + r.
JobData threeRanks() {
  JobData job("job-1");
  proto::JournalRecord accepted = record(1, "agent:a");
  auto* a = accepted.mutable_job_accepted();
  a->set_name("train");
  a->set_launcher(proto::NATIVE);
  a->set_world_size(3);
  for (int rank = 0; rank < 3; ++rank) a->add_ranks()->set_rank(rank);
  job.ingest("a", accepted);
  for (int rank = 0; rank < 3; ++rank) {
    proto::JournalRecord m = record(2 + rank, "rank:" + std::to_string(rank));
    m.mutable_metric()->set_rank(rank);
    m.mutable_metric()->set_step(10);
    auto* loss = m.mutable_metric()->add_values();
    loss->set_name("loss");
    loss->set_value(1.0 / 3 + rank);
    auto* step_time = m.mutable_metric()->add_values();
    step_time->set_name("step_time");
    step_time->set_value(0.01 * (3 - rank) + 1e-9);
    job.ingest("a", m);
  }
  return job;
}

TEST(RankTable, ShowsColourLossAndStepTimeSortsByValueAndCopiesRows) {
  const JobData job = threeRanks();
  RankTableModel model;
  model.update(job, 120);
  EXPECT_EQ(model.data(model.index(1, RankTableModel::kLoss), Qt::DisplayRole).toString(), "1.333");
  EXPECT_EQ(model.data(model.index(0, RankTableModel::kStepTime), Qt::DisplayRole).toString(),
            "0.03");
  // A swatch of the rank's colour, the same icon at every paint (Qt's pixmap cache keeps one).
  const QIcon swatch =
      model.data(model.index(2, RankTableModel::kRank), Qt::DecorationRole).value<QIcon>();
  EXPECT_EQ(swatch.pixmap(16, 16).toImage().pixelColor(8, 8).rgb(), seriesColor(2).rgb());
  EXPECT_EQ(swatch.cacheKey(), model.data(model.index(2, RankTableModel::kRank), Qt::DecorationRole)
                                   .value<QIcon>()
                                   .cacheKey());

  QSortFilterProxyModel proxy;
  proxy.setSourceModel(&model);
  proxy.setSortRole(RankTableModel::kSortRole);
  QTableView view;
  view.setModel(&proxy);
  view.setSortingEnabled(true);
  view.setSelectionBehavior(QAbstractItemView::SelectRows);
  installTableCopy(&view);
  view.sortByColumn(RankTableModel::kStepTime, Qt::AscendingOrder);  // rank 2 is fastest
  EXPECT_EQ(proxy.index(0, 0).data(RankTableModel::kRankRole).toInt(), 2);
  view.selectRow(0);  // rank 2
  view.selectionModel()->select(proxy.index(2, 0),
                                QItemSelectionModel::Select | QItemSelectionModel::Rows);  // rank 0
  model.update(job, 121);  // a refresh keeps the rows where they are, and the selection
  EXPECT_EQ(view.selectionModel()->selectedRows().size(), 2);

  view.show();
  QApplication::clipboard()->clear();
  QTest::keySequence(&view, QKeySequence::Copy);
  const QStringList lines = QApplication::clipboard()->text().split('\n', Qt::SkipEmptyParts);
  ASSERT_EQ(lines.size(), 3) << QApplication::clipboard()->text().toStdString();
  EXPECT_TRUE(
      lines[0].startsWith("Rank\tRole\tAgent\tDevice\tPID\tState\tStep\tLoss\tStep time (s)"))
      << lines[0].toStdString();
  const QStringList rank2 = lines[1].split('\t');
  ASSERT_GT(rank2.size(), RankTableModel::kStepTime);
  EXPECT_EQ(rank2[RankTableModel::kRank], "2");
  EXPECT_EQ(rank2[RankTableModel::kLoss].toDouble(), 1.0 / 3 + 2);  // full precision
  EXPECT_EQ(rank2[RankTableModel::kStepTime].toDouble(), 0.01 + 1e-9);
  EXPECT_TRUE(lines[2].startsWith("0\t")) << lines[2].toStdString();
}

// Issue 27: a parameter-server job's ranks say whether they serve or work (the ps_role metric), a
// pipeline's which stage they are (pipeline_stage); plain data parallelism has no role.
// A native rank launched but with no step yet is "starting", as its job's header says; a command
// job's rank, which may never report a step, is "running" from its start.
TEST(RankTable, ALaunchedNativeRankIsStartingUntilItsFirstStep) {
  for (const proto::Launcher launcher : {proto::NATIVE, proto::COMMAND}) {
    JobData job("job-1");
    proto::JournalRecord accepted = record(1, "agent:a");
    accepted.mutable_job_accepted()->set_launcher(launcher);
    accepted.mutable_job_accepted()->set_world_size(2);
    job.ingest("a", accepted);
    for (int rank = 0; rank < 2; ++rank) {
      proto::JournalRecord started = record(2 + rank, "agent:a");
      started.mutable_rank_started()->set_rank(rank);
      started.mutable_rank_started()->set_pid(100 + rank);
      job.ingest("a", started);
    }
    proto::JournalRecord m = record(4, "rank:1");
    m.mutable_metric()->set_rank(1);
    m.mutable_metric()->set_step(0);
    m.mutable_metric()->add_values()->set_name("loss");
    job.ingest("a", m);
    RankTableModel model;
    model.update(job, 110);
    ASSERT_EQ(model.rowCount(), 2);
    const bool native = launcher == proto::NATIVE;
    EXPECT_EQ(model.index(0, RankTableModel::kState).data().toString(),
              native ? "starting" : "running");
    EXPECT_EQ(model.index(1, RankTableModel::kState).data().toString(), "running");
  }
}

TEST(RankTable, ShowsEachRanksRoleInItsStrategy) {
  JobData job = threeRanks();
  const auto report = [&job](uint64_t seq, int rank, const char* name, double value) {
    proto::JournalRecord m = record(seq, "rank:" + std::to_string(rank));
    m.mutable_metric()->set_rank(rank);
    m.mutable_metric()->set_step(11);
    auto* v = m.mutable_metric()->add_values();
    v->set_name(name);
    v->set_value(value);
    job.ingest("a", m);
  };
  RankTableModel model;
  model.update(job, 120);
  EXPECT_EQ(model.data(model.index(0, RankTableModel::kRole), Qt::DisplayRole).toString(), "—");
  report(10, 0, "ps_role", 1);
  report(11, 1, "ps_role", 1);
  report(12, 2, "ps_role", 2);
  model.update(job, 121);
  EXPECT_EQ(model.data(model.index(0, RankTableModel::kRole), Qt::DisplayRole).toString(),
            "worker");
  EXPECT_EQ(model.data(model.index(1, RankTableModel::kRole), Qt::DisplayRole).toString(),
            "worker");
  EXPECT_EQ(model.data(model.index(2, RankTableModel::kRole), Qt::DisplayRole).toString(),
            "server");
  EXPECT_TRUE(model.data(model.index(2, RankTableModel::kRole), Qt::ToolTipRole)
                  .toString()
                  .contains("shard of the parameters"));
  EXPECT_EQ(model.headerData(RankTableModel::kRole, Qt::Horizontal, Qt::DisplayRole).toString(),
            "Role");

  JobData pipeline = threeRanks();
  proto::JournalRecord m = record(10, "rank:1");
  m.mutable_metric()->set_rank(1);
  m.mutable_metric()->set_step(11);
  auto* v = m.mutable_metric()->add_values();
  v->set_name("pipeline_stage");
  v->set_value(1);
  pipeline.ingest("a", m);
  model.update(pipeline, 122);
  EXPECT_EQ(model.data(model.index(1, RankTableModel::kRole), Qt::DisplayRole).toString(),
            "stage 1");
  EXPECT_EQ(model.data(model.index(0, RankTableModel::kRole), Qt::DisplayRole).toString(), "—");
}

// Issue 61: sorted by Loss, which re-sorts at every refresh, a shift-click on the row next to the
// one clicked selected 7 of 8 rows (Qt's anchor is the rank first clicked, wherever the sort had
// moved it), and Ctrl+C copied ranks never chosen. Under the pointer the order holds, so a click
// and a shift-click choose the ranks shown; once the pointer leaves, the rows re-sort and the
// selection follows its ranks.
TEST(RankTable, AShiftClickSelectsTheRanksShownAndFollowsThemAcrossReSorts) {
  constexpr int kRanks = 8;
  JobData job("job-1");
  proto::JournalRecord accepted = record(1, "agent:a");
  accepted.mutable_job_accepted()->set_launcher(proto::NATIVE);
  accepted.mutable_job_accepted()->set_world_size(kRanks);
  for (int rank = 0; rank < kRanks; ++rank) {
    accepted.mutable_job_accepted()->add_ranks()->set_rank(rank);
  }
  job.ingest("a", accepted);
  uint64_t seq = 2;
  int round = 0;
  RankTableModel model;
  // A refresh: a new loss per rank, in an order that differs from the last one's.
  const auto refresh = [&] {
    for (int rank = 0; rank < kRanks; ++rank) {
      proto::JournalRecord m = record(seq++, "rank:" + std::to_string(rank));
      m.mutable_metric()->set_rank(rank);
      m.mutable_metric()->set_step(round + 1);
      auto* loss = m.mutable_metric()->add_values();
      loss->set_name("loss");
      loss->set_value(((rank * 5 + round * 3) % kRanks) + 0.5);
      job.ingest("a", m);
    }
    model.update(job, 120 + round++);
    QApplication::processEvents();
  };
  refresh();
  QWidget window;
  auto* layout = new QVBoxLayout(&window);
  auto* elsewhere = new QLabel("elsewhere");
  auto* view = new RankTableView(&model);
  layout->addWidget(elsewhere);
  layout->addWidget(view);
  window.resize(900, 500);
  view->sortByColumn(RankTableModel::kLoss, Qt::AscendingOrder);
  window.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
  const QSortFilterProxyModel& proxy = *view->sortedRanks();

  const auto rankAtRow = [&](int row) {
    return proxy.index(row, 0).data(RankTableModel::kRankRole).toInt();
  };
  const auto rowPoint = [&](int row) {
    return view->visualRect(proxy.index(row, RankTableModel::kAgent)).center();
  };
  const auto clickRow = [&](int row, Qt::KeyboardModifiers modifiers) {
    QTest::mouseMove(view->viewport(), rowPoint(row));
    QTest::mouseClick(view->viewport(), Qt::LeftButton, modifiers, rowPoint(row));
  };
  const auto shownRanks = [&] {
    std::vector<int> ranks;
    for (int row = 0; row < kRanks; ++row) ranks.push_back(rankAtRow(row));
    return ranks;
  };
  const auto selectedRanks = [&] {
    std::set<int> ranks;
    for (const QModelIndex& index : view->selectionModel()->selectedRows()) {
      ranks.insert(index.data(RankTableModel::kRankRole).toInt());
    }
    return ranks;
  };
  const auto copiedRanks = [&] {
    QApplication::clipboard()->clear();
    QTest::keySequence(view, QKeySequence::Copy);
    std::set<int> ranks;
    QStringList lines = QApplication::clipboard()->text().split('\n', Qt::SkipEmptyParts);
    if (!lines.isEmpty()) lines.removeFirst();  // the header
    for (const QString& line : lines) ranks.insert(line.section('\t', 0, 0).toInt());
    return ranks;
  };

  // Rows 2 to 4 with refreshes between the click and the shift-click, then two adjacent rows.
  for (const auto& [first, last] : std::vector<std::pair<int, int>>{{2, 4}, {5, 6}}) {
    SCOPED_TRACE(first);
    clickRow(first, Qt::NoModifier);
    EXPECT_TRUE(view->orderHeld());
    const std::vector<int> shown = shownRanks();
    for (int i = 0; i < 3; ++i) refresh();
    EXPECT_EQ(shownRanks(), shown) << "the rows moved under the pointer";
    clickRow(last, Qt::ShiftModifier);
    std::set<int> chosen;
    for (int row = first; row <= last; ++row) chosen.insert(shown[static_cast<size_t>(row)]);
    ASSERT_EQ(selectedRanks(), chosen);

    // The pointer leaves: the rows catch up with the sort and go on moving; the selection stays
    // on the ranks chosen, and only those are copied.
    QTest::mouseMove(elsewhere, elsewhere->rect().center());
    QTRY_VERIFY_WITH_TIMEOUT(!view->orderHeld(), 2000);
    bool moved = false;
    for (int i = 0; i < 20; ++i) {
      refresh();
      moved = moved || shownRanks() != shown;
      ASSERT_EQ(selectedRanks(), chosen) << "after refresh " << i;
    }
    EXPECT_TRUE(moved);
    EXPECT_EQ(copiedRanks(), chosen);
  }
}

}  // namespace
}  // namespace ringmaster::gui
