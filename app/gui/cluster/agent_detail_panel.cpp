#include "cluster/agent_detail_panel.h"

#include <QDateTime>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTextDocumentFragment>
#include <QTimer>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "cluster/agent_state_style.h"
#include "cluster/agent_table_model.h"
#include "cluster/format.h"
#include "cluster/metric_cell.h"
#include "ringmaster/security/keys.h"

namespace ringmaster::gui {
namespace {

using client::AgentState;

constexpr double kSpanS = AgentTableModel::kSparklineSpanS;
constexpr double kTemperatureWarnC = 80;
constexpr double kTemperatureCriticalC = 90;

QLabel* valueLabel() {
  auto* label = new QLabel;
  label->setTextInteractionFlags(Qt::TextSelectableByMouse);
  return label;
}

Sparkline sparkline(QList<QPointF> points, double end_time, double y_max) {
  Sparkline line;
  line.points = std::move(points);
  line.end_time = end_time;
  line.span_s = kSpanS;
  line.y_min = 0;
  line.y_max = y_max;
  return line;
}

// GPUs report no power limit: the bar's scale is the highest power seen, rounded up to 100 W,
// and at least 300 W, so a bar does not jump to full at the first sample.
double powerScale(const AgentHistory& history, size_t gpu, double now_w) {
  double top = std::max(300.0, now_w);
  for (const auto& point : history.points()) {
    if (gpu < point.gpus.size()) top = std::max(top, point.gpus[gpu].power_w);
  }
  return std::ceil(top / 100) * 100;
}

}  // namespace

AgentDetailPanel::AgentDetailPanel(QString client_public_key, QWidget* parent)
    : QWidget(parent), client_public_key_(std::move(client_public_key)) {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(8, 8, 8, 8);
  // The panel lives in a scroll area, which honours an explicit minimum size only: without it,
  // eight GPU rows would be squeezed into the visible height instead of scrolling.
  outer->setSizeConstraint(QLayout::SetMinimumSize);
  placeholder_ = new QLabel("Select an agent to see its inventory, health and GPUs.");
  placeholder_->setAlignment(Qt::AlignCenter);
  placeholder_->setWordWrap(true);
  placeholder_->setForegroundRole(QPalette::PlaceholderText);
  outer->addWidget(placeholder_);

  body_ = new QWidget;
  outer->addWidget(body_);
  auto* layout = new QVBoxLayout(body_);
  layout->setContentsMargins(0, 0, 0, 0);

  auto* header = new QHBoxLayout;
  state_dot_ = new QLabel;
  title_ = new QLabel;
  QFont title_font = title_->font();
  title_font.setPointSizeF(title_font.pointSizeF() * 1.3);
  title_font.setBold(true);
  title_->setFont(title_font);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  header->addWidget(state_dot_);
  header->addWidget(title_, 1);
  layout->addLayout(header);

  advice_ = new QLabel;
  advice_->setWordWrap(true);
  advice_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  reason_ = new QLabel;
  reason_->setWordWrap(true);
  reason_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  reason_->setForegroundRole(QPalette::PlaceholderText);
  update_key_ = new QPushButton("Update server key…");
  connect(update_key_, &QPushButton::clicked, this, &AgentDetailPanel::updateKeyRequested);
  auto* advice_row = new QHBoxLayout;
  advice_row->addWidget(advice_, 1);
  advice_row->addWidget(update_key_, 0, Qt::AlignTop);
  layout->addLayout(advice_row);
  layout->addWidget(reason_);

  auto* middle = new QHBoxLayout;
  auto* inventory_box = new QGroupBox("Inventory");
  inventory_form_ = new QFormLayout(inventory_box);
  inventory_form_->setLabelAlignment(Qt::AlignRight);
  host_ = valueLabel();
  endpoint_ = valueLabel();
  cpus_ = valueLabel();
  memory_ = valueLabel();
  slots_ = valueLabel();
  version_ = valueLabel();
  started_ = valueLabel();
  last_answer_ = valueLabel();
  fingerprint_ = valueLabel();
  QFont mono("monospace");
  mono.setStyleHint(QFont::Monospace);
  fingerprint_->setFont(mono);
  inventory_form_->addRow("Last answer:", last_answer_);
  inventory_form_->addRow("Hostname:", host_);
  inventory_form_->addRow("Endpoint:", endpoint_);
  inventory_form_->addRow("CPUs:", cpus_);
  inventory_form_->addRow("Memory:", memory_);
  inventory_form_->addRow("Slots free:", slots_);
  inventory_form_->addRow("Version:", version_);
  inventory_form_->addRow("Started:", started_);
  inventory_form_->addRow("Key fingerprint:", fingerprint_);
  middle->addWidget(inventory_box, 2);

  auto* health_box = new QGroupBox("Host health (bar: now, line: last 5 min)");
  auto* health = new QFormLayout(health_box);
  cpu_cell_ = new MetricCell;
  memory_cell_ = new MetricCell;
  network_cell_ = new MetricCell;
  load_ = valueLabel();
  health->addRow("CPU:", cpu_cell_);
  health->addRow("Memory:", memory_cell_);
  health->addRow("Network:", network_cell_);
  health->addRow("Load (1 min):", load_);
  middle->addWidget(health_box, 3);
  health_box_ = health_box;
  layout->addLayout(middle);

  auto* ranks_box = new QGroupBox;
  auto* ranks_layout = new QVBoxLayout(ranks_box);
  ranks_ = new QTreeWidget;
  ranks_->setObjectName("agentRanks");
  ranks_->setHeaderLabels({"Job", "Rank", "PID", "Device", "Attempt", "Running for"});
  ranks_->setRootIsDecorated(false);
  ranks_->setAlternatingRowColors(true);
  ranks_->setSortingEnabled(true);
  ranks_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
  ranks_->header()->setStretchLastSection(false);
  ranks_->setVerticalScrollBarPolicy(Qt::ScrollBarAsNeeded);
  connect(ranks_, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem* item) {
    if (item) Q_EMIT openJobRequested(item->text(0));
  });
  ranks_layout->addWidget(ranks_);
  layout->addWidget(ranks_box);
  ranks_box_ = ranks_box;

