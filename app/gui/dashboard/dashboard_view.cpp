#include "dashboard/dashboard_view.h"

#include <QComboBox>
#include <QDateTime>
#include <QGridLayout>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QLocale>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSignalBlocker>
#include <QSlider>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <set>

#include "charts/metric_chart.h"
#include "charts/palette.h"
#include "dashboard/eliding_button.h"
#include "dashboard/fitting_label.h"
#include "dashboard/log_pane.h"
#include "dashboard/rank_table_model.h"
#include "dashboard/rank_table_view.h"
#include "history/run_format.h"
#include "ringmaster/job/device_plan.h"
#include "ringmaster/slurm/job_state.h"
#include "ringmaster/util/wall_clock.h"
#include "straggler/straggler_heatmap.h"

namespace ringmaster::gui {
namespace {

// Ten redraws a second: live to the eye, and a fraction of the GUI thread at 50k samples/s.
constexpr int kRedrawMs = 100;
// Charts first in this order; any other metric follows in the order it appeared.
const char* const kPreferredMetrics[] = {"loss",       "eval_loss",       "accuracy",
                                         "mse",        "samples_per_sec", "step_time",
                                         "comm_time",  "comm_wait",       "bubble_fraction",
                                         "bytes_sent", "bytes_received",  "compression_error",
                                         "lr"};
// Per-step bookkeeping that is not worth a chart of its own (pipeline_stage and ps_role: a
// rank's constant stage or parameter-server role, for the rank table, the metrics table and
// ringmasterctl metrics).
const char* const kHiddenMetrics[] = {"step",           "param_checksum", "epoch",
                                      "pipeline_stage", "ps_role",        kBusyTime};
const QString kHealthCpu = "Host CPU %";
const QString kHealthGpu = "GPU utilization %";
const QString kHealthNet = "Network MB/s";

// "Slurm 123 on hpc: pending (Priority)", the reason in amber while the job waits in the queue.
QString slurmText(const store::SlurmJobRow& row) {
  const slurm::Phase phase = slurm::phaseOf(row.state);
  QString text =
      QString("Slurm %1 on %2: %3")
          .arg(QString::fromStdString(row.slurm_job_id),
               QString::fromStdString(row.cluster).toHtmlEscaped(),
               phase == slurm::Phase::kUnknown ? QString::fromStdString(row.state).toHtmlEscaped()
                                               : QString(slurm::phaseName(phase)));
  if (!row.reason.empty()) {
    text += QString(" (<span style='color:#ffb030'>%1</span>)")
                .arg(QString::fromStdString(row.reason).toHtmlEscaped());
  }
  return text;
}

// The unit of a chart's values, from its title's words: the y axis's title.
QString unitOf(const QString& title) {
  if (title.endsWith("(s)")) return "seconds";
  if (title.endsWith("/s") || title.endsWith("%")) return title.section(' ', -1);
  if (title.endsWith("°C")) return "°C";
  if (title == "accuracy") return "fraction";
  return {};
}

bool isHealthChart(const QString& title) {
  return title == kHealthCpu || title == kHealthGpu || title == kHealthNet;
}

QString metricTitle(const std::string& name) {
  if (name == "samples_per_sec") return "samples/s";
  if (name == "step_time") return "step time (s)";
  if (name == "comm_time") return "comm time (s)";
  if (name == "comm_wait") return "comm wait (s)";
  return QString::fromStdString(name);
}

std::vector<std::string> chartMetrics(const JobData& job) {
  std::vector<std::string> names;
  for (const char* preferred : kPreferredMetrics) {
    if (job.metric(preferred)) names.push_back(preferred);
  }
  for (const auto& name : job.metricNames()) {
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    if (std::find(std::begin(kHiddenMetrics), std::end(kHiddenMetrics), name) !=
        std::end(kHiddenMetrics)) {
      continue;
    }
    names.push_back(name);
  }
  return names;
}

}  // namespace

DashboardView::DashboardView(SessionBridge* bridge, const QString& job_id, bool live,
                             QWidget* parent)
    : QWidget(parent),
      bridge_(bridge),
      job_id_(job_id),
      live_(live),
      job_(std::make_unique<JobData>(job_id.toStdString())) {
  // The user's last smoothing and x axis, as TensorBoard keeps them.
  const double saved_smoothing = QSettings().value(kSmoothingKey, smoothing_).toDouble();
  if (std::isfinite(saved_smoothing)) smoothing_ = std::clamp(saved_smoothing, 0.0, 0.99);
  for (const QString& key : QSettings().value(stateKey("hiddenLines")).toStringList()) {
    hidden_lines_.insert(key.toInt());
  }
  QLayout* header = buildHeader();
  QLayout* controls = buildControls();
  QSplitter* charts_row = buildChartsRow();
  QTabWidget* tables = buildTables();
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(charts_row);
  split->addWidget(tables);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  split->setSizes({700, 220});
  // How the user last divided a dashboard (charts against tables, rank list against charts):
  // every dashboard opens so, on the next start too.
  for (QSplitter* splitter : {split, charts_row}) {
    const QString key = splitter == split ? kSplitKey : kChartsRowKey;
    splitter->restoreState(QSettings().value(key).toByteArray());
    connect(splitter, &QSplitter::splitterMoved, this,
            [splitter, key] { QSettings().setValue(key, splitter->saveState()); });
  }

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(header);
  layout->addWidget(problem_);
  layout->addLayout(controls);
  layout->addWidget(split, 1);

  connectControls();
  connectRankList();
  connectActions();
  startTimers();
  // Read and built off the GUI thread: a past run of 10^5 steps held it for seconds. A live
  // dashboard's checkpoint economics needs every host's record too.
  using Loaded = Result<std::unique_ptr<JobData>>;
  const bool reading = bridge_->readHistory<Loaded>(
      [id = job_id_.toStdString(), options = client::SnapshotOptions{.host_records = live_}](
          store::Reader& history) { return JobData::fromHistory(history, id, options); },
      this, [this](Loaded loaded) { onJobLoaded(std::move(loaded)); });
  loaded_ = !reading;  // no session (yet): nothing to wait for
}

// Header: what the job is, how it is doing, and the one thing that went wrong.
QLayout* DashboardView::buildHeader() {
  title_full_ = job_id_;
  title_ = new QLabel(job_id_);
  QFont title_font = title_->font();
  title_font.setPointSizeF(title_font.pointSizeF() * 1.35);
  title_font.setBold(true);
  title_->setFont(title_font);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary_ = new QLabel("loading from the history…");
  summary_->setTextFormat(Qt::RichText);
  // Neither a long job name nor a long summary may widen the window: the name is cut, the
  // summary wraps (a straggler's name at its end must stay readable).
  title_->setMinimumWidth(1);
  summary_->setMinimumWidth(1);
  summary_->setWordWrap(true);
  // The spec's description: what the job is and what to look at (the demo's says what to try).
  about_ = new QLabel;
  about_->setObjectName("about");
  about_->setWordWrap(true);
  about_->setMinimumWidth(1);
  about_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  about_->setForegroundRole(QPalette::PlaceholderText);
  about_->setVisible(false);
  // What a failure now would cost and what checkpoints cost: only while the job runs.
  checkpoint_ = new QLabel;
  checkpoint_->setObjectName("checkpoint-economics");
  checkpoint_->setWordWrap(true);
  checkpoint_->setMinimumWidth(1);
  checkpoint_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  checkpoint_->setToolTip(
      "Checkpoint economics: the work a failure now would lose (since the newest checkpoint), "
      "what writing one costs (measured), what a restart of this job took, how often these "
      "hosts failed in the history, and the interval that loses least (Daly's refinement of "
      "Young's sqrt(2 x cost x MTBF)).");
  checkpoint_->setVisible(false);
  problem_ = new ElidingButton;
  problem_->setVisible(false);
  stop_ = new QPushButton("Stop job");
  stop_->setToolTip("SIGTERM to every rank's process group, SIGKILL after the grace period");
  restart_ = new QPushButton("Restart");
  restart_->setObjectName("restart-job");
  restart_->setToolTip(
      "A new attempt from the newest checkpoint every rank has, on every host or "
      "without one");
  restart_menu_ = new QMenu(restart_);
  restart_->setMenu(restart_menu_);
  connect(restart_menu_, &QMenu::aboutToShow, this, &DashboardView::fillRestartMenu);

  auto* header_text = new QVBoxLayout;
  header_text->addWidget(title_);
  header_text->addWidget(summary_);
  header_text->addWidget(checkpoint_);
  header_text->addWidget(about_);
  auto* header = new QHBoxLayout;
  header->addLayout(header_text, 1);
  header->addWidget(restart_);
  header->addWidget(stop_);
  return header;
}

// Controls shared by every chart.
QLayout* DashboardView::buildControls() {
  axis_box_ = new QComboBox;
  axis_box_->setObjectName("xAxis");
  axis_box_->addItem("x: step");
  axis_box_->addItem("x: time since start");
  axis_box_->addItem("x: wall time");
  axis_box_->setToolTip(
      "What the charts' x axis counts: training steps, the time since the job "
      "started (h:mm:ss), or the wall clock");
  lines_box_ = new QComboBox;
  lines_box_->setObjectName("lineMode");
  lines_box_->addItem("lines: each rank");
  lines_box_->addItem("lines: mean, min–max band");
  lines_box_->setToolTip(
      "Each rank's own line, or the ranks' mean at each step with the band "
      "from the lowest to the highest rank");
  smoothing_slider_ = new QSlider(Qt::Horizontal);
  smoothing_slider_->setObjectName("smoothing");
  smoothing_slider_->setRange(0, 99);
  smoothing_slider_->setValue(static_cast<int>(std::lround(smoothing_ * 100)));
  smoothing_slider_->setFixedWidth(140);
  smoothing_label_ = new QLabel;
  smoothing_label_->setMinimumWidth(110);
  auto* reset = new QPushButton("Reset zoom");
  auto* controls = new QHBoxLayout;
  controls->addWidget(axis_box_);
  controls->addWidget(lines_box_);
  controls->addSpacing(12);
  controls->addWidget(smoothing_label_);
  controls->addWidget(smoothing_slider_);
  controls->addSpacing(12);
  controls->addWidget(reset);
  // A hint, not a control: it gives way, shorter and then not at all, before anything else does.
  auto* hint = new FittingLabel({"Drag: zoom · right-drag: pan · double-click: reset",
                                 "drag: zoom · double-click: reset", "drag: zoom"});
  hint->setObjectName("zoomHint");
  hint->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
  controls->addWidget(hint, 1);
  connect(reset, &QPushButton::clicked, this, [this] {
    for (auto& [title, chart] : charts_) chart->resetZoom();
    heatmap_->resetXRange();
    heatmap_->refresh();
  });
  return controls;
}

// The rank toggles beside the charts, the charts and the straggler heatmap.
QSplitter* DashboardView::buildChartsRow() {
  rank_list_ = new QListWidget;
  rank_list_->setObjectName("rankList");
  rank_list_->setFixedWidth(150);
  rank_list_->setToolTip(
      tr("Lines shown in every chart. Double-click or Alt+click: only this one (again: all); "
         "right-click: only this one, or all"));
  rank_list_->setContextMenuPolicy(Qt::CustomContextMenu);

  chart_area_ = new QWidget;
  chart_grid_ = new QGridLayout(chart_area_);
  chart_grid_->setContentsMargins(0, 0, 0, 0);
  chart_grid_->setSpacing(6);
  chart_grid_->setColumnStretch(0, 1);
  chart_grid_->setColumnStretch(1, 1);
  heatmap_ = new StragglerHeatmap;
  heatmap_->setXAxis(axis_);
  auto* chart_column = new QWidget;
  auto* chart_column_layout = new QVBoxLayout(chart_column);
  chart_column_layout->setContentsMargins(0, 0, 0, 0);
  chart_column_layout->addWidget(chart_area_);
  chart_column_layout->addWidget(heatmap_);
  chart_column_layout->addStretch(1);
  scroll_ = new QScrollArea;
  scroll_->setWidgetResizable(true);
  scroll_->setWidget(chart_column);
  scroll_->setFrameShape(QFrame::NoFrame);
  auto* charts_row = new QSplitter(Qt::Horizontal);
  charts_row->addWidget(rank_list_);
  charts_row->addWidget(scroll_);
  charts_row->setStretchFactor(1, 1);
  charts_row->setSizes({150, 1250});
  return charts_row;
}

// Ranks, events, logs.
QTabWidget* DashboardView::buildTables() {
  rank_model_ = new RankTableModel(this);
  rank_table_ = new RankTableView(rank_model_);
  // This job's sort as it was left (its state is kept per job, see stateKey()).
  const QStringList sort = QSettings().value(stateKey("rankSort")).toStringList();
  rank_table_->sortByColumn(
      sort.size() == 2 ? sort[0].toInt() : RankTableModel::kRank,
      sort.size() == 2 && sort[1] == "desc" ? Qt::DescendingOrder : Qt::AscendingOrder);
  connect(rank_table_->horizontalHeader(), &QHeaderView::sortIndicatorChanged, this,
          [this](int column, Qt::SortOrder order) {
            QSettings().setValue(
                stateKey("rankSort"),
                QStringList{QString::number(column),
                            order == Qt::DescendingOrder ? QString("desc") : QString("asc")});
          });
  events_ = new QTreeWidget;
  events_->setObjectName("events");
  events_->setHeaderLabels({"Time", "Event", "Detail"});
  events_->setRootIsDecorated(true);  // a run of checkpoints opens to show each
  events_->setAlternatingRowColors(true);
  log_pane_ = new LogPane(bridge_, job_id_);
  tabs_ = new QTabWidget;
  tabs_->addTab(rank_table_, "Ranks");
  tabs_->addTab(events_, "Events");
  tabs_->addTab(log_pane_, "Logs");
  return tabs_;
}

// The controls' changes, and their saved values (smoothing is read in the constructor).
void DashboardView::connectControls() {
  connect(axis_box_, &QComboBox::currentIndexChanged, this, [this](int index) {
    setXChoice(static_cast<XChoice>(index));
    QSettings().setValue(kXAxisKey, index);
  });
  // A drag moves the label at once and the charts at most every 80 ms, each chart redrawn on its
  // own turn of the event loop: with 8 ranks, redrawing every chart on every step of a drag froze
  // the window for seconds.
  auto* apply_smoothing = new QTimer(this);
  apply_smoothing->setSingleShot(true);
  apply_smoothing->setInterval(80);
  connect(apply_smoothing, &QTimer::timeout, this, [this] {
    for (auto& [title, chart] : charts_) {
      if (!isHealthChart(title)) chart->setSmoothingSoon(smoothing_);
    }
    QSettings().setValue(kSmoothingKey, smoothing_);
  });
  connect(smoothing_slider_, &QSlider::valueChanged, this, [this, apply_smoothing](int value) {
    smoothing_ = value / 100.0;
    smoothing_label_->setText(QString("Smoothing %1").arg(smoothing_, 0, 'f', 2));
    if (!apply_smoothing->isActive()) apply_smoothing->start();
  });
  smoothing_label_->setText(QString("Smoothing %1").arg(smoothing_, 0, 'f', 2));
  connect(lines_box_, &QComboBox::currentIndexChanged, this, [this](int index) {
    setShowSpread(index == 1);
    QSettings().setValue(kSpreadKey, index == 1);
  });
  const QSettings settings;
  if (settings.value(kSpreadKey, false).toBool()) setShowSpread(true);
  const int saved_axis = settings.value(kXAxisKey, 0).toInt();
  if (saved_axis > 0 && saved_axis <= static_cast<int>(XChoice::kWallTime)) {
    setXChoice(static_cast<XChoice>(saved_axis));
  }
}

void DashboardView::connectRankList() {
  connect(rank_list_, &QListWidget::itemChanged, this, [this] {
    saveHiddenLines();
    updateLines(/*all=*/true);
  });
  // As in Plotly's legends: isolate a line, and the same gesture on it again shows all.
  auto isolate = [this](QListWidgetItem* item) {
    bool only = item->checkState() == Qt::Checked;
    for (int i = 0; i < rank_list_->count() && only; ++i) {
      const QListWidgetItem* other = rank_list_->item(i);
      only = other == item || other->checkState() == Qt::Unchecked;
    }
    showOnlyLines(only ? nullptr : item);
  };
  connect(rank_list_, &QListWidget::itemDoubleClicked, this, isolate);
  connect(rank_list_, &QListWidget::itemClicked, this, [isolate](QListWidgetItem* item) {
    if (QGuiApplication::keyboardModifiers() & Qt::AltModifier) isolate(item);
  });
  connect(rank_list_, &QWidget::customContextMenuRequested, this, [this](const QPoint& at) {
    QListWidgetItem* item = rank_list_->itemAt(at);
    QMenu menu;
    if (item) {
      menu.addAction(tr("Only %1").arg(item->text().simplified()),
                     [this, item] { showOnlyLines(item); });
    }
    menu.addAction(tr("Show all"), [this] { showOnlyLines(nullptr); });
    menu.exec(rank_list_->viewport()->mapToGlobal(at));
  });
}

// The problem line, Stop and Restart, the ranks' and events' clicks, and the session's news.
void DashboardView::connectActions() {
  connect(problem_, &QPushButton::clicked, this, [this] {
    if (shown().liveness.anyUnknown()) {
      tabs_->setCurrentWidget(rank_table_);  // which ranks are unknown, and on which agent
    } else if (auto hang = job_->hangWatch()) {
      showEventLog(*hang);
    } else if (auto problem = job_->firstProblem()) {
      showEventLog(*problem);
    }
  });
  connect(stop_, &QPushButton::clicked, this, &DashboardView::confirmStop);
  rank_table_->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(rank_table_, &QWidget::customContextMenuRequested, this, &DashboardView::showRankMenu);
  connect(bridge_, &SessionBridge::restarted, this,
          [this](uint64_t, const QString& job_id, const QString& error) {
            if (job_id != job_id_) return;
            restart_->setText("Restart");
            if (!error.isEmpty()) QMessageBox::warning(this, "Restart failed", error);
          });
  connect(bridge_, &SessionBridge::rankKilled, this,
          [this](uint64_t, const QString& job_id, int rank, const QString& error) {
            if (job_id == job_id_ && !error.isEmpty()) {
              QMessageBox::warning(this, "Kill rank", QString("rank %1: %2").arg(rank).arg(error));
            }
          });
  connect(heatmap_, &StragglerHeatmap::rankClicked, this, &DashboardView::showRankLog);
  connect(rank_table_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
    showRankLog(index.data(RankTableModel::kRankRole).toInt());
  });
  connect(events_, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem* item) {
    const size_t index = item->data(0, Qt::UserRole).toULongLong();
    if (index < job_->events().size()) showEventLog(job_->events()[index]);
  });
  // Selecting an event (click, arrow keys) brings the charts to its moment.
  connect(events_, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* item) {
    if (!item) return;
    const size_t index = item->data(0, Qt::UserRole).toULongLong();
    if (index < job_->events().size()) focusOnEvent(job_->events()[index]);
  });
  connect(bridge_, &SessionBridge::slurmJobChanged, this, [this](const store::SlurmJobRow& row) {
    if (QString::fromStdString(row.job_id) != job_id_) return;
    job_->setSlurm(row);
    updateHeader();
  });
}

