#include "dashboard/compare_view.h"

#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QSettings>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>

#include "charts/palette.h"

namespace ringmaster::gui {
namespace {
// bytes_sent, compression_error and a pipeline's bubble_fraction: native.strategy's costs, side
// by side with what they buy.
const char* const kCompared[] = {
    "loss",      "eval_loss", "accuracy",        "mse",        "samples_per_sec",
    "step_time", "comm_time", "bubble_fraction", "bytes_sent", "compression_error",
    "lr"};
}  // namespace

CompareView::CompareView(QWidget* parent) : QWidget(parent) {
  legend_ = new QLabel;
  legend_->setObjectName(QStringLiteral("compare.legend"));
  legend_->setTextFormat(Qt::RichText);
  legend_->setWordWrap(true);
  // The dashboard's three axes, in the order of DashboardView::XChoice.
  axis_box_ = new QComboBox;
  axis_box_->setObjectName("compareXAxis");
  axis_box_->addItem("x: step");
  axis_box_->addItem("x: time since start");
  axis_box_->addItem("x: wall time");
  axis_box_->setToolTip(
      "What the charts' x axis counts: training steps, the time since each run started "
      "(h:mm:ss, so runs launched apart start together), or the wall clock");
  auto* area = new QWidget;
  grid_ = new QGridLayout(area);
  auto* scroll = new QScrollArea;
  scroll->setWidgetResizable(true);
  scroll->setWidget(area);
  scroll->setFrameShape(QFrame::NoFrame);
  auto* top = new QHBoxLayout;
  top->addWidget(legend_, 1);
  top->addWidget(axis_box_, 0, Qt::AlignTop);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(scroll, 1);
  const int saved = QSettings().value(kXAxisKey, 0).toInt();
  if (saved > 0 && saved <= static_cast<int>(XChoice::kWallTime)) {
    x_choice_ = static_cast<XChoice>(saved);
    axis_box_->setCurrentIndex(saved);
  }
  connect(axis_box_, &QComboBox::currentIndexChanged, this,
          [this](int index) { setXChoice(static_cast<XChoice>(index)); });
}

CompareView::CompareView(SessionBridge* bridge, const QStringList& job_ids, QWidget* parent)
    : CompareView(parent) {
  bridge_ = bridge;
  job_ids_ = job_ids;
  legend_->setText(QString("Loading %1 runs from the history…").arg(job_ids.size()));
  // Each run read and built on the session's history worker, not on the GUI thread.
  using Loaded = Result<std::unique_ptr<JobData>>;
  for (const QString& id : job_ids) {
    const bool reading = bridge_->readHistory<Loaded>(
        [job_id = id.toStdString()](store::Reader& history) {
          return JobData::fromHistory(history, job_id);
        },
        this, [this, id](Loaded loaded) { onJobLoaded(id, std::move(loaded)); });
    if (reading) pending_.insert(id);
  }
  if (pending_.empty()) build();
}

CompareView::CompareView(const std::vector<std::pair<QString, client::JobSnapshot>>& runs,
                         QWidget* parent)
    : CompareView(parent) {
  for (const auto& [id, snapshot] : runs) {
    job_ids_ << id;
    auto run = std::make_unique<JobData>(id.toStdString());
    run->ingestSnapshot(snapshot);
    runs_[id] = std::move(run);
  }
  build();
}

CompareView::~CompareView() = default;

std::vector<MetricChart*> CompareView::charts() const { return charts_; }

void CompareView::onJobLoaded(const QString& job_id, Result<std::unique_ptr<JobData>> loaded) {
  if (pending_.erase(job_id) == 0) return;
  if (loaded.isOk()) {
    runs_[job_id] = std::move(*loaded);
  } else {
    errors_ << job_id + ": " + QString::fromStdString(loaded.status().message());
  }
  if (pending_.empty()) build();
}

void CompareView::build() {
  // A run is named by its job name; the job id is added only where names repeat (ten runs'
  // ids took four lines of the window), and every id is in the tooltip.
  std::map<std::string, int> name_count;
  for (const QString& id : job_ids_) {
    if (runs_.count(id)) ++name_count[runs_[id]->name()];
  }
  auto runLabel = [&](const QString& id) {
    const std::string& name = runs_[id]->name();
    return QString::fromStdString(name) + (name_count[name] > 1 ? " · " + id : QString());
  };
  int index = 0;
  for (const QString& id : job_ids_) {
    if (!runs_.count(id)) continue;
    colors_[id] = seriesColor(index++);
    labels_[id] = runLabel(id);
  }
  updateLegend();
  for (const char* name : kCompared) {
    std::vector<std::pair<QString, ChartLine>> lines;
    for (const QString& id : job_ids_) {
      if (!runs_.count(id)) continue;
      const auto* series = runs_[id]->metric(name);
      if (!series || series->empty()) continue;
      // The job total for throughput; rank 0 (the first rank) for everything else.
      auto pick = series->count(kJobTotal) && std::string(name) == "samples_per_sec"
                      ? series->find(kJobTotal)
                      : series->upper_bound(kJobTotal);
      if (pick == series->end()) pick = series->begin();
      ChartLine line;
      line.label = runLabel(id);
      line.color = colors_[id];
      line.series = &pick->second;
      lines.emplace_back(id, line);
    }
    if (lines.empty()) continue;
    auto* chart = new MetricChart(QString(name));
    chart->setMinimumHeight(260);
    chart->setSmoothing(0.6);
    const int at = static_cast<int>(charts_.size());
    // A run hidden in one chart's legend is hidden in every chart, and stays hidden when this
    // comparison opens again.
    connect(chart, &MetricChart::lineVisibilityToggled, this, [this, at](int line, bool visible) {
      if (line < static_cast<int>(drawn_ids_[at].size()))
        setRunHidden(drawn_ids_[at][line], !visible);
    });
    grid_->addWidget(chart, at / 2, at % 2);
    charts_.push_back(chart);
    chart_lines_.push_back(std::move(lines));
  }
  drawn_ids_.resize(charts_.size());
  const QStringList hidden = QSettings().value(hiddenKey()).toStringList();
  hidden_ = std::set<QString>(hidden.begin(), hidden.end());
  applyXChoice();
}

void CompareView::updateLegend() {
  QString legend, tooltip, deleted;
  for (const QString& id : job_ids_) {
    if (!runs_.count(id)) continue;
    tooltip += (tooltip.isEmpty() ? "" : "\n") + id;
    if (deleted_.contains(id)) {
      deleted += (deleted.isEmpty() ? "" : ", ") + labels_[id].toHtmlEscaped();
      continue;
    }
    // An entry never breaks inside ("fashion-\npipeline_hybrid"): non-breaking space, hyphens.
    legend += QString("<span style='color:%1'>■&nbsp;%2</span> &nbsp; ")
                  .arg(colors_[id].name(), labels_[id].toHtmlEscaped().replace('-', QChar(0x2011)));
  }
  if (!deleted.isEmpty()) legend += "<br>deleted, not drawn: " + deleted + " (Undo in History)";
  if (!errors_.isEmpty()) legend += "<br>could not load: " + errors_.join("; ");
  legend_->setText(legend);
  legend_->setToolTip(tooltip);
}

QString CompareView::hiddenKey() const {
  QStringList ids = job_ids_;
  ids.sort();
  return QStringLiteral("compare/hidden/") + ids.join(',');
}

void CompareView::setRunHidden(const QString& job_id, bool hidden) {
  if (hidden ? !hidden_.insert(job_id).second : hidden_.erase(job_id) == 0) return;
  QSettings().setValue(hiddenKey(), QStringList(hidden_.begin(), hidden_.end()));
  for (size_t c = 0; c < charts_.size(); ++c) {
    for (size_t i = 0; i < drawn_ids_[c].size(); ++i) {
      if (drawn_ids_[c][i] == job_id) charts_[c]->setLineVisible(static_cast<int>(i), !hidden);
    }
  }
}

void CompareView::setRunsDeleted(const QStringList& job_ids, bool deleted) {
  bool changed = false;
  for (const QString& id : job_ids) {
    if (!job_ids_.contains(id)) continue;
    changed |= deleted ? deleted_.insert(id).second : deleted_.erase(id) > 0;
  }
  if (!changed || !loaded()) return;
  updateLegend();
  applyXChoice();
}

void CompareView::setXChoice(XChoice choice) {
  if (axis_box_->currentIndex() != static_cast<int>(choice)) {
    const QSignalBlocker quiet(axis_box_);
    axis_box_->setCurrentIndex(static_cast<int>(choice));
  }
  QSettings().setValue(kXAxisKey, static_cast<int>(choice));
  if (choice == x_choice_) return;
  x_choice_ = choice;
  applyXChoice();
}

double CompareView::startOf(const QString& id) const {
  const JobData& run = *runs_.at(id);
  if (run.startTime() > 0) return run.startTime();
  double first = std::numeric_limits<double>::infinity();
  for (const char* name : kCompared) {
    if (const auto* series = run.metric(name)) {
      for (const auto& [rank, s] : *series) {
        if (!s.empty()) first = std::min(first, s.at(0).time);
      }
    }
  }
  return std::isfinite(first) ? first : 0;
}

const metrics::Series* CompareView::shifted(const QString& id, const metrics::Series* series,
                                            double base) {
  auto [it, made] = shifted_.try_emplace(series);
  if (made) {
    const double shift = base - startOf(id);
    for (size_t i = 0; i < series->size(); ++i) {
      const metrics::Series::Point& p = series->at(i);
      it->second.append(p.step, p.time + shift, p.value);
    }
  }
  return &it->second;
}

void CompareView::applyXChoice() {
  const metrics::Axis axis =
      x_choice_ == XChoice::kStep ? metrics::Axis::kStep : metrics::Axis::kTime;
  // Relative time: each run's series moved so that it starts at the earliest start, which is the
  // charts' origin; the axis and the hover then read each run's own time since its start.
  std::optional<double> origin;
  if (x_choice_ == XChoice::kRelativeTime) {
    double base = std::numeric_limits<double>::infinity();
    for (const auto& [id, run] : runs_) {
      if (startOf(id) > 0) base = std::min(base, startOf(id));
    }
    if (std::isfinite(base)) origin = base;
  }
  for (size_t c = 0; c < charts_.size(); ++c) {
    std::vector<ChartLine> lines;
    drawn_ids_[c].clear();
    for (const auto& [id, line] : chart_lines_[c]) {
      if (deleted_.contains(id)) continue;
      ChartLine drawn = line;
      if (origin && startOf(id) > 0) drawn.series = shifted(id, line.series, *origin);
      drawn.visible = !hidden_.contains(id);
      lines.push_back(drawn);
      drawn_ids_[c].push_back(id);
    }
    charts_[c]->setLines(std::move(lines));
    charts_[c]->setXAxis(axis);
    charts_[c]->setTimeOrigin(origin);
    charts_[c]->refresh();
  }
}

}  // namespace ringmaster::gui