  auto* age_timer = new QTimer(this);
  age_timer->setInterval(1000);
  connect(age_timer, &QTimer::timeout, this, [this] { updateLastAnswer(); });
  age_timer->start();

  auto* gpu_box = new QGroupBox("GPUs (bar: now, line: last 5 min)");
  auto* gpu_layout = new QVBoxLayout(gpu_box);
  gpu_heading_ = new QLabel;
  gpu_heading_->setForegroundRole(QPalette::PlaceholderText);
  gpu_layout->addWidget(gpu_heading_);
  gpu_grid_ = new QGridLayout;
  gpu_grid_->setHorizontalSpacing(10);
  const char* headers[] = {"GPU", "Utilization", "Memory", "Temperature", "Power"};
  for (int column = 0; column < 5; ++column) {
    auto* label = new QLabel(QString("<b>%1</b>").arg(headers[column]));
    gpu_grid_->addWidget(label, 0, column);
    gpu_headers_.push_back(label);
    if (column > 0) gpu_grid_->setColumnStretch(column, 1);
  }
  gpu_layout->addLayout(gpu_grid_);
  layout->addWidget(gpu_box);
  gpu_box_ = gpu_box;
  layout->addStretch(1);

  showAgent(nullptr);
}

void AgentDetailPanel::showAgent(const AgentEntry* entry) {
  placeholder_->setVisible(entry == nullptr);
  body_->setVisible(entry != nullptr);
  if (!entry) return;
  const auto& status = entry->status;
  state_dot_->setPixmap(stateIcon(status.state).pixmap(18, 18));
  title_->setText(QString("%1 — %2").arg(QString::fromStdString(status.name),
                                         client::agentStateName(status.state)));
  const QString advice = stateAdvice(status, client_public_key_);
  advice_->setText(advice);
  advice_->setVisible(!advice.isEmpty());
  update_key_->setVisible(status.state == client::AgentState::kServerKeyMismatch);
  QPalette advice_palette = advice_->palette();
  advice_palette.setColor(QPalette::WindowText, stateColor(status.state).lighter(120));
  advice_->setPalette(advice_palette);
  reason_->setText(QString::fromStdString(status.reason));
  reason_->setVisible(!status.reason.empty());
  answered_at_ = status.answered_at;
  online_ = status.state == AgentState::kOnline;
  updateLastAnswer();
  showInventory(*entry);
  showRanks(*entry);
  showHealth(*entry);
  showGpus(*entry);
}