void DashboardView::startTimers() {
  redraw_timer_ = new QTimer(this);
  redraw_timer_->setInterval(kRedrawMs);
  redraw_timer_->setObjectName("dashboard-redraw");
  connect(redraw_timer_, &QTimer::timeout, this, &DashboardView::onRedrawTick);
  redraw_timer_->start();
  // Ages in the rank table and the elapsed time move even when no record comes.
  clock_timer_ = new QTimer(this);
  clock_timer_->setInterval(1000);
  clock_timer_->setObjectName("dashboard-clock");
  connect(clock_timer_, &QTimer::timeout, this, [this] {
    rank_model_->update(*job_, unixSeconds(), shown().liveness.unknown_ranks);
    updateHeader();
  });
  clock_timer_->start();
}

DashboardView::~DashboardView() = default;

void DashboardView::onJobLoaded(Result<std::unique_ptr<JobData>> loaded) {
  if (loaded.isOk()) {
    // Slurm's word on the job may have come while it was read: it is the newer.
    if (job_->slurm()) (*loaded)->setSlurm(*job_->slurm());
    job_ = std::move(*loaded);
  } else if (loaded.status().code() != ErrorCode::kNotFound) {
    // Not in the history yet is normal for a job just submitted; anything else is worth saying.
    summary_->setText("history: " + QString::fromStdString(loaded.status().message()));
  }
  loaded_ = true;
  apply(held_);
  held_.clear();
  // Drawn through the redraw ticks, a chart per turn: a past run of many charts appears over a
  // few tenths of a second rather than after one long stall.
  drawn_version_ = ~0ull;
  onRedrawTick();
}

