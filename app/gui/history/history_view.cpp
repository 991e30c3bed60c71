#include "history/history_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFrame>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QShortcut>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <utility>

#include "history/history_proxy.h"
#include "ringmaster/job/job_model.h"
#include "table_copy.h"
#include "table_padding.h"

namespace ringmaster::gui {

HistoryView::HistoryView(QWidget* parent)
    : QWidget(parent),
      model_(new HistoryModel(this)),
      proxy_(new HistoryProxy(this)),
      filter_(new QLineEdit(this)),
      state_(new QComboBox(this)),
      count_(new QLabel(this)),
      table_(new QTableView(this)),
      open_(new QPushButton(tr("Open"), this)),
      compare_(new QPushButton(tr("Compare"), this)),
      clone_(new QPushButton(tr("Clone…"), this)),
      configs_(new QPushButton(tr("Compare configs"), this)),
      archive_(new QPushButton(tr("Archive"), this)),
      delete_(new QPushButton(tr("Delete…"), this)),
      refresh_(new QPushButton(tr("Refresh"), this)),
      show_archived_(new QCheckBox(tr("Show archived"), this)),
      undo_bar_(new QFrame(this)),
      undo_text_(new QLabel(undo_bar_)),
      undo_timer_(new QTimer(this)),
      ticker_(new QTimer(this)) {
  proxy_->setSourceModel(model_);

  filter_->setObjectName(QStringLiteral("historyFilter"));
  filter_->setPlaceholderText(tr("Filter, e.g. \"resnet failed\""));
  filter_->setToolTip(tr("Words each of which the run's name, job id or state contains"));
  filter_->setClearButtonEnabled(true);
  filter_->setMinimumWidth(320);
  state_->setObjectName(QStringLiteral("historyState"));
  state_->setToolTip(tr("Only the runs in this state"));
  state_->addItem(tr("All states"), QStringList());
  state_->addItem(tr("Not over"), QStringList{"submitted", "starting", "running", "restarting",
                                              "waiting", "stopping", "unknown"});
  for (const char* state : {"succeeded", "failed", "stopped", "unknown"}) {
    state_->addItem(QString::fromLatin1(state), QStringList{QString::fromLatin1(state)});
  }
  count_->setObjectName(QStringLiteral("historyCount"));
  open_->setObjectName(QStringLiteral("historyOpen"));
  compare_->setObjectName(QStringLiteral("historyCompare"));
  refresh_->setObjectName(QStringLiteral("historyRefresh"));
  clone_->setObjectName(QStringLiteral("historyClone"));
  clone_->setToolTip(
      tr("A new job from the selected run's spec, in the editor (the run itself is "
         "untouched)"));
  open_->setToolTip(tr("Open the run as a read-only dashboard (double-click or Enter)"));
  compare_->setToolTip(tr("Overlay the series of the selected runs (select two or more)"));
  refresh_->setToolTip(tr("Read the history again"));
  configs_->setObjectName(QStringLiteral("historyConfigs"));
  configs_->setToolTip(
      tr("The specs of the selected runs side by side, differences highlighted (select two or "
         "more)"));
  archive_->setObjectName(QStringLiteral("historyArchive"));
  delete_->setObjectName(QStringLiteral("historyDelete"));
  show_archived_->setObjectName(QStringLiteral("historyShowArchived"));
  show_archived_->setToolTip(tr("List archived runs too, greyed and marked \"archived\""));
  auto* undo = new QPushButton(tr("Undo"), undo_bar_);
  undo->setObjectName(QStringLiteral("historyUndo"));
  undo_bar_->setObjectName(QStringLiteral("historyUndoBar"));
  undo_bar_->setFrameShape(QFrame::StyledPanel);
  auto* undo_row = new QHBoxLayout(undo_bar_);
  undo_row->setContentsMargins(8, 2, 2, 2);
  undo_row->addWidget(undo_text_, 1);
  undo_row->addWidget(undo);
  undo_bar_->hide();
  undo_timer_->setSingleShot(true);
  undo_timer_->setInterval(kUndoMs);
  connect(undo_timer_, &QTimer::timeout, this, &HistoryView::finishPendingDelete);
  connect(undo, &QPushButton::clicked, this, &HistoryView::undoDelete);

  table_->setObjectName(QStringLiteral("historyTable"));
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(HistoryModel::kStarted, Qt::DescendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setAlternatingRowColors(true);
  installTableCopy(table_);
  table_->setShowGrid(false);
  table_->setWordWrap(false);
  table_->setTextElideMode(Qt::ElideMiddle);
  padTableColumns(table_);  // room between a right-aligned number and the next column
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 10);
  QHeaderView* header = table_->horizontalHeader();
  header->setSectionsMovable(true);
  header->setHighlightSections(false);
  header->setStretchLastSection(true);
  header->setMinimumSectionSize(60);
  header->setContextMenuPolicy(Qt::CustomContextMenu);
  header->setToolTip(tr("Right-click: choose the columns"));
  connect(header, &QWidget::customContextMenuRequested, this, &HistoryView::showColumnMenu);
  if (const QByteArray saved = QSettings().value(kHeaderKey).toByteArray(); !saved.isEmpty()) {
    header->restoreState(saved);
    columns_sized_ = true;
  }
  for (auto signal : {&QHeaderView::sectionMoved, &QHeaderView::sectionResized}) {
    connect(header, signal, this,
            [header] { QSettings().setValue(kHeaderKey, header->saveState()); });
  }

  // Two rows, so that the window still fits a 1024-px screen: what the list shows, then what
  // can be done with the runs selected (the destructive actions apart, on the right).
  auto* top = new QHBoxLayout;
  top->addWidget(filter_, 1);
  top->addWidget(state_);
  top->addWidget(show_archived_);
  top->addWidget(refresh_);
  auto* actions = new QHBoxLayout;
  actions->addWidget(count_);
  actions->addSpacing(12);
  actions->addWidget(open_);
  actions->addWidget(compare_);
  actions->addWidget(configs_);
  actions->addWidget(clone_);
  actions->addStretch(1);
  actions->addWidget(archive_);
  actions->addWidget(delete_);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addLayout(actions);
  layout->addWidget(table_, 1);
  layout->addWidget(undo_bar_);

  connect(filter_, &QLineEdit::textChanged, proxy_, &HistoryProxy::setFilterWords);
  connect(state_, &QComboBox::currentIndexChanged, this,
          [this] { proxy_->setStateFilter(state_->currentData().toStringList()); });
  connect(proxy_, &QAbstractItemModel::rowsInserted, this, &HistoryView::updateActions);
  connect(proxy_, &QAbstractItemModel::rowsRemoved, this, &HistoryView::updateActions);
  connect(proxy_, &QAbstractItemModel::modelReset, this, &HistoryView::updateActions);
  connect(proxy_, &QAbstractItemModel::layoutChanged, this, &HistoryView::updateActions);
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          &HistoryView::updateActions);
  // activated: double-click, or Enter on the current row.
  connect(table_, &QAbstractItemView::activated, this, [this](const QModelIndex& index) {
    const QString id = index.data(HistoryModel::kJobIdRole).toString();
    if (!id.isEmpty()) emit openRun(id);
  });
  connect(open_, &QPushButton::clicked, this, &HistoryView::openCurrent);
  connect(compare_, &QPushButton::clicked, this, [this] {
    const QStringList ids = selectedJobIds();
    if (ids.size() >= 2) emit compareRuns(ids);
  });
  connect(refresh_, &QPushButton::clicked, this, &HistoryView::refreshRequested);
  connect(clone_, &QPushButton::clicked, this, &HistoryView::cloneCurrent);
  connect(configs_, &QPushButton::clicked, this, [this] {
    const QStringList ids = selectedJobIds();
    if (ids.size() >= 2) emit compareConfigs(ids);
  });
  connect(archive_, &QPushButton::clicked, this, &HistoryView::archiveSelected);
  connect(delete_, &QPushButton::clicked, this, &HistoryView::deleteSelected);
  auto* delete_key = new QShortcut(QKeySequence::Delete, table_);
  delete_key->setContext(Qt::WidgetShortcut);
  connect(delete_key, &QShortcut::activated, this, [this] {
    if (delete_->isEnabled()) deleteSelected();
  });
  connect(show_archived_, &QCheckBox::toggled, proxy_, &HistoryProxy::setShowArchived);
  ticker_->setInterval(1000);
  connect(ticker_, &QTimer::timeout, this, &HistoryView::tick);