// The heartbeat's age: what every other fact on the panel is as old as.
void AgentDetailPanel::updateLastAnswer() {
  if (!body_->isVisible() && placeholder_->isVisible()) return;
  if (answered_at_ <= 0) {
    last_answer_->setText(online_ ? QString::fromUtf8("—") : "none since the app started");
    return;
  }
  const double now = static_cast<double>(QDateTime::currentMSecsSinceEpoch()) / 1000;
  const double age = std::max(0.0, now - answered_at_);
  const QString ago =
      age < 10 ? QString("%1 s ago").arg(age, 0, 'f', 1) : QString("%1 ago").arg(formatUptime(age));
  last_answer_->setText(QString("%1 (%2)").arg(
      QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(answered_at_ * 1000)).toString("HH:mm:ss"),
      ago));
}

QString AgentDetailPanel::lastAnswerText() const { return last_answer_->text(); }

void AgentDetailPanel::showRanks(const AgentEntry& entry) {
  const auto& inventory = entry.status.inventory;
  ranks_box_->setVisible(inventory.has_value());
  if (!inventory) return;
  // Rebuilt only when the ranks changed, so a selection survives the agent's updates.
  QStringList now;
  for (const auto& r : inventory->running_ranks()) {
    now << QString("%1#%2#%3").arg(QString::fromStdString(r.job())).arg(r.rank()).arg(r.pid());
  }
  QStringList shown;
  for (int i = 0; i < ranks_->topLevelItemCount(); ++i) {
    shown << ranks_->topLevelItem(i)->data(0, Qt::UserRole).toString();
  }
  std::sort(now.begin(), now.end());
  std::sort(shown.begin(), shown.end());
  const double at = std::max(entry.status.time, inventory->health_time());
  if (now != shown) {
    ranks_->clear();
    for (const auto& r : inventory->running_ranks()) {
      auto* item = new QTreeWidgetItem;
      item->setText(0, QString::fromStdString(r.job()));
      item->setData(
          0, Qt::UserRole,
          QString("%1#%2#%3").arg(QString::fromStdString(r.job())).arg(r.rank()).arg(r.pid()));
      item->setData(1, Qt::DisplayRole, r.rank());
      item->setData(2, Qt::DisplayRole, r.pid());
      item->setText(3, r.device().empty() ? QString("CPU") : QString::fromStdString(r.device()));
      item->setData(4, Qt::DisplayRole, r.attempt());
      item->setData(5, Qt::UserRole, r.started_at());
      item->setToolTip(0, "Double-click: the dashboard of " + QString::fromStdString(r.job()));
      ranks_->addTopLevelItem(item);
    }
    ranks_->sortByColumn(ranks_->sortColumn() < 0 ? 0 : ranks_->sortColumn(),
                         ranks_->header()->sortIndicatorOrder());
    // As tall as its rows, up to eight; a scroll bar beyond.
    const int rows = std::clamp(ranks_->topLevelItemCount(), 1, 8);
    const int row_height = std::max(ranks_->sizeHintForRow(0), fontMetrics().height() + 4);
    ranks_->setFixedHeight(ranks_->header()->sizeHint().height() + rows * row_height +
                           2 * ranks_->frameWidth() + 2);
  }
  for (int i = 0; i < ranks_->topLevelItemCount(); ++i) {
    QTreeWidgetItem* item = ranks_->topLevelItem(i);
    const double started = item->data(5, Qt::UserRole).toDouble();
    item->setText(5, started > 0 ? formatUptime(std::max(0.0, at - started)) : QString());
  }
  const int count = inventory->running_ranks_size();
  ranks_box_->setTitle(count == 0 ? QString("Ranks running here: none")
                                  : QString("Ranks running here: %1 (double-click: the job's "
                                            "dashboard)")
                                        .arg(count));
  ranks_->setVisible(count > 0);
}