void DashboardView::ingestSnapshot(const client::JobSnapshot& snapshot) {
  job_->ingestSnapshot(snapshot);
  drawn_version_ = ~0ull;
}

void DashboardView::ingest(const std::vector<AgentRecords>& batch) {
  if (!loaded_) {
    for (const auto& agent : batch) held_.push_back(agent);
    return;
  }
  apply(batch);
}

void DashboardView::apply(const std::vector<AgentRecords>& batch) {
  const std::string id = job_id_.toStdString();
  std::vector<std::string> agents = job_->agents();
  for (const auto& [agent, records] : batch) {
    for (const auto& record : records) {
      if (record.job() == id) {
        job_->ingest(agent, record);
      } else if (record.has_health() && record.job().empty()) {
        if (std::find(agents.begin(), agents.end(), agent) != agents.end()) {
          job_->ingestHealth(agent, record);
        } else if (agents.empty()) {
          agents = job_->agents();
        }
      }
    }
  }
}

std::vector<MetricChart*> DashboardView::charts() const {
  std::vector<MetricChart*> out;
  for (const auto& title : chart_order_) out.push_back(charts_.at(title));
  return out;
}

MetricChart* DashboardView::chart(const QString& title) const {
  auto found = charts_.find(title);
  return found == charts_.end() ? nullptr : found->second;
}

MetricChart* DashboardView::addChart(const QString& title, bool health) {
  auto* chart = new MetricChart(title);
  chart->setMinimumHeight(230);
  chart->setXAxis(health ? metrics::Axis::kTime : axis_);
  chart->setSmoothing(health ? 0 : smoothing_);
  chart->setYLabel(unitOf(title));
  chart->setTimeOrigin(timeOrigin());
  chart->setMarkers(markers_);
  restoreYAxis(chart, title);
  connect(chart, &MetricChart::yAxisChosen, this,
          [this, chart, title] { saveYAxis(chart, title); });
  charts_[title] = chart;
  connect(chart, &MetricChart::xRangeChanged, this,
          [this, chart](double x0, double x1) { linkRange(chart, x0, x1); });
  // One moment on every chart: the hovered one's crosshair echoed on the others, step charts
  // and host health alike (through the time of the hovered step).
  connect(chart, &MetricChart::hoverMoved, this, [this, chart](double step, double time) {
    for (const auto& [title, other] : charts_) {
      if (other != chart) other->showEcho(step, time);
    }
  });
  return chart;
}