  updateActions();
}

void HistoryView::setRuns(std::vector<RunSummary> runs) {
  const QStringList selected = selectedJobIds();
  const QString current = table_->currentIndex().data(HistoryModel::kJobIdRole).toString();
  const bool any_running = std::any_of(
      runs.begin(), runs.end(), [](const RunSummary& r) { return r.job.state == "running"; });
  link_tests_ = static_cast<int>(std::count_if(runs.begin(), runs.end(), [](const RunSummary& r) {
    return store::isPreflightJob(r.job.name);
  }));
  model_->setRuns(std::move(runs));
  // The proxy keeps its sort column and order across a source reset; selection is by id.
  selectJobIds(selected);
  if (!current.isEmpty()) {
    const int row = model_->rowOf(current);
    if (row >= 0) {
      const QModelIndex index = proxy_->mapFromSource(model_->index(row, 0));
      table_->selectionModel()->setCurrentIndex(index, QItemSelectionModel::NoUpdate);
    }
  }
  if (!columns_sized_ && model_->rowCount() > 0) {
    // Size to the first real data once; afterwards the person's column widths stay.
    table_->resizeColumnsToContents();
    QHeaderView* header = table_->horizontalHeader();
    for (int c = 0; c < HistoryModel::kColumns; ++c)
      header->resizeSection(c, header->sectionSize(c) + 16);
    columns_sized_ = true;
  }
  if (any_running) {
    ticker_->start();
  } else {
    ticker_->stop();
  }
  updateActions();
}

