#include "hardware/hardware_view.h"

#include <QComboBox>
#include <QDateTime>
#include <QFrame>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <map>

#include "ringmaster/hardware/straggler_history.h"
#include "table_copy.h"

namespace ringmaster::gui {
namespace {

enum Column {
  kName,
  kRuns,
  kFailed,
  kFailedFirst,
  kHung,
  kHeldBack,
  kFaults,
  kLastFault,
  kColumnCount
};

const QColor kOutlierColor(0xef, 0x53, 0x50);
constexpr int kJobsRole = Qt::UserRole;  // an entity's failed runs, newest first

QString count(int n) { return n == 0 ? QString() : QString::number(n); }

}  // namespace

HardwareView::HardwareView(QWidget* parent) : QWidget(parent) {
  auto* title = new QLabel("<b>Hosts and GPUs over the history's runs</b>");
  window_ = new QComboBox;
  window_->setObjectName("hardware-window");
  window_->addItem("every run", 0);
  window_->addItem("the last 7 days", 7);
  window_->addItem("the last 30 days", 30);
  refresh_ = new QPushButton("Refresh");
  summary_ = new QLabel("reading the history…");
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* top = new QHBoxLayout;
  top->addWidget(title);
  top->addStretch(1);
  top->addWidget(new QLabel("Runs of"));
  top->addWidget(window_);
  top->addWidget(refresh_);

  // What stands out: one framed line each, with what to do about it.
  outliers_ = new QWidget;
  outlier_list_ = new QVBoxLayout(outliers_);
  outlier_list_->setContentsMargins(0, 0, 0, 0);
  outliers_->setVisible(false);

  table_ = new QTreeWidget;
  table_->setObjectName("hardware-table");
  table_->setColumnCount(kColumnCount);
  table_->setHeaderLabels({"Host / GPU", "Runs", "Failed", "Failed first", "Hung", "Held back",
                           "GPU faults", "Last fault"});
  table_->setRootIsDecorated(true);
  table_->setUniformRowHeights(true);
  table_->setAlternatingRowColors(true);
  table_->header()->setStretchLastSection(true);
  table_->header()->setSectionResizeMode(kName, QHeaderView::ResizeToContents);
  for (int c = kRuns; c <= kFaults; ++c) {
    table_->header()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  }
  table_->setToolTip(
      QString("Failed: the failed runs it took part in. Failed first: those whose first failing "
              "rank was on it. Held back: runs whose slowest rank (busy time at least %1x the "
              "median rank's) was on it. Double-click: its newest failed run.")
          .arg(hardware::kHeldBackRatio));
  installTableCopy(table_);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(summary_);
  layout->addWidget(outliers_);
  layout->addWidget(table_, 1);

  connect(refresh_, &QPushButton::clicked, this, [this] { Q_EMIT refreshRequested(since()); });
  connect(window_, &QComboBox::currentIndexChanged, this,
          [this] { Q_EMIT refreshRequested(since()); });
  connect(table_, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem* item) {
    const QStringList jobs = item->data(kName, kJobsRole).toStringList();
    if (!jobs.isEmpty()) Q_EMIT openRun(jobs.front());
  });
}

double HardwareView::since() const {
  const int days = window_->currentData().toInt();
  return days == 0 ? 0 : static_cast<double>(QDateTime::currentSecsSinceEpoch()) - days * 86400.0;
}

void HardwareView::setError(const QString& message) {
  summary_->setText("The history could not be read: " + message);
}

void HardwareView::setReport(const hardware::HardwareReport& report) {
  if (report.runs == 0) {
    summary_->setText(
        "No runs in the history yet: each run's hosts and GPUs are counted here once it ran.");
  } else {
    summary_->setText(QString("%1 %2: %3 failed, %4 succeeded. %5")
                          .arg(report.runs)
                          .arg(report.runs == 1 ? "run" : "runs")
                          .arg(report.failed)
                          .arg(report.succeeded)
                          .arg(report.outliers.empty()
                                   ? "No host or GPU stands out."
                                   : "What stands out is named above the table, most "
                                     "suspicious first."));
  }
  showOutliers(report);
  showTable(report);
}