std::vector<QString> DashboardView::wantedCharts() const {
  // Metrics in their preferred order, then the hosts' health: the same place on every job.
  std::vector<QString> wanted;
  for (const auto& name : chartMetrics(*job_)) wanted.push_back(metricTitle(name));
  bool any_gpu = false, any_net = false;
  for (const auto& [agent, series] : job_->health()) {
    for (const auto& [key, s] : series) {
      any_gpu = any_gpu || key.find("util %") != std::string::npos;
      any_net = any_net || key.rfind("net ", 0) == 0;
    }
  }
  if (!job_->health().empty()) wanted.push_back(kHealthCpu);
  if (any_gpu) wanted.push_back(kHealthGpu);
  if (any_net) wanted.push_back(kHealthNet);
  return wanted;
}

bool DashboardView::rebuildCharts(bool all) {
  const std::vector<QString> wanted = wantedCharts();
  if (wanted == chart_order_) return true;
  // A new chart costs tens of milliseconds (Qt Charts items): one per turn unless asked for all.
  int created = 0;
  for (const QString& title : wanted) {
    if (charts_.count(title)) continue;
    if (created++ > 0 && !all) break;
    addChart(title, isHealthChart(title));
  }
  chart_order_.clear();
  for (const QString& title : wanted) {
    if (charts_.count(title)) chart_order_.push_back(title);
  }
  for (size_t i = 0; i < chart_order_.size(); ++i) {
    const int index = static_cast<int>(i);
    chart_grid_->addWidget(charts_[chart_order_[i]], index / 2, index % 2);
  }
  return chart_order_.size() == wanted.size();
}

void DashboardView::updateRankList() {
  // One checkable entry per line owner (the job total, each rank), in the colour of its lines.
  // After an elastic restart a rank number may sit on another host, or be gone: the entries say so.
  auto itemOf = [this](int key) -> QListWidgetItem* {
    for (int i = 0; i < rank_list_->count(); ++i) {
      if (rank_list_->item(i)->data(Qt::UserRole).toInt() == key) return rank_list_->item(i);
    }
    return nullptr;
  };
  auto show = [&](int key, const QString& text) {
    if (QListWidgetItem* item = itemOf(key)) {
      if (item->text() != text) item->setText(text);
      return;
    }
    auto* item = new QListWidgetItem(text);
    item->setData(Qt::UserRole, key);
    item->setCheckState(hidden_lines_.count(key) ? Qt::Unchecked : Qt::Checked);
    if (key != kJobTotal) item->setForeground(seriesColor(key));  // the total: the text colour
    int row = 0;  // in key order: the job total (-1) first, then the ranks
    while (row < rank_list_->count() && rank_list_->item(row)->data(Qt::UserRole).toInt() < key) {
      ++row;
    }
    rank_list_->insertItem(row, item);
  };
  QSignalBlocker block(rank_list_);
  std::set<int> with_lines;
  for (const auto& name : job_->metricNames()) {
    for (const auto& [key, series] : *job_->metric(name)) with_lines.insert(key);
  }
  for (int key : with_lines) {
    if (key == kJobTotal) {
      show(key, tr("job total"));
    } else if (!job_->ranks().count(key)) {
      show(key, tr("rank %1 · earlier").arg(key));
    }
  }
  for (const auto& [rank, info] : job_->ranks()) {
    show(rank, QString("rank %1  %2").arg(rank).arg(QString::fromStdString(info.agent)));
  }
}

void DashboardView::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() != QEvent::PaletteChange || !job_) return;
  // Each rank keeps its colour everywhere, in the palette's own shade of it.
  for (int i = 0; i < rank_list_->count(); ++i) {
    QListWidgetItem* item = rank_list_->item(i);
    const int key = item->data(Qt::UserRole).toInt();
    if (key != kJobTotal) item->setForeground(seriesColor(key));
  }
  chart_keys_.clear();
  updateLines(/*all=*/true);
}

void DashboardView::showOnlyLines(QListWidgetItem* only) {
  {
    QSignalBlocker block(rank_list_);  // one redraw for all, not one per item
    for (int i = 0; i < rank_list_->count(); ++i) {
      QListWidgetItem* item = rank_list_->item(i);
      item->setCheckState(!only || item == only ? Qt::Checked : Qt::Unchecked);
    }
  }
  saveHiddenLines();
  updateLines(/*all=*/true);
}

QString DashboardView::stateKey(const char* what) const {
  return QStringLiteral("dashboards/") + job_id_ + '/' + QLatin1String(what);
}

QString DashboardView::yAxisKey(const QString& title) const {
  return stateKey("yAxis/") +
         QString(title).replace('/', '_');  // "samples/s": one key, not a group
}

void DashboardView::forgetState(const QString& job_id) {
  QSettings().remove(QStringLiteral("dashboards/") + job_id);
}

void DashboardView::saveHiddenLines() {
  hidden_lines_.clear();
  QStringList keys;
  for (int i = 0; i < rank_list_->count(); ++i) {
    const QListWidgetItem* item = rank_list_->item(i);
    if (item->checkState() == Qt::Checked) continue;
    hidden_lines_.insert(item->data(Qt::UserRole).toInt());
    keys << QString::number(item->data(Qt::UserRole).toInt());
  }
  QSettings().setValue(stateKey("hiddenLines"), keys);
}

void DashboardView::saveYAxis(const MetricChart* chart, const QString& title) {
  QVariantMap y;
  y["log"] = chart->yScale() == MetricChart::YScale::kLog;
  y["zero"] = chart->includesZero();
  y["clip"] = chart->clipsOutliers();
  if (const auto& range = chart->manualYRange())
    y["range"] = QVariantList{range->first, range->second};
  QSettings().setValue(yAxisKey(title), y);
}

void DashboardView::restoreYAxis(MetricChart* chart, const QString& title) {
  const QVariantMap y = QSettings().value(yAxisKey(title)).toMap();
  if (y.isEmpty()) return;
  chart->setYScale(y.value("log").toBool() ? MetricChart::YScale::kLog
                                           : MetricChart::YScale::kLinear);
  chart->setIncludeZero(y.value("zero").toBool());
  chart->setClipOutliers(y.value("clip").toBool());
  const QVariantList range = y.value("range").toList();
  if (range.size() == 2) chart->setYRange(std::make_pair(range[0].toDouble(), range[1].toDouble()));
}