QStringList HistoryView::selectedJobIds() const {
  QModelIndexList rows = table_->selectionModel()->selectedRows();
  std::sort(rows.begin(), rows.end(),
            [](const QModelIndex& a, const QModelIndex& b) { return a.row() < b.row(); });
  QStringList ids;
  ids.reserve(rows.size());
  for (const QModelIndex& index : rows) ids << index.data(HistoryModel::kJobIdRole).toString();
  return ids;
}

void HistoryView::selectJobIds(const QStringList& job_ids) {
  QItemSelection selection;
  for (const QString& id : job_ids) {
    const int row = model_->rowOf(id);
    if (row < 0) continue;
    const QModelIndex index = proxy_->mapFromSource(model_->index(row, 0));
    if (index.isValid()) selection.select(index, index);
  }
  table_->selectionModel()->select(selection,
                                   QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  updateActions();
}

void HistoryView::setFilterText(const QString& text) { filter_->setText(text); }

QString HistoryView::countText() const { return count_->text(); }

void HistoryView::updateActions() {
  const int selected = static_cast<int>(table_->selectionModel()->selectedRows().size());
  open_->setEnabled(selected >= 1);
  compare_->setEnabled(selected >= 2);
  clone_->setEnabled(selected == 1);
  configs_->setEnabled(selected >= 2);
  // Archive, or Unarchive when every selected run is archived already.
  bool all_archived = selected > 0, any_live = false;
  for (const QModelIndex& index : table_->selectionModel()->selectedRows()) {
    all_archived = all_archived && index.data(HistoryModel::kArchivedRole).toBool();
    const QString state = index.data(HistoryModel::kStateRole).toString();
    any_live = any_live || !job::isOverState(state.toStdString());
  }
  archive_->setEnabled(selected >= 1);
  archive_->setText(all_archived ? tr("Unarchive") : tr("Archive"));
  archive_->setToolTip(all_archived ? tr("Show the selected runs in the list again")
                                    : tr("Hide the selected runs from the list; they are kept "
                                         "whole (Show archived lists them)"));
  // A run still going would be written again by its own records: it is stopped first.
  delete_->setEnabled(selected >= 1 && !any_live);
  delete_->setToolTip(any_live ? tr("Stop the run first: a run still going cannot be deleted")
                               : tr("Remove the selected runs and everything recorded of them "
                                    "(asks first; Undo is offered for %1 s)")
                                     .arg(undo_timer_->interval() / 1000));
  // A preflight's link tests are not counted as runs unless searched for: 2,016 of them would
  // make "2,020 runs (4 shown)" of four training runs.
  const int total = model_->rowCount() - (proxy_->showsLinkTests() ? 0 : link_tests_);
  const int shown = proxy_->rowCount();
  QString text = total == 1 ? tr("1 run") : tr("%1 runs").arg(total);
  if (shown != total) text += tr(" (%1 shown)").arg(shown);
  if (selected > 0) text += tr(", %1 selected").arg(selected);
  const bool hidden_tests = link_tests_ > 0 && !proxy_->showsLinkTests();
  if (hidden_tests) text += tr(" · %1 link tests hidden").arg(link_tests_);
  count_->setText(text);
  count_->setToolTip(hidden_tests ? tr("The cluster preflight's link tests are not listed: search "
                                       "\"preflight\" to list them. Cluster › Check cluster shows "
                                       "each check's report.")
                                  : QString());
}

QString HistoryView::runLabel(const QString& job_id) const {
  const int row = model_->rowOf(job_id);
  if (row < 0) return job_id;
  const std::string& name = model_->runs()[static_cast<size_t>(row)].job.name;
  return name.empty() ? job_id : QString::fromStdString(name);
}

void HistoryView::setDeleteConfirmation(std::function<bool(const QStringList&)> confirm) {
  confirm_delete_ = std::move(confirm);
}

void HistoryView::setUndoWindowMs(int ms) { undo_timer_->setInterval(ms); }

QString HistoryView::undoText() const {
  return pending_delete_.isEmpty() ? QString() : undo_text_->text();
}

void HistoryView::archiveSelected() {
  const QStringList ids = selectedJobIds();
  if (ids.isEmpty()) return;
  RunEdit edit;
  edit.kind =
      archive_->text() == tr("Unarchive") ? RunEdit::Kind::kUnarchive : RunEdit::Kind::kArchive;
  for (const QString& id : ids) edit.job_ids.push_back(id.toStdString());
  emit editRuns(edit);
}

void HistoryView::deleteSelected() {
  const QStringList ids = selectedJobIds();
  if (ids.isEmpty() || !delete_->isEnabled()) return;
  QStringList runs;
  for (const QString& id : ids) runs << QStringLiteral("%1 (%2)").arg(runLabel(id), id);
  const bool confirmed =
      confirm_delete_
          ? confirm_delete_(runs)
          : QMessageBox::question(
                this, tr("Delete runs"),
                (ids.size() == 1
                     ? tr("Delete this run and everything recorded of it")
                     : tr("Delete these %1 runs and everything recorded of them").arg(ids.size())) +
                    tr(" (metrics, events, log tails)?\n\n%1\n\nUndo is offered for %2 "
                       "seconds. To keep a run but hide it, Archive it instead.")
                        .arg(runs.join(QLatin1Char('\n')))
                        .arg(undo_timer_->interval() / 1000),
                QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel) == QMessageBox::Yes;
  if (!confirmed) return;
  finishPendingDelete();  // one Undo at a time: the previous delete is final now
  RunEdit edit{RunEdit::Kind::kDelete, {}};
  for (const QString& id : ids) edit.job_ids.push_back(id.toStdString());
  pending_delete_ = ids;
  QStringList names;
  for (const QString& id : ids) names << runLabel(id);
  undo_text_->setText(
      (ids.size() == 1 ? tr("Deleted 1 run: %1") : tr("Deleted %1 runs: %2").arg(ids.size()))
          .arg(names.join(QStringLiteral(", "))));
  undo_bar_->show();
  undo_timer_->start();
  emit editRuns(edit);
}

void HistoryView::undoDelete() { endPendingDelete(RunEdit::Kind::kUndelete); }
void HistoryView::finishPendingDelete() { endPendingDelete(RunEdit::Kind::kPurge); }

void HistoryView::endPendingDelete(RunEdit::Kind kind) {
  if (pending_delete_.isEmpty()) return;
  undo_timer_->stop();
  undo_bar_->hide();
  RunEdit edit{kind, {}};
  for (const QString& id : std::exchange(pending_delete_, {})) {
    edit.job_ids.push_back(id.toStdString());
  }
  emit editRuns(edit);
}

std::vector<RunSpec> HistoryView::specsOf(const QStringList& job_ids) const {
  std::vector<RunSpec> specs;
  for (const QString& id : job_ids) {
    const int row = model_->rowOf(id);
    if (row < 0) continue;
    const store::JobRow& job = model_->runs()[static_cast<size_t>(row)].job;
    specs.push_back({QStringLiteral("%1 · %2").arg(runLabel(id), id.right(4)), job.spec_yaml});
  }
  return specs;
}

void HistoryView::cloneCurrent() {
  const QStringList ids = selectedJobIds();
  if (ids.size() != 1) return;
  const int row = model_->rowOf(ids.front());
  if (row < 0) return;
  const store::JobRow& job = model_->runs()[static_cast<size_t>(row)].job;
  if (job.spec_yaml.empty()) {
    QMessageBox::information(this, tr("Clone"),
                             tr("The history has no spec for %1 (it was submitted by an older "
                                "client, or to Slurm without one).")
                                 .arg(QString::fromStdString(job.job_id)));
    return;
  }
  emit cloneRun(QString::fromStdString(job.spec_yaml), QString::fromStdString(job.name));
}

void HistoryView::showColumnMenu(const QPoint& at) {
  QHeaderView* header = table_->horizontalHeader();
  QMenu menu(this);
  for (int column = 0; column < model_->columnCount(); ++column) {
    QAction* action = menu.addAction(model_->headerData(column, Qt::Horizontal).toString());
    action->setCheckable(true);
    action->setChecked(!header->isSectionHidden(column));
    action->setEnabled(column != HistoryModel::kName);  // a run needs its name
    connect(action, &QAction::toggled, this, [header, column](bool shown) {
      header->setSectionHidden(column, !shown);
      QSettings().setValue(kHeaderKey, header->saveState());
    });
  }
  menu.exec(header->mapToGlobal(at));
}

void HistoryView::openCurrent() {
  QModelIndex index = table_->currentIndex();
  if (!index.isValid() || !table_->selectionModel()->isRowSelected(index.row(), {})) {
    const QModelIndexList rows = table_->selectionModel()->selectedRows();
    if (rows.isEmpty()) return;
    index = rows.front();
  }
  const QString id = index.data(HistoryModel::kJobIdRole).toString();
  if (!id.isEmpty()) emit openRun(id);
}

void HistoryView::tick() {
  if (!model_->tickRunningDurations()) ticker_->stop();
}

}  // namespace ringmaster::gui
