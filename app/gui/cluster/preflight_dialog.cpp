#include "cluster/preflight_dialog.h"

#include <QComboBox>
#include <QDateTime>
#include <QDialogButtonBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QTableWidget>
#include <QTextDocumentFragment>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <map>

#include "cluster/agent_state_style.h"
#include "cluster/format.h"
#include "table_copy.h"

namespace ringmaster::gui {
namespace {

// A link's colour by its share of the median pair's bandwidth: the verdict's threshold is where
// red begins; amber up to twice that.
constexpr const char* kLinksTitle = "<b>Links</b> (GB/s; red: under a quarter of the median pair)";

QColor linkColor(double gbps, double median) {
  if (median <= 0) return QColor(0x60, 0x60, 0x60);
  const double share = gbps / median;
  if (share < client::kSlowLinkShare) return QColor(0xc6, 0x28, 0x28);
  if (share < 2 * client::kSlowLinkShare) return QColor(0xb2, 0x7a, 0x12);
  return QColor(0x2e, 0x7d, 0x32);
}

QString whenText(double unix_seconds) {
  return QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(unix_seconds * 1000))
      .toString("yyyy-MM-dd HH:mm");
}

QString checkedText(const client::PreflightReport& report) {
  return QString("%1 agent(s) and %2 link(s) checked in %3 s.")
      .arg(report.agents.size())
      .arg(report.links.size())
      .arg(report.seconds, 0, 'f', 1);
}

QTableWidgetItem* item(const QString& text) {
  auto* cell = new QTableWidgetItem(text);
  cell->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
  return cell;
}

// A link's cell: its GB/s on its heat-map colour (against the median pair), or "failed".
QTableWidgetItem* linkCell(const client::LinkCheck& link, double median_gbps) {
  QTableWidgetItem* cell;
  const QString a = QString::fromStdString(link.a), b = QString::fromStdString(link.b);
  if (!link.error.empty()) {
    cell = item("failed");
    cell->setBackground(QColor(0xc6, 0x28, 0x28));
    cell->setToolTip(QString::fromStdString(link.error));
  } else {
    cell = item(QString::number(link.gbps, 'g', 3));
    cell->setBackground(linkColor(link.gbps, median_gbps));
    cell->setToolTip(QString("%1 <-> %2: %3 GB/s, %4 us latency (median pair %5 GB/s)")
                         .arg(a, b)
                         .arg(link.gbps, 0, 'g', 3)
                         .arg(link.latency_us, 0, 'f', 0)
                         .arg(median_gbps, 0, 'g', 3));
  }
  cell->setForeground(Qt::white);
  cell->setTextAlignment(Qt::AlignCenter);
  return cell;
}

}  // namespace

PreflightDialog::PreflightDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle("Check cluster");
  setModal(false);
  resize(900, 620);
  status_ = new QLabel("starting…");
  status_->setWordWrap(true);
  busy_ = new QProgressBar;
  busy_->setRange(0, 0);  // busy until the report comes
  busy_->setTextVisible(false);
  busy_->setMaximumHeight(8);

  agents_ = new QTableWidget(0, 7);
  agents_->setObjectName("preflight-agents");
  agents_->setHorizontalHeaderLabels(
      {"Agent", "CPUs", "Load", "Memory used", "Disk free (state dir)", "Clock", "GPU faults"});
  agents_->verticalHeader()->setVisible(false);
  agents_->horizontalHeader()->setStretchLastSection(true);
  agents_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  installTableCopy(agents_);

  links_ = new QTableWidget(0, 0);
  links_->setObjectName("preflight-links");
  links_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  links_->setToolTip("GB/s between each pair: a 2-rank Gloo allreduce over TCP, as jobs use");
  installTableCopy(links_);

  verdict_ = new QLabel;
  verdict_->setObjectName("preflight-verdict");
  verdict_->setWordWrap(true);
  verdict_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  again_ = new QPushButton("Run again");
  again_->setEnabled(false);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
  buttons->addButton(again_, QDialogButtonBox::ActionRole);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::close);
  connect(again_, &QPushButton::clicked, this, [this] {
    again_->setEnabled(false);
    busy_->setVisible(true);
    Q_EMIT runAgainRequested();
  });

  kept_label_ = new QLabel("Earlier checks:");
  kept_ = new QComboBox;
  kept_->setObjectName("preflight-kept");
  kept_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  kept_->setMinimumContentsLength(40);
  kept_->setToolTip("Every check is kept in the history (ringmasterctl preflight --history)");
  kept_label_->setBuddy(kept_);
  kept_label_->setVisible(false);
  kept_->setVisible(false);
  connect(kept_, &QComboBox::activated, this, [this](int index) {
    if (index < 0 || index >= static_cast<int>(kept_reports_.size())) return;
    const client::PreflightReport& report = kept_reports_[static_cast<size_t>(index)];
    showReport(report);
    status_->setText(QString("Check %1 of %2, kept in the history: %3")
                         .arg(report.id)
                         .arg(whenText(report.started_at), checkedText(report)));
  });
  auto* kept_row = new QHBoxLayout;
  kept_row->addWidget(kept_label_);
  kept_row->addWidget(kept_, 1);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(kept_row);
  layout->addWidget(status_);
  layout->addWidget(busy_);
  layout->addWidget(verdict_);
  layout->addWidget(new QLabel("<b>Agents</b>"));
  layout->addWidget(agents_, 1);
  links_title_ = new QLabel(kLinksTitle);
  layout->addWidget(links_title_);
  layout->addWidget(links_, 1);
  layout->addWidget(buttons);
}

