#include "dashboard/compare_view.h"

#include <QGridLayout>
#include <QLabel>
#include <QScrollArea>
#include <QVBoxLayout>

#include "charts/metric_chart.h"
#include "charts/palette.h"

namespace ringmaster::gui {
namespace {
const char* const kCompared[] = {"loss",      "eval_loss", "accuracy", "mse", "samples_per_sec",
                                 "step_time", "comm_time", "lr"};
}

CompareView::CompareView(SessionBridge* bridge, const QStringList& job_ids, QWidget* parent)
    : QWidget(parent), bridge_(bridge), job_ids_(job_ids) {
  legend_ = new QLabel(QString("Loading %1 runs from the history…").arg(job_ids.size()));
  legend_->setTextFormat(Qt::RichText);
  legend_->setWordWrap(true);
  auto* area = new QWidget;
  grid_ = new QGridLayout(area);
  auto* scroll = new QScrollArea;
  scroll->setWidgetResizable(true);
  scroll->setWidget(area);
  scroll->setFrameShape(QFrame::NoFrame);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(legend_);
  layout->addWidget(scroll, 1);
  connect(bridge_, &SessionBridge::jobLoaded, this, &CompareView::onJobLoaded);
  for (const QString& id : job_ids) pending_[bridge_->loadJob(id)] = id;
}

CompareView::~CompareView() = default;

std::vector<MetricChart*> CompareView::charts() const { return charts_; }

void CompareView::onJobLoaded(uint64_t token, const Result<client::JobSnapshot>& snapshot) {
  auto found = pending_.find(token);
  if (found == pending_.end()) return;
  const QString id = found->second;
  pending_.erase(found);
  if (snapshot.isOk()) {
    auto run = std::make_unique<JobData>(id.toStdString());
    run->ingestSnapshot(*snapshot);
    runs_[id] = std::move(run);
  } else {
    errors_ << id + ": " + QString::fromStdString(snapshot.status().message());
  }
  if (pending_.empty()) build();
}

void CompareView::build() {
  QString legend;
  std::map<QString, QColor> colors;
  int index = 0;
  for (const QString& id : job_ids_) {
    if (!runs_.count(id)) continue;
    const QColor color = seriesColor(index++);
    colors[id] = color;
    legend += QString("<span style='color:%1'>■ %2</span> &nbsp; ")
                  .arg(color.name(), QString::fromStdString(runs_[id]->name()) + " · " + id);
  }
  if (!errors_.isEmpty()) legend += "<br>could not load: " + errors_.join("; ");
  legend_->setText(legend);
  for (const char* name : kCompared) {
    std::vector<ChartLine> lines;
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
      line.label = QString::fromStdString(runs_[id]->name()) + " " + id.right(4);
      line.color = colors[id];
      line.series = &pick->second;
      lines.push_back(line);
    }
    if (lines.empty()) continue;
    auto* chart = new MetricChart(QString(name));
    chart->setMinimumHeight(260);
    chart->setSmoothing(0.6);
    chart->setLines(std::move(lines));
    chart->refresh();
    const int at = static_cast<int>(charts_.size());
    grid_->addWidget(chart, at / 2, at % 2);
    charts_.push_back(chart);
  }
}

}  // namespace ringmaster::gui