void AgentDetailPanel::showInventory(const AgentEntry& entry) {
  const auto& status = entry.status;
  const QString none = QString::fromUtf8("—");
  endpoint_->setText(QString::fromStdString(status.endpoint));
  fingerprint_->setText(QString::fromStdString(security::keyFingerprint(status.server_key)));
  fingerprint_->setToolTip(QString("server_key %1\nCompare with `ringmaster-agent pubkey` on the "
                                   "host; the fingerprint is for eyes only, not a security check")
                               .arg(QString::fromStdString(status.server_key)));
  if (!status.inventory) {
    for (QLabel* label : {host_, cpus_, memory_, slots_, version_, started_}) {
      label->setText(none);
    }
    host_->setText(agentHost(status) + "  (from the endpoint; no inventory yet)");
    return;
  }
  const proto::Inventory& inventory = *status.inventory;
  host_->setText(QString::fromStdString(inventory.hostname()));
  cpus_->setText(QString::number(inventory.cpus()));
  memory_->setText(formatBytes(static_cast<double>(inventory.memory_total_bytes())));
  slots_->setText(QString("%1 of %2").arg(inventory.slots_free()).arg(inventory.slots()));
  version_->setText(inventory.version().empty() ? none
                                                : QString::fromStdString(inventory.version()));
  if (inventory.started_at() > 0) {
    const double up = std::max(status.time, inventory.health_time()) - inventory.started_at();
    started_->setText(
        QString("%1 (up %2)").arg(formatClock(inventory.started_at()), formatUptime(up)));
  } else {
    started_->setText(none);
  }
}

void AgentDetailPanel::showHealth(const AgentEntry& entry) {
  const auto& status = entry.status;
  const bool stale = status.state != AgentState::kOnline;
  const double end = std::max(entry.history.newestTime(), status.time);
  const QString none = QString::fromUtf8("—");
  health_box_->setVisible(status.inventory.has_value());
  if (!status.inventory || !status.inventory->has_health()) {
    cpu_cell_->setValue(-1, {}, none);
    memory_cell_->setValue(-1, {}, none);
    network_cell_->setValue(-1, {}, none);
    cpu_cell_->setSparkline({}, {});
    memory_cell_->setSparkline({}, {});
    network_cell_->setSparkline({}, {});
    load_->setText(none);
    return;
  }
  const proto::HealthSample& health = status.inventory->health();
  const QString suffix = stale ? "  (last known)" : "";
  cpu_cell_->setValue(health.cpu_percent() / 100, stale ? kStaleColor : kCpuColor,
                      formatPercent(health.cpu_percent()) + suffix);
  cpu_cell_->setSparkline(
      sparkline(entry.history.series(kSpanS, [](const HealthPoint& p) { return p.cpu_percent; }),
                end, 100),
      stale ? kStaleColor : kCpuColor);
  const double total = static_cast<double>(health.memory_total_bytes());
  const double used = static_cast<double>(health.memory_used_bytes());
  const double fraction = total > 0 ? used / total : 0;
  memory_cell_->setValue(
      fraction, stale ? kStaleColor : levelColor(fraction, 0.9, 0.97, kMemoryColor),
      QString("%1 of %2 (%3)")
              .arg(formatBytes(used), formatBytes(total), formatPercent(fraction * 100)) +
          suffix);
  memory_cell_->setSparkline(
      sparkline(entry.history.series(kSpanS,
                                     [](const HealthPoint& p) {
                                       return p.memory_total_bytes > 0
                                                  ? 100 * p.memory_used_bytes / p.memory_total_bytes
                                                  : 0;
                                     }),
                end, 100),
      stale ? kStaleColor : kMemoryColor);
  network_cell_->setValue(-1, {},
                          QString::fromUtf8("↓ rx %1    ↑ tx %2")
                                  .arg(formatRate(health.net_rx_bytes_per_s()),
                                       formatRate(health.net_tx_bytes_per_s())) +
                              suffix);
  Sparkline net = sparkline(
      entry.history.series(kSpanS, [](const HealthPoint& p) { return p.net_rx_bytes_per_s; }), end,
      0);  // y_max 0: scaled to the busiest moment
  net.second =
      entry.history.series(kSpanS, [](const HealthPoint& p) { return p.net_tx_bytes_per_s; });
  network_cell_->setSparkline(net, stale ? kStaleColor : kNetworkRxColor,
                              stale ? kStaleColor.lighter(130) : kNetworkTxColor);
  load_->setText(QString::number(health.load1(), 'f', 2) +
                 (status.inventory->cpus() > 0
                      ? QString(" on %1 CPUs").arg(status.inventory->cpus())
                      : QString()));
}