void PreflightDialog::setProgress(const QString& what) { status_->setText(what + "…"); }

void PreflightDialog::setError(const QString& message) {
  busy_->setVisible(false);
  again_->setEnabled(true);
  status_->setText("The preflight could not run: " + message);
}

void PreflightDialog::setReport(const client::PreflightReport& report) {
  busy_->setVisible(false);
  again_->setEnabled(true);
  status_->setText(checkedText(report));
  showReport(report);
}

void PreflightDialog::setKeptReports(std::vector<client::PreflightReport> reports) {
  kept_reports_ = std::move(reports);
  const QSignalBlocker quiet(kept_);
  kept_->clear();
  for (const client::PreflightReport& report : kept_reports_) {
    const QString verdict = report.problems.empty()
                                ? QString("all clear")
                                : QString("%1 problem(s): %2")
                                      .arg(report.problems.size())
                                      .arg(QString::fromStdString(report.problems.front()));
    kept_->addItem(QString("%1 · %2 · %3 agent(s) · %4")
                       .arg(report.id)
                       .arg(whenText(report.started_at))
                       .arg(report.agents.size())
                       .arg(verdict));
    kept_->setItemData(kept_->count() - 1, verdict, Qt::ToolTipRole);
    if (report.id == shown_id_) kept_->setCurrentIndex(kept_->count() - 1);
  }
  if (shown_id_ == 0) kept_->setCurrentIndex(-1);
  kept_label_->setVisible(!kept_reports_.empty());
  kept_->setVisible(!kept_reports_.empty());
}

void PreflightDialog::showReport(const client::PreflightReport& report) {
  shown_id_ = report.id;
  QStringList lines;
  for (const std::string& problem : report.problems) {
    lines << QString("<span style='color:#ef5350'>%1 %2</span>")
                 .arg(QString::fromUtf8("\u25CF"), QString::fromStdString(problem).toHtmlEscaped());
  }
  verdict_->setText(lines.isEmpty()
                        ? QString("<span style='color:#4cc25a'>All clear: no host, disk, clock, "
                                  "GPU or link stands out.</span>")
                        : lines.join("<br>"));
  showAgents(report);
  showLinks(report);
}

void PreflightDialog::showAgents(const client::PreflightReport& report) {
  agents_->setRowCount(static_cast<int>(report.agents.size()));
  int row = 0;
  for (const client::AgentCheck& a : report.agents) {
    agents_->setItem(row, 0, item(QString::fromStdString(a.agent)));
    if (!a.error.empty()) {
      auto* why = item(QString::fromStdString(a.error));
      why->setForeground(QColor(0xef, 0x53, 0x50));
      agents_->setItem(row, 1, why);
      agents_->setSpan(row, 1, 1, 6);
      ++row;
      continue;
    }
    agents_->setItem(row, 1, item(QString::number(a.cpus)));
    agents_->setItem(row, 2, item(QString::number(a.load1, 'f', 1)));
    agents_->setItem(
        row, 3,
        item(QString("%1 / %2").arg(formatBytes(static_cast<double>(a.memory_used)),
                                    formatBytes(static_cast<double>(a.memory_total)))));
    auto* disk = item(QString("%1 of %2")
                          .arg(formatBytes(static_cast<double>(a.disk_free)),
                               formatBytes(static_cast<double>(a.disk_total))));
    disk->setToolTip(QString::fromStdString(a.state_dir));
    agents_->setItem(row, 4, disk);
    agents_->setItem(row, 5, item(QString("%1 s").arg(a.clock_offset_s, 0, 'f', 3)));
    QStringList faults;
    hardware::FaultSeverity worst = hardware::FaultSeverity::kNotice;
    for (const auto& f : a.gpu_faults) {
      faults << QString("GPU %1: %2").arg(f.gpu).arg(QString::fromStdString(f.fault.text));
      worst = std::max(worst, f.fault.severity);
    }
    auto* gpus = item(!faults.isEmpty() ? faults.join("; ")
                      : a.gpus == 0     ? QString("CPU only")
                                        : QString("%1 GPU(s), no fault").arg(a.gpus));
    if (!faults.isEmpty()) gpus->setForeground(faultColor(worst));
    agents_->setItem(row, 6, gpus);
    ++row;
  }
  // The verdict names the rows to look at; colour them too.
  for (int r = 0; r < agents_->rowCount(); ++r) {
    const QString name = agents_->item(r, 0)->text();
    for (const std::string& problem : report.problems) {
      if (QString::fromStdString(problem).startsWith(name + ":") ||
          QString::fromStdString(problem).startsWith(name + " GPU")) {
        agents_->item(r, 0)->setForeground(QColor(0xef, 0x53, 0x50));
      }
    }
  }
  agents_->resizeColumnsToContents();
}