int DashboardView::updateLines(bool all) {
  // New lines cost a chart about as much as a new chart (Qt Charts series and axes): one chart's
  // lines per turn unless asked for all, the others on the next turns.
  int changed = 0;
  auto setLines = [&](const QString& title, std::vector<ChartLine> lines,
                      std::vector<std::pair<int, QString>> keys) {
    if (keys == chart_keys_[title]) return;
    if (changed++ > 0 && !all) return;
    chart_keys_[title] = std::move(keys);
    charts_[title]->setLines(std::move(lines));
  };
  std::map<int, bool> visible;
  for (int i = 0; i < rank_list_->count(); ++i) {
    auto* item = rank_list_->item(i);
    visible[item->data(Qt::UserRole).toInt()] = item->checkState() == Qt::Checked;
  }
  auto shown = [&](int rank) {
    auto found = visible.find(rank);
    return found == visible.end() || found->second;
  };
  for (const auto& name : chartMetrics(*job_)) {
    const QString title = metricTitle(name);
    const auto* series = job_->metric(name);
    if (!series || !charts_.count(title)) continue;
    std::vector<ChartLine> lines;
    std::vector<std::pair<int, QString>> keys;
    const RankSpread* spread = show_spread_ ? job_->spread(name) : nullptr;
    if (spread) {
      ChartLine mean;
      mean.label = tr("mean of %1 ranks").arg(job_->worldSize());
      mean.color = palette().color(QPalette::Highlight);
      mean.series = &spread->mean;
      mean.band_low = &spread->min;
      mean.band_high = &spread->max;
      lines.push_back(mean);
      keys.emplace_back(kJobTotal - 1, "spread");
    }
    for (const auto& [rank, s] : *series) {
      if (spread && rank != kJobTotal) continue;  // the band stands for them
      ChartLine line;
      line.label = rank == kJobTotal ? QString("job total") : QString("rank %1").arg(rank);
      line.color = rank == kJobTotal ? palette().color(QPalette::WindowText) : seriesColor(rank);
      line.series = &s;
      line.rank = rank == kJobTotal ? -1 : rank;
      // Its white is near rank 5's light grey on a dark palette: told apart by weight.
      line.bold = rank == kJobTotal;
      line.visible = shown(rank);
      lines.push_back(line);
      keys.emplace_back(rank, line.visible ? "1" : "0");
    }
    setLines(title, std::move(lines), std::move(keys));
  }
  // Health lines: one per host (and per GPU), x on wall time.
  std::map<QString, std::vector<ChartLine>> health_lines;
  int color = 0;
  for (const auto& [agent, series] : job_->health()) {
    const QString host = QString::fromStdString(agent);
    for (const auto& [key, s] : series) {
      QString chart_title;
      if (key == "cpu %") chart_title = kHealthCpu;
      if (key.find("util %") != std::string::npos) chart_title = kHealthGpu;
      if (key.rfind("net ", 0) == 0) chart_title = kHealthNet;
      if (chart_title.isEmpty()) continue;
      ChartLine line;
      line.label = host + " " + QString::fromStdString(key);
      line.color = seriesColor(color++);
      line.series = &s;
      health_lines[chart_title].push_back(line);
    }
  }
  for (auto& [title, lines] : health_lines) {
    if (!charts_.count(title)) continue;
    std::vector<std::pair<int, QString>> keys;
    for (const auto& line : lines) keys.emplace_back(0, line.label);
    setLines(title, std::move(lines), std::move(keys));
  }
  // The heatmap: busy time per rank where the workers report it, else step time.
  const auto* step_time =
      job_->metric(kBusyTime) ? job_->metric(kBusyTime) : job_->metric("step_time");
  if (step_time) {
    std::vector<const metrics::Series*> by_rank;
    std::vector<QString> labels;
    for (const auto& [rank, info] : job_->ranks()) {
      auto found = step_time->find(rank);
      by_rank.push_back(found == step_time->end() ? nullptr : &found->second);
      labels.push_back(QString("r%1 %2").arg(rank).arg(QString::fromStdString(info.agent)));
    }
    heatmap_->setRanks(std::move(by_rank), std::move(labels));
  }
  heatmap_->setVisible(job_->metric("step_time") != nullptr && job_->ranks().size() > 1);
  return changed;
}

void DashboardView::refreshNow() {
  drawn_version_ = ~0ull;  // everything, charts not built yet included
  updateViews(/*all_charts=*/true);
  for (auto& [title, chart] : charts_) chart->refresh();
  stale_charts_.clear();
}

void DashboardView::onRedrawTick() {
  updateViews();
  // Charts or lines still to build (a run just opened): the next one on the next turn of the
  // event loop rather than the next tick, so a dashboard of twenty charts fills in within a
  // fraction of a second and input and paints still come between them.
  if (loaded_ && drawn_version_ == ~0ull && !catching_up_) {
    catching_up_ = true;
    // A timer, not a posted call: posted events all run in one batch, timers take turns.
    QTimer::singleShot(1, Qt::PreciseTimer, this, [this] {
      catching_up_ = false;
      onRedrawTick();
    });
  }
  // Visible charts with new data go to the charts' redraw queue, which draws one chart per turn
  // of the event loop, at a pace that leaves the GUI thread most of its time (refreshLater): a
  // dashboard of many charts never holds it for all of them at once, nor busy with them all
  // the time. A chart scrolled out of view is redrawn when it comes back.
  for (auto it = stale_charts_.begin(); it != stale_charts_.end();) {
    if (onScreen(*it)) {
      (*it)->refreshLater();
      it = stale_charts_.erase(it);
    } else {
      ++it;
    }
  }
}

bool DashboardView::onScreen(const QWidget* chart) const {
  // QWidget::visibleRegion() reads empty for a chart covered by its own chart view: compare the
  // chart's place with the scroll area's viewport instead.
  if (!chart->isVisible()) return false;
  const QWidget* viewport = scroll_->viewport();
  return QRect(chart->mapTo(viewport, QPoint(0, 0)), chart->size()).intersects(viewport->rect());
}

void DashboardView::updateViews(bool all_charts) {
  if (job_->version() == drawn_version_) return;
  drawn_version_ = job_->version();
  updateRankList();
  // Unless all_charts, one chart's worth of Qt Charts work (items, or series) a turn: the two in
  // one turn held the GUI thread twice as long. The lines of a chart already built come before
  // a new chart, so the first chart shows its data before the next one is built.
  bool done = true;
  if (all_charts) {
    done = rebuildCharts(true);
    updateLines(true);
  } else {
    const size_t built = charts_.size();
    const int stale_lines = updateLines(false);
    const bool every_chart =
        stale_lines == 0 ? rebuildCharts(false) : wantedCharts() == chart_order_;
    done = every_chart && stale_lines <= 1 && charts_.size() == built;
  }
  // Charts or lines still to come: back on the next turn even if no record arrives.
  if (!done) drawn_version_ = ~0ull;
  for (auto& [title, chart] : charts_) stale_charts_.insert(chart);
  if (heatmap_->isVisible()) heatmap_->refresh();
  rank_model_->update(*job_, unixSeconds(), shown().liveness.unknown_ranks);
  log_pane_->setRanks(job_->ranks());
  if (job_->events().size() != attempt_events_seen_) {
    attempt_events_seen_ = job_->events().size();
    std::map<uint32_t, std::map<int, QString>> attempts;
    for (const JobEvent& event : job_->events()) {
      if (event.kind == "rank_started" && event.attempt > 0 && event.rank >= 0) {
        attempts[event.attempt][event.rank] = QString::fromStdString(event.agent);
      }
    }
    log_pane_->setAttempts(attempts);
  }
  if (!log_pane_->showsALog() && !job_->ranks().empty()) {
    log_pane_->showRank(job_->ranks().begin()->first);
  }
  updateEvents();
  updateMarkers();  // a marker's step can move while late metrics arrive
  for (auto& [title, chart] : charts_) chart->setTimeOrigin(timeOrigin());  // known once data is
  updateHeader();
  const std::string state = job_->state();
  if (state != last_state_) {
    last_state_ = state;
    emit stateChanged(job_id_, QString::fromStdString(state));
  }
}

void DashboardView::updateEvents() {
  const auto& events = job_->events();
  if (events.size() == events_shown_) return;
  // Events only grow, except when a snapshot arrives after live ones: then rebuild.
  if (events.size() < events_shown_) events_shown_ = 0;
  if (events_shown_ == 0) {
    events_->clear();
    checkpoint_run_ = nullptr;
  }
  for (size_t i = events_shown_; i < events.size(); ++i) {
    // A checkpoint every few hundred steps would bury everything else: consecutive ones are one
    // row that shows the newest and how many, each of them under it.
    const bool folds = events[i].kind == "checkpoint" && checkpoint_run_ &&
                       events_->topLevelItem(events_->topLevelItemCount() - 1) == checkpoint_run_;
    if (!folds) {
      QTreeWidgetItem* item = eventItem(i);
      events_->addTopLevelItem(item);
      checkpoint_run_ = events[i].kind == "checkpoint" ? item : nullptr;
      continue;
    }
    if (checkpoint_run_->childCount() == 0) {
      checkpoint_run_->addChild(eventItem(checkpoint_run_->data(0, Qt::UserRole).toULongLong()));
    }
    QTreeWidgetItem* newest = eventItem(i);
    checkpoint_run_->addChild(newest);
    for (int c : {0, 2}) {
      checkpoint_run_->setText(c, newest->text(c));
      checkpoint_run_->setToolTip(c, newest->toolTip(c));
    }
    checkpoint_run_->setText(1, QString("checkpoint ×%1").arg(checkpoint_run_->childCount()));
    checkpoint_run_->setData(0, Qt::UserRole, static_cast<qulonglong>(i));
  }
  events_shown_ = events.size();
  events_->resizeColumnToContents(0);
  events_->resizeColumnToContents(1);
}