void AgentDetailPanel::setGpuRowCount(int count) {
  while (static_cast<int>(gpu_rows_.size()) > count) {
    GpuRow row = gpu_rows_.back();
    gpu_rows_.pop_back();
    delete row.title;
    for (MetricCell* cell : row.cells) delete cell;
    delete row.faults;
  }
  while (static_cast<int>(gpu_rows_.size()) < count) {
    // Two grid rows per GPU: its readings, then its faults across the whole width.
    const int grid_row = 2 * static_cast<int>(gpu_rows_.size()) + 1;
    GpuRow row;
    row.title = new QLabel;
    row.title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    gpu_grid_->addWidget(row.title, grid_row, 0, Qt::AlignTop);
    for (int metric = 0; metric < 4; ++metric) {
      row.cells[metric] = new MetricCell;
      gpu_grid_->addWidget(row.cells[metric], grid_row, metric + 1);
    }
    row.faults = new QLabel;
    row.faults->setWordWrap(true);
    row.faults->setTextInteractionFlags(Qt::TextSelectableByMouse);
    row.faults->setVisible(false);
    gpu_grid_->addWidget(row.faults, grid_row + 1, 0, 1, 5);
    gpu_rows_.push_back(row);
  }
}

namespace {

// Under a GPU's row: its faults in words, most serious first, coloured by how serious (grey when
// the sample is stale); its clocks and PCIe link in the tooltip.
void showGpuFaults(QLabel* label, const proto::GpuHealth& gpu, bool stale) {
  QStringList lines;
  for (const hardware::GpuFault& fault : hardware::gpuFaults(gpu)) {
    const QColor color = stale ? kStaleColor : faultColor(fault.severity);
    lines << QString("<span style='color:%1'>%2 %3</span>")
                 .arg(color.name(), QString::fromUtf8("\u25CF"),
                      QString::fromStdString(fault.text).toHtmlEscaped());
  }
  label->setText(lines.join("<br>"));
  label->setVisible(!lines.isEmpty());
  // Clocks against their maximum and the PCIe link, for whoever asks, fault or not.
  QStringList facts;
  if (gpu.has_sm_clock_mhz()) {
    facts << QString("SM clock %1 of %2 MHz").arg(gpu.sm_clock_mhz()).arg(gpu.sm_clock_max_mhz());
  }
  if (gpu.has_memory_clock_mhz()) {
    facts << QString("memory clock %1 of %2 MHz")
                 .arg(gpu.memory_clock_mhz())
                 .arg(gpu.memory_clock_max_mhz());
  }
  if (gpu.has_pcie_generation()) {
    facts << QString("PCIe Gen %1 x%2 (up to Gen %3 x%4)")
                 .arg(gpu.pcie_generation())
                 .arg(gpu.pcie_width())
                 .arg(gpu.pcie_generation_max())
                 .arg(gpu.pcie_width_max());
  }
  label->setToolTip(facts.join("\n"));
}

}  // namespace