void PreflightDialog::showLinks(const client::PreflightReport& report) {
  QStringList names;
  for (const client::AgentCheck& a : report.agents) {
    if (a.error.empty()) names << QString::fromStdString(a.agent);
  }
  // A link needs two agents: with fewer there is nothing to draw.
  links_title_->setText(names.size() < 2 ? "<b>Links</b>: none to test (a link needs two agents "
                                           "that answer)"
                                         : kLinksTitle);
  links_->setVisible(names.size() >= 2);
  links_->clear();
  if (names.size() > client::kAllPairsUpTo) {
    showLinkList(report, static_cast<int>(names.size()));
    return;
  }
  links_->verticalHeader()->setVisible(true);
  links_->setRowCount(static_cast<int>(names.size()));
  links_->setColumnCount(static_cast<int>(names.size()));
  links_->setHorizontalHeaderLabels(names);
  links_->setVerticalHeaderLabels(names);
  std::map<QString, int> index;
  for (int i = 0; i < names.size(); ++i) index[names[i]] = i;
  for (int i = 0; i < names.size(); ++i) links_->setItem(i, i, item(QString::fromUtf8("—")));
  for (const client::LinkCheck& link : report.links) {
    const QString a = QString::fromStdString(link.a), b = QString::fromStdString(link.b);
    if (!index.contains(a) || !index.contains(b)) continue;
    for (const auto& [row, column] :
         {std::pair{index[a], index[b]}, std::pair{index[b], index[a]}}) {
      links_->setItem(row, column, linkCell(link, report.median_gbps));
    }
  }
  links_->resizeColumnsToContents();
}

// Past kAllPairsUpTo agents only a few links per agent are measured (client::linkRounds): a
// matrix of 64 would be 4,032 cells and 4,000 of them empty. The measured links instead, the
// failed and the slowest first: the one to look at is the top row.
void PreflightDialog::showLinkList(const client::PreflightReport& report, int agents) {
  std::vector<const client::LinkCheck*> links;
  for (const client::LinkCheck& link : report.links) links.push_back(&link);
  std::stable_sort(links.begin(), links.end(), [](const auto* x, const auto* y) {
    if (x->error.empty() != y->error.empty()) return !x->error.empty();
    return x->gbps < y->gbps;
  });
  links_title_->setText(QString("<b>Links</b>: %1 measured of the %2 pairs (%3 agents: a ring and "
                                "random pairs), slowest first; red: under a quarter of the "
                                "median pair")
                            .arg(links.size())
                            .arg(agents * (agents - 1) / 2)
                            .arg(agents));
  links_->setRowCount(static_cast<int>(links.size()));
  links_->setColumnCount(4);
  links_->setHorizontalHeaderLabels({"Link", "GB/s", "Latency (us)", "Of the median pair"});
  links_->verticalHeader()->setVisible(false);
  for (int row = 0; row < static_cast<int>(links.size()); ++row) {
    const client::LinkCheck& link = *links[static_cast<size_t>(row)];
    links_->setItem(row, 0, item(QString::fromStdString(link.a + " <-> " + link.b)));
    links_->setItem(row, 1, linkCell(link, report.median_gbps));
    const bool measured = link.error.empty();
    links_->setItem(row, 2, item(measured ? QString::number(link.latency_us, 'f', 0) : ""));
    links_->setItem(row, 3,
                    item(measured && report.median_gbps > 0
                             ? QString("%1%").arg(100 * link.gbps / report.median_gbps, 0, 'f', 0)
                             : QString()));
  }
  links_->resizeColumnsToContents();
}

QString PreflightDialog::verdictText() const {
  return QTextDocumentFragment::fromHtml(verdict_->text()).toPlainText();
}

QString PreflightDialog::statusText() const { return status_->text(); }

}  // namespace ringmaster::gui