QTreeWidgetItem* DashboardView::eventItem(size_t index) const {
  const JobEvent& e = job_->events()[index];
  auto* item = new QTreeWidgetItem({formatEventTime(e.time),
                                    QString::fromStdString(e.kind).replace('_', ' '),
                                    QString::fromStdString(e.detail)});
  item->setToolTip(0, formatFullTime(e.time));
  item->setToolTip(2, QString::fromStdString(e.detail));
  item->setData(0, Qt::UserRole, static_cast<qulonglong>(index));
  // A GPU fault's warning is amber like a silent agent: it slows the job, it did not fail it.
  if (e.problem || e.kind == "agent_silent" || e.kind == "gpu_fault") {
    const QColor color =
        e.problem && !JobData::isHangWatch(e) ? stateColor("failed") : stateColor("pending");
    for (int c = 0; c < 3; ++c) item->setForeground(c, color);
  }
  return item;
}

void DashboardView::updateMarkers() {
  // Every failed attempt, on every chart, where it happened: what changed the curves is in view.
  std::vector<ChartMarker> markers;
  for (const JobEvent& e : job_->events()) {
    if (e.kind != "job_failure") continue;
    ChartMarker marker;
    marker.time = e.time;
    marker.step = job_->stepAt(e.time).value_or(marker.step);
    marker.label = e.problem ? tr("attempt %1 failed").arg(e.attempt) : tr("restart requested");
    marker.detail = QString::fromStdString(e.detail);
    marker.color = e.problem ? stateColor("failed") : stateColor("restarting");
    markers.push_back(std::move(marker));
  }
  const bool same =
      markers.size() == markers_.size() &&
      std::equal(markers.begin(), markers.end(), markers_.begin(),
                 [](const auto& a, const auto& b) {
                   return a.time == b.time && a.detail == b.detail &&
                          (a.step == b.step || (std::isnan(a.step) && std::isnan(b.step)));
                 });
  if (same) return;
  markers_ = std::move(markers);
  for (const auto& [title, chart] : charts_) chart->setMarkers(markers_);
}

void DashboardView::setAgentStatus(const client::AgentStatus& status) {
  if (!client::noteAgentStatus(status, &silent_agents_)) return;
  const std::vector<std::string> agents = job_->agents();
  if (live_ && !job_->finished() &&
      std::find(agents.begin(), agents.end(), status.name) != agents.end()) {
    JobEvent event;
    event.time = status.time > 0 ? status.time : unixSeconds();
    event.agent = status.name;
    event.attempt = job_->attempt();
    if (silent_agents_.count(status.name)) {
      event.kind = "agent_silent";
      event.detail = status.name + " not answering";
      if (!status.reason.empty()) event.detail += ": " + status.reason;
      if (status.answered_at > 0) {
        event.detail += " (last answer " + client::clockTime(status.answered_at) + ")";
      }
    } else {
      event.kind = "agent_back";
      event.detail = status.name + " answers again";
    }
    job_->addClientEvent(std::move(event));
    updateEvents();
  }
  rank_model_->update(*job_, unixSeconds(), shown().liveness.unknown_ranks);
  updateHeader();
}

client::ShownJob DashboardView::shown() const {
  if (!live_) return {job_->state(), job_->endTime(), {}};  // the history's word stands
  std::vector<client::RankLastKnown> ranks;
  // An agent that has not answered since the app started: the newest word of it is its ranks'
  // newest record.
  std::map<std::string, double> since = silent_agents_;
  for (const auto& [rank, info] : job_->ranks()) {
    ranks.push_back(
        {rank, info.agent, info.state == "running" || info.state == "pending", info.step});
    auto silent = since.find(info.agent);
    if (silent != since.end() && silent_agents_.at(info.agent) == 0) {
      silent->second = std::max({silent->second, info.last_update, info.started});
    }
  }
  return client::showJob(job_->state(), job_->endTime(), ranks, since,
                         client::launcherReportsSteps(job_->launcher()));
}

void DashboardView::showProblem(const QString& text, ProblemTone tone) {
  // Purple: nothing is known (the agents are silent); amber: a warning or a failure the job got
  // over; red: a failure.
  static const char* kColours[] = {
      "background: #3a2a52; color: #ead8ff; border: 1px solid #c080ff;",
      "background: #4a3a12; color: #ffe7a8; border: 1px solid #d9a526;",
      "background: #5a1d1d; color: #ffd0d0; border: 1px solid #ff5555;"};
  const QString sheet = QString(
                            "QPushButton { %1 border-radius: 4px; padding: 6px 10px;"
                            " text-align: left; font-weight: bold; }")
                            .arg(kColours[static_cast<int>(tone)]);
  problem_->setFullText(text);
  problem_->setToolTip(text + "\n\nClick: the log of the rank that failed first");
  if (problem_->styleSheet() != sheet) problem_->setStyleSheet(sheet);
  problem_->setVisible(true);
}

QString DashboardView::headline() const { return title_full_ + " — " + summary_->text(); }

void DashboardView::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  elideTitle();
}

// The name and id cut in the middle with "…" where the header is narrow (the whole in the tooltip).
void DashboardView::elideTitle() {
  const QString shown =
      title_->fontMetrics().elidedText(title_full_, Qt::ElideMiddle, std::max(1, title_->width()));
  if (title_->text() != shown) title_->setText(shown);
  title_->setToolTip(shown == title_full_ ? QString() : title_full_);
}

void DashboardView::updateCheckpointLine() {
  const bool running = live_ && job_->state() == "running" && !job_->ranks().empty();
  QString text;
  if (running) {
    const hardware::CheckpointInputs in = job_->checkpointInputs(unixSeconds());
    text =
        QString::fromStdString(hardware::checkpointSummary(in, hardware::checkpointEconomics(in)));
  }
  if (checkpoint_->text() != text) checkpoint_->setText(text);
  checkpoint_->setVisible(!text.isEmpty());
}

QString DashboardView::checkpointText() const {
  return checkpoint_->isVisibleTo(this) ? checkpoint_->text() : QString();
}

QString DashboardView::problemText() const {
  return problem_->isVisible() ? problem_->fullText() : "";
}

void DashboardView::updateHeader() {
  const QString name = QString::fromStdString(job_->name());
  const QString title = name.isEmpty() ? job_id_ : name + "  ·  " + job_id_;
  if (title_full_ != title) {
    title_full_ = title;
    elideTitle();
    emit titleChanged(job_id_, name.isEmpty() ? job_id_ : name);
  }
  const QString about = QString::fromStdString(job_->description()).simplified();
  if (about_->text() != about) {
    about_->setText(about);
    about_->setVisible(!about.isEmpty());
  }
  if (!loaded_) return;
  // With every agent of its going ranks silent, the job's state is not known: say so, and stop
  // the clock at the last evidence instead of ticking on.
  const client::ShownJob shown = this->shown();
  const client::JobLiveness& liveness = shown.liveness;
  summary_->setText(summaryText(shown));
  // The charts say that what they show may be old; the clock of the job stopped with them.
  const QString stale =
      liveness.job_unknown && liveness.evidence_until > 0
          ? tr("no data since %1")
                .arg(QString::fromStdString(client::clockTime(liveness.evidence_until)))
          : QString();
  for (const auto& [title, chart] : charts_) chart->setStaleNote(stale);
  updateProblemLine(shown);
  updateCheckpointLine();
  stop_->setEnabled(live_ && !job_->finished());
  // A job on Slurm restarts inside its allocation by itself, and Slurm requeues it.
  restart_->setEnabled(live_ && !job_->slurm() &&
                       (!job_->finished() || shown.state != "succeeded"));
  if (job_->slurm()) {
    restart_->setToolTip(
        "A job on Slurm restarts failed ranks inside its allocation, as its restart policy says, "
        "and Slurm runs it again from its checkpoints when a node fails or it is preempted");
  }
}