void AgentDetailPanel::showGpus(const AgentEntry& entry) {
  const auto& status = entry.status;
  // Nothing known yet (the agent never answered this app): no empty boxes.
  gpu_box_->setVisible(status.inventory.has_value());
  if (!status.inventory) {
    setGpuRowCount(0);
    return;
  }
  const proto::Inventory& inventory = *status.inventory;
  const auto& health = inventory.health();
  const int count = std::max(inventory.gpus_size(), health.gpus_size());
  setGpuRowCount(count);
  gpu_heading_->setText("This host reports no GPU.");
  gpu_heading_->setVisible(count == 0);
  for (QWidget* header : gpu_headers_) header->setVisible(count > 0);
  const bool stale = status.state != AgentState::kOnline;
  const double end = std::max(entry.history.newestTime(), status.time);
  for (int i = 0; i < count; ++i) {
    GpuRow& row = gpu_rows_[static_cast<size_t>(i)];
    const size_t gpu = static_cast<size_t>(i);
    const proto::GpuInfo* info = i < inventory.gpus_size() ? &inventory.gpus(i) : nullptr;
    const QString name = info ? QString::fromStdString(info->name()) : QString();
    row.title->setText(QString("<b>GPU %1</b><br>%2")
                           .arg(info ? info->index() : static_cast<uint32_t>(i))
                           .arg(name.toHtmlEscaped()));
    row.title->setToolTip(info ? QString::fromStdString(info->uuid()) : QString());
    if (i >= health.gpus_size()) {
      for (MetricCell* cell : row.cells) cell->setValue(-1, {}, QString::fromUtf8("—"));
      row.faults->setVisible(false);
      continue;
    }
    const proto::GpuHealth& g = health.gpus(i);
    showGpuFaults(row.faults, g, stale);
    auto color = [&](const QColor& c) { return stale ? kStaleColor : c; };
    row.cells[0]->setValue(g.utilization_percent() / 100, color(kGpuColor),
                           formatPercent(g.utilization_percent()));
    row.cells[0]->setSparkline(
        sparkline(entry.history.gpuSeries(
                      gpu, kSpanS, [](const GpuHealthPoint& p) { return p.utilization_percent; }),
                  end, 100),
        color(kGpuColor));
    const double total = static_cast<double>(g.memory_total_bytes());
    const double used = static_cast<double>(g.memory_used_bytes());
    const double fraction = total > 0 ? used / total : 0;
    row.cells[1]->setValue(fraction, color(levelColor(fraction, 0.9, 0.97, kMemoryColor)),
                           QString("%1 / %2").arg(formatBytes(used), formatBytes(total)));
    row.cells[1]->setSparkline(
        sparkline(entry.history.gpuSeries(gpu, kSpanS,
                                          [](const GpuHealthPoint& p) {
                                            return p.memory_total_bytes > 0
                                                       ? 100 * p.memory_used_bytes /
                                                             p.memory_total_bytes
                                                       : 0;
                                          }),
                  end, 100),
        color(kMemoryColor));
    row.cells[2]->setValue(g.temperature_c() / 100,
                           color(levelColor(g.temperature_c(), kTemperatureWarnC,
                                            kTemperatureCriticalC, kTemperatureColor)),
                           QString::fromUtf8("%1 °C").arg(g.temperature_c(), 0, 'f', 0));
    row.cells[2]->setSparkline(
        sparkline(entry.history.gpuSeries(gpu, kSpanS,
                                          [](const GpuHealthPoint& p) { return p.temperature_c; }),
                  end, 100),
        color(kTemperatureColor));
    const double scale = powerScale(entry.history, gpu, g.power_w());
    row.cells[3]->setValue(g.power_w() / scale, color(kPowerColor),
                           QString("%1 W").arg(g.power_w(), 0, 'f', 0));
    row.cells[3]->setSparkline(
        sparkline(
            entry.history.gpuSeries(gpu, kSpanS, [](const GpuHealthPoint& p) { return p.power_w; }),
            end, scale),
        color(kPowerColor));
  }
}

QString AgentDetailPanel::gpuFaultsText(int gpu) const {
  if (gpu < 0 || gpu >= gpuRowCount()) return {};
  const QLabel* label = gpu_rows_[static_cast<size_t>(gpu)].faults;
  return label->isVisibleTo(this) ? QTextDocumentFragment::fromHtml(label->text()).toPlainText()
                                  : QString();
}

void AgentDetailPanel::setPlaceholderText(const QString& text) { placeholder_->setText(text); }

QString AgentDetailPanel::headline() const { return title_->text(); }

QString AgentDetailPanel::advice() const { return advice_->text(); }

QString AgentDetailPanel::gpuText(int gpu, int metric) const {
  if (gpu < 0 || gpu >= gpuRowCount() || metric < 0 || metric > 3) return {};
  return gpu_rows_[static_cast<size_t>(gpu)].cells[metric]->text();
}

}  // namespace ringmaster::gui