void HardwareView::showOutliers(const hardware::HardwareReport& report) {
  while (QLayoutItem* item = outlier_list_->takeAt(0)) {
    delete item->widget();
    delete item;
  }
  for (const hardware::HardwareOutlier& outlier : report.outliers) {
    const hardware::HardwareEntity& e = report.entities[outlier.entity];
    auto* frame = new QFrame;
    frame->setObjectName("hardware-outlier");
    frame->setStyleSheet(
        "QFrame#hardware-outlier { background: #4a3a12; border: 1px solid #d9a526;"
        " border-radius: 4px; } QLabel { color: #ffe7a8; }");
    auto* text = new QLabel(QString::fromStdString(outlier.text));
    text->setWordWrap(true);
    text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* row = new QHBoxLayout(frame);
    row->addWidget(text, 1);
    // Named for its failures, or for holding runs back: the newest of those runs is a click away,
    // and so is restarting it without the host (a slow host's run may be running still).
    const bool slow = hardware::namedAsSlow(e);
    const std::vector<std::string>& jobs = slow ? e.held_back_jobs : e.failed_jobs;
    if (!jobs.empty()) {
      const QString job = QString::fromStdString(jobs.front());
      const QString host = QString::fromStdString(e.host);
      auto* open =
          new QPushButton(slow ? "Open the newest run it held back" : "Open its newest failed run");
      open->setToolTip(job);
      connect(open, &QPushButton::clicked, this, [this, job] { Q_EMIT openRun(job); });
      auto* restart = new QPushButton(QString("Restart it without %1").arg(host));
      restart->setObjectName("restart-without");
      restart->setToolTip(
          QString("Restart %1 from its newest checkpoint on every host but %2").arg(job, host));
      connect(restart, &QPushButton::clicked, this,
              [this, job, host] { Q_EMIT restartWithout(job, host); });
      row->addWidget(open);
      row->addWidget(restart);
    }
    outlier_list_->addWidget(frame);
  }
  outliers_->setVisible(!report.outliers.empty());
}

void HardwareView::showTable(const hardware::HardwareReport& report) {
  table_->clear();
  std::map<std::string, QTreeWidgetItem*> hosts;
  for (const auto& e : report.entities) {
    QTreeWidgetItem* parent = e.kind == "host" ? nullptr : hosts[e.host];
    auto* item = parent ? new QTreeWidgetItem(parent) : new QTreeWidgetItem(table_);
    if (e.kind == "host") hosts[e.id] = item;
    item->setText(kName, QString::fromStdString(hardware::entityLabel(e)));
    item->setToolTip(kName, QString::fromStdString(e.id));
    item->setText(kRuns, QString::number(e.runs));
    item->setText(kFailed, count(e.failed));
    item->setText(kFailedFirst, count(e.failed_first));
    item->setText(kHung, count(e.hangs));
    item->setText(kHeldBack,
                  e.held_back == 0
                      ? QString()
                      : QString("%1 (%2x)").arg(e.held_back).arg(e.held_back_ratio, 0, 'f', 2));
    QString faults = count(e.critical_faults);
    if (e.xids > 0) faults += QString(" (%1 XID)").arg(e.xids);
    item->setText(kFaults, faults);
    item->setText(kLastFault, QString::fromStdString(e.last_fault));
    item->setToolTip(kLastFault, QString::fromStdString(e.last_fault));
    for (int c = kRuns; c <= kFaults; ++c) item->setTextAlignment(c, Qt::AlignRight);
    QStringList jobs;
    for (const auto& id : e.failed_jobs) jobs << QString::fromStdString(id);
    item->setData(kName, kJobsRole, jobs);
    if (e.outlier) {
      for (int c = 0; c < kColumnCount; ++c) item->setForeground(c, kOutlierColor);
      QFont bold = item->font(kName);
      bold.setBold(true);
      item->setFont(kName, bold);
    }
  }
  table_->expandAll();
}

QStringList HardwareView::outlierTexts() const {
  QStringList out;
  for (const QLabel* label : outliers_->findChildren<QLabel*>()) out << label->text();
  return out;
}

QString HardwareView::summaryText() const { return summary_->text(); }

}  // namespace ringmaster::gui