// The line under the title: state, ranks and hosts, progress, throughput, the straggler, time,
// where it runs.
QString DashboardView::summaryText(const client::ShownJob& shown) const {
  const client::JobLiveness& liveness = shown.liveness;
  const std::string& state = shown.state;
  int running = 0;
  for (const auto& [rank, info] : job_->ranks()) running += info.state == "running";
  running -= static_cast<int>(liveness.unknown_ranks.size());
  const double end = shown.clock_stop > 0 ? shown.clock_stop : unixSeconds();
  const double elapsed = job_->startTime() > 0 ? std::max(0.0, end - job_->startTime()) : 0;
  // A finished job's throughput is its run's mean; a live one's, the last 10 s (said so), or
  // how long no rank has made a step: measured back from the last sample, the rate stood still
  // while every rank was stopped (issue 35). The rank table's "ago" uses the same clocks.
  QString throughput;
  if (const auto* sps = job_->metric("samples_per_sec"); sps && sps->count(kJobTotal)) {
    const metrics::Series& total = sps->at(kJobTotal);
    const bool over = job_->finished();
    const double quiet = unixSeconds() - total.back().time;
    const double rate = over ? meanRate(total) : meanRate(total, total.back().time - 10);
    if (!over && quiet > 10) {
      throughput = "no new step for " + formatDuration(quiet);
    } else if (rate > 0) {
      throughput = QString(over ? "%1 samples/s on average" : "%1 samples/s (last 10 s)")
                       .arg(QLocale(QLocale::English).toString(rate, 'f', 0));
    }
  }
  QString text = QString("<span style='color:%1; font-weight:bold'>%2</span>")
                     .arg(stateColor(state).name(), QString::fromStdString(state).toUpper());
  const int ranks = job_->worldSize() ? job_->worldSize() : static_cast<int>(job_->ranks().size());
  text += QString(" &nbsp; %1 rank%2 on %3 host%4")
              .arg(ranks)
              .arg(ranks == 1 ? "" : "s")
              .arg(job_->agents().size())
              .arg(job_->agents().size() == 1 ? "" : "s");
  if (state == "running") text += QString(" (%1 running)").arg(running);
  if (state == "starting") text += " &nbsp;·&nbsp; waiting for the first step";
  if (state == "waiting") {  // the leader's reason: who is lost, what it needs to go on
    text += " &nbsp;·&nbsp; " +
            QString::fromStdString(job_->model().decision().reason()).toHtmlEscaped();
  }
  if (state == "restarting") {
    const uint32_t left = job_->model().restartsLeft();
    text += QString(" &nbsp;·&nbsp; attempt %1, %2 restart%3 left")
                .arg(job_->attempt())
                .arg(left)
                .arg(left == 1 ? "" : "s");
  }
  if (job_->maxStep() >= 0) text += QString(" &nbsp;·&nbsp; step %1").arg(job_->maxStep());
  if (!throughput.isEmpty()) text += " &nbsp;·&nbsp; " + throughput;
  // The straggler, named where the eye lands first (the heatmap may be scrolled out of view);
  // only a clear one: 1.2x is noise for a short run on shared cores, which the heatmap still says.
  constexpr double kHeaderStragglerRatio = 1.5;
  if (heatmap_->isVisibleTo(this) && heatmap_->hasStraggler() &&
      heatmap_->slowestRatio() >= kHeaderStragglerRatio) {
    text += QString(" &nbsp;·&nbsp; <span style='color:%1'>%2</span>")
                .arg(stateColor("pending").name(), heatmap_->slowestText().toHtmlEscaped());
  }
  text += QString(" &nbsp;·&nbsp; %1 %2")
              .arg(job_->finished() ? "took" : "elapsed", formatDuration(elapsed));
  if (!job_->launcher().empty()) {
    text += " &nbsp;·&nbsp; " + QString::fromStdString(job_->launcher());
  }
  text += whereText();
  if (job_->attempt() > 1) text += QString(" &nbsp;·&nbsp; attempt %1").arg(job_->attempt());
  if (!live_) text += " &nbsp;·&nbsp; from the history";
  return text;
}

// Which Python ran the entry point (the launch records it per agent), and where the ranks
// train: "8 GPUs", or why backend auto put them on the CPU.
QString DashboardView::whereText() const {
  QString text;
  std::set<std::string> interpreters;
  for (const auto& [rank, state] : job_->model().ranks()) {
    if (!state.interpreter.empty()) interpreters.insert(state.interpreter);
  }
  if (interpreters.size() == 1) {
    text += " &nbsp;·&nbsp; " + QString::fromStdString(*interpreters.begin()).toHtmlEscaped();
  } else if (interpreters.size() > 1) {
    text += QString(" &nbsp;·&nbsp; %1 Python interpreters").arg(interpreters.size());
  }
  if (const auto& slurm = job_->slurm()) text += " &nbsp;·&nbsp; " + slurmText(*slurm);
  int on_gpu = 0;
  std::string cpu_reason;
  for (const auto& [rank, info] : job_->ranks()) {
    on_gpu += info.device.starts_with("GPU");
    if (const std::string why = job::cpuReasonOf(info.device); !why.empty()) cpu_reason = why;
  }
  if (on_gpu > 0)
    text += QString(" &nbsp;·&nbsp; %1 GPU%2").arg(on_gpu).arg(on_gpu == 1 ? "" : "s");
  if (!cpu_reason.empty()) {
    text += QString(" &nbsp;·&nbsp; <span style='color:#ffb030'>on the CPU: %1</span>")
                .arg(QString::fromStdString(cpu_reason).toHtmlEscaped());
  }
  return text;
}

// The one thing that went wrong, clickable: what is unknown, a hang, or the first failure.
void DashboardView::updateProblemLine(const client::ShownJob& shown) {
  const client::JobLiveness& liveness = shown.liveness;
  const std::string& state = shown.state;
  if (liveness.anyUnknown()) {
    showProblem(QString("⚠  %1").arg(QString::fromStdString(liveness.describe())),
                ProblemTone::kUnknown);
  } else if (auto hang = job_->hangWatch()) {
    // Current news beats an old attempt's failure; it goes when progress resumes.
    showProblem(
        QString("⚠  %1 %2%3")
            .arg(hang->kind == "hang_hung" ? "Hung:" : "Suspected hang:",
                 QString::fromStdString(hang->detail), hang->rank >= 0 ? "  —  show its log" : ""),
        ProblemTone::kWarning);
  } else if (auto problem = job_->firstProblem()) {
    QString where;  // a root cause (job_failure) names its host itself
    if (problem->rank >= 0 && problem->kind != "job_failure" &&
        job_->ranks().count(problem->rank)) {
      where = " on " + QString::fromStdString(job_->ranks().at(problem->rank).agent);
    }
    // A failure the job has recovered from (a later attempt runs or succeeded) is amber.
    const bool recovered = problem->attempt < job_->attempt() && state != "failed";
    const QString recovery =
        recovered ? QString("  ·  restarted as attempt %1").arg(job_->attempt()) : QString();
    showProblem(QString("⚠  %1%2%3%4")
                    .arg(QString::fromStdString(problem->detail), where, recovery,
                         problem->rank >= 0 ? "  —  show its log" : ""),
                recovered ? ProblemTone::kWarning : ProblemTone::kFailure);
  } else {
    problem_->setVisible(false);
  }
}

void DashboardView::setShowSpread(bool spread) {
  show_spread_ = spread;
  rank_list_->setEnabled(!spread);  // the band stands for every rank
  if (lines_box_->currentIndex() != (spread ? 1 : 0)) {
    const QSignalBlocker quiet(lines_box_);
    lines_box_->setCurrentIndex(spread ? 1 : 0);
  }
  updateLines(/*all=*/true);
}

void DashboardView::setXChoice(XChoice choice) {
  x_choice_ = choice;
  axis_ = choice == XChoice::kStep ? metrics::Axis::kStep : metrics::Axis::kTime;
  if (axis_box_->currentIndex() != static_cast<int>(choice)) {
    const QSignalBlocker quiet(axis_box_);
    axis_box_->setCurrentIndex(static_cast<int>(choice));
  }
  for (auto& [title, chart] : charts_) {
    if (!isHealthChart(title)) chart->setXAxis(axis_);
    chart->setTimeOrigin(timeOrigin());
  }
  heatmap_->setXAxis(axis_);
  heatmap_->resetXRange();
  heatmap_->refresh();
}

std::optional<double> DashboardView::timeOrigin() const {
  if (x_choice_ != XChoice::kRelativeTime || job_->startTime() <= 0) return std::nullopt;
  return job_->startTime();
}

void DashboardView::linkRange(MetricChart* source, double x0, double x1) {
  // Zoom one chart, zoom them all: metric charts share the step or time axis; health charts
  // follow only when the axis is wall time.
  const bool source_health = isHealthChart(source->title());
  for (auto& [title, chart] : charts_) {
    if (chart == source) continue;
    const bool health = isHealthChart(title);
    if (health == source_health || axis_ == metrics::Axis::kTime) chart->setXRange(x0, x1);
  }
  if (!source_health || axis_ == metrics::Axis::kTime) {
    heatmap_->setXRange(x0, x1);
    heatmap_->refresh();
  }
}

void DashboardView::focusOnEvent(const JobEvent& event) {
  // A line at the event on every chart, beside the failures' own.
  ChartMarker marker;
  marker.time = event.time;
  marker.step = job_->stepAt(event.time).value_or(marker.step);
  marker.label = QString::fromStdString(event.kind).replace('_', ' ');
  marker.detail = QString::fromStdString(event.detail);
  marker.color = palette().color(QPalette::Highlight);
  std::vector<ChartMarker> markers = markers_;
  markers.push_back(marker);
  for (const auto& [title, chart] : charts_) chart->setMarkers(markers);

  // The charts zoomed to a tenth of the run around it (10 s or 20 steps at least).
  const bool by_time = axis_ == metrics::Axis::kTime;
  const double end = job_->endTime() > 0 ? job_->endTime() : unixSeconds();
  const double lo = by_time ? job_->startTime() : 0;
  const double hi = by_time ? end : static_cast<double>(job_->maxStep());
  const double at = by_time ? event.time : (std::isnan(marker.step) ? lo : marker.step);
  if (!(hi > lo)) return;
  const double width = std::max((hi - lo) / 10, by_time ? 10.0 : 20.0);
  const double x0 = std::clamp(at - width / 2, lo, std::max(lo, hi - width));
  const double x1 = x0 + width;
  for (auto& [title, chart] : charts_) {
    if (!isHealthChart(title) || by_time) chart->setXRange(x0, x1);
  }
  heatmap_->setXRange(x0, x1);
  heatmap_->refresh();
}

void DashboardView::showRankLog(int rank) {
  if (rank < 0) return;
  tabs_->setCurrentWidget(log_pane_);
  log_pane_->showRank(rank);
}

void DashboardView::showEventLog(const JobEvent& event) {
  if (event.rank < 0) return;
  // An earlier attempt's rank may be gone, or another process on another host now.
  if (event.attempt > 0 && event.attempt < job_->attempt() && !event.agent.empty()) {
    tabs_->setCurrentWidget(log_pane_);
    log_pane_->showAttempt(event.rank, QString::fromStdString(event.agent), event.attempt);
    return;
  }
  showRankLog(event.rank);
}

void DashboardView::fillRestartMenu() {
  restart_menu_->clear();
  const auto problem = job_->firstProblem();
  const QString failed_agent =
      problem && !problem->agent.empty() ? QString::fromStdString(problem->agent) : QString();
  if (!failed_agent.isEmpty()) {
    restart_menu_->addAction(
        QString("Restart failed node %1 (every rank, from the checkpoint)").arg(failed_agent), this,
        [this, failed_agent] { confirmRestart({}, "agent " + failed_agent); });
  }
  restart_menu_->addAction("Restart the job from its newest checkpoint", this,
                           [this] { confirmRestart({}, {}); });
  const auto agents = job_->agents();
  if (agents.size() < 2) return;
  restart_menu_->addSeparator();
  for (const std::string& name : agents) {
    const QString agent = QString::fromStdString(name);
    restart_menu_->addAction(QString("Exclude host %1 and restart%2")
                                 .arg(agent, agent == failed_agent ? "  (failed)" : ""),
                             this, [this, agent] { confirmRestart(agent, "agent " + agent); });
  }
}

void DashboardView::showRankMenu(const QPoint& at) {
  const QModelIndex index = rank_table_->indexAt(at);
  if (!index.isValid() || !live_) return;
  const int rank = index.data(RankTableModel::kRankRole).toInt();
  const auto found = job_->ranks().find(rank);
  if (found == job_->ranks().end()) return;
  const QString agent = QString::fromStdString(found->second.agent);
  const QString reason = QString("rank %1 on %2").arg(rank).arg(agent);
  QMenu menu(this);
  menu.addAction(QString("Show the log of rank %1").arg(rank), this,
                 [this, rank] { showRankLog(rank); });
  menu.addSeparator();
  menu.addAction(QString("Restart rank %1 (every rank, from the checkpoint)").arg(rank), this,
                 [this, reason] { confirmRestart({}, reason); });
  if (job_->agents().size() > 1) {
    menu.addAction(QString("Exclude its host %1 and restart").arg(agent), this,
                   [this, agent, reason] { confirmRestart(agent, reason); });
  }
  menu.addSeparator();
  QAction* kill = menu.addAction(QString("Kill rank %1 (a crash drill)").arg(rank), this,
                                 [this, rank] { confirmKill(rank); });
  kill->setObjectName("kill-rank");
  menu.exec(rank_table_->viewport()->mapToGlobal(at));
}

void DashboardView::confirmRestart(const QString& exclude_agent, const QString& reason) {
  QString text = QString("Restart %1 from the newest checkpoint every rank has?").arg(job_id_);
  if (!exclude_agent.isEmpty()) {
    text +=
        QString("\n\nHost %1 is left out: the job goes on with fewer ranks.").arg(exclude_agent);
  }
  text += "\n\nRunning ranks are stopped first (SIGTERM, then SIGKILL after the grace period).";
  if (QMessageBox::question(this, "Restart job", text) != QMessageBox::Yes) return;
  restart_->setText("Restarting…");
  bridge_->restartJob(job_id_, exclude_agent, reason);
}

void DashboardView::confirmKill(int rank) {
  const uint32_t left = job_->model().restartsLeft();
  const QString then =
      left > 0 ? QString(
                     "The job has %1 restart(s) left: its agents restart every rank from the "
                     "newest checkpoint, and the charts go on from there.")
                     .arg(left)
               : QString("The job has no restarts left (restart.max_restarts): it fails.");
  if (QMessageBox::question(this, "Kill rank",
                            QString("Kill rank %1 of %2 with SIGKILL, as a crash would?\n\n%3")
                                .arg(rank)
                                .arg(job_id_, then)) != QMessageBox::Yes) {
    return;
  }
  bridge_->killRank(job_id_, rank);
}

void DashboardView::confirmStop() {
  const QString how =
      job_->slurm()
          ? QString("Slurm cancels job %1 (scancel): every node's agent stops its ranks.")
                .arg(QString::fromStdString(job_->slurm()->slurm_job_id))
          : QString("Every rank gets SIGTERM, then SIGKILL after the job's grace period.");
  const auto answer =
      QMessageBox::question(this, "Stop job", QString("Stop %1?\n\n%2").arg(job_id_, how));
  if (answer != QMessageBox::Yes) return;
  stop_->setEnabled(false);
  stop_->setText("Stopping…");
  bridge_->stopJob(job_id_);
}

}  // namespace ringmaster::gui
