#include "cluster/cluster_view.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QFrame>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QScrollArea>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <map>

#include "cluster/agent_detail_panel.h"
#include "cluster/agent_dialog.h"
#include "cluster/agent_table_model.h"
#include "cluster/authorize_dialog.h"
#include "cluster/health_delegate.h"
#include "cluster/install_agent_dialog.h"
#include "ringmaster/client/cluster_config.h"
// Qt's `slots` macro would eat the protobuf Inventory::slots() that core's headers declare.
#pragma push_macro("slots")
#undef slots
#include "ringmaster/client/cluster_file_edits.h"
#pragma pop_macro("slots")

namespace ringmaster::gui {
namespace {

using client::addAgentToFile;
using client::AgentState;
using client::readAgentsForEdit;
using client::removeAgentFromFile;
using client::replaceAgentInFile;

// Edits in a text editor arrive as several writes; reload once they settle.
constexpr int kReloadDelayMs = 200;

void setTextColor(QLabel* label, const QColor& color) {
  QPalette palette = label->palette();
  palette.setColor(QPalette::WindowText, color);
  label->setPalette(palette);
}

// Fusion pads button text tightly; long labels get room so they never touch the frame.
QPushButton* roomyButton(const QString& text) {
  auto* button = new QPushButton(text);
  button->setMinimumWidth(button->fontMetrics().horizontalAdvance(text) + 32);
  return button;
}

bool sameAgents(const std::vector<client::AgentEndpoint>& a,
                const std::vector<client::AgentEndpoint>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
    return x.name == y.name && x.endpoint == y.endpoint && x.server_key == y.server_key;
  });
}

}  // namespace

ClusterView::ClusterView(const QString& cluster_file, const QString& client_public_key,
                         QWidget* parent)
    : QWidget(parent), client_public_key_(client_public_key) {
  model_ = new AgentTableModel(client_public_key, this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(AgentTableModel::kSortRole);

  auto* layout = new QVBoxLayout(this);

  offer_banner_ = new QFrame;
  offer_banner_->setFrameShape(QFrame::StyledPanel);
  offer_banner_->setAutoFillBackground(true);
  QPalette banner_palette = offer_banner_->palette();
  banner_palette.setColor(QPalette::Window, banner_palette.color(QPalette::Highlight).darker(220));
  offer_banner_->setPalette(banner_palette);
  auto* banner_layout = new QHBoxLayout(offer_banner_);
  offer_text_ = new QLabel;
  offer_text_->setWordWrap(true);
  offer_text_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  offer_button_ = roomyButton("Starting local agent…");
  offer_button_->setText("Start local agent");
  banner_layout->addWidget(offer_text_, 1);
  banner_layout->addWidget(offer_button_);
  offer_banner_->setVisible(false);
  layout->addWidget(offer_banner_);

  file_message_ = new QLabel;
  file_message_->setWordWrap(true);
  file_message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  file_message_->setVisible(false);
  layout->addWidget(file_message_);

  auto* actions = new QHBoxLayout;
  auto* install_button = roomyButton("Install agent on host…");
  install_button->setObjectName("installAgent");
  auto* add_button = roomyButton("Add agent…");
  edit_button_ = roomyButton("Edit…");
  remove_button_ = roomyButton("Remove");
  auto* authorize_button = roomyButton("Authorize this app on an agent…");
  auto* check_button = roomyButton("Check cluster");
  check_button->setObjectName("checkCluster");
  check_button->setToolTip(
      "A preflight of every agent: CPU, memory, free disk, clock and GPU faults, and the link "
      "between every pair (a short test job each), with the outliers named");
  connect(check_button, &QPushButton::clicked, this, &ClusterView::checkClusterRequested);
  summary_ = new QLabel;
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary_->setWordWrap(true);  // on a narrow screen it wraps rather than widening the window
  actions->addWidget(install_button);
  actions->addWidget(add_button);
  actions->addWidget(edit_button_);
  actions->addWidget(remove_button_);
  actions->addSpacing(16);
  actions->addWidget(summary_, 1);
  actions->addWidget(check_button);
  actions->addWidget(authorize_button);
  layout->addLayout(actions);

  table_ = new QTableView;
  table_->setModel(proxy_);
  table_->setItemDelegate(new HealthDelegate(table_));
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setAlternatingRowColors(true);
  table_->setWordWrap(false);
  table_->verticalHeader()->setVisible(false);
  table_->verticalHeader()->setDefaultSectionSize(30);
  table_->setIconSize(QSize(14, 14));
  QHeaderView* header = table_->horizontalHeader();
  header->setSortIndicatorClearable(true);
  header->setSortIndicator(-1, Qt::AscendingOrder);  // file order until the user sorts
  table_->setSortingEnabled(true);
  // Fixed widths sized for the widest value each column can show: ResizeToContents would lay
  // out every cell's text again on each update (32 agents a second), and numbers that change
  // width would make the columns jump.
  header->setSectionResizeMode(QHeaderView::Interactive);
  header->setSectionResizeMode(AgentTableModel::kCpuHistory, QHeaderView::Stretch);
  const QFontMetrics metrics = table_->fontMetrics();
  const QFontMetrics bold_metrics(header->font());
  const std::pair<int, const char*> widest[] = {
      {AgentTableModel::kState, "server-key mismatch"},
      {AgentTableModel::kSlots, "888 / 888"},
      {AgentTableModel::kCpu, "100 %"},
      {AgentTableModel::kMemory, "888 GiB / 888 GiB"},
      {AgentTableModel::kNetwork, "↓ 88.8 MB/s   ↑ 88.8 MB/s"},
      {AgentTableModel::kGpus, "16  (100 %)"},
  };
  for (const auto& [column, text] : widest) {
    const QString title = model_->headerData(column, Qt::Horizontal).toString();
    int width = std::max(metrics.horizontalAdvance(QString::fromUtf8(text)),
                         bold_metrics.horizontalAdvance(title));
    if (column == AgentTableModel::kState) width += table_->iconSize().width() + 8;
    if (column == AgentTableModel::kCpu) width = std::max(width, 80);
    header->resizeSection(column, width + 28);
  }
  header->setMinimumSectionSize(60);

  detail_ = new AgentDetailPanel(client_public_key);
  auto* detail_scroll = new QScrollArea;
  detail_scroll->setWidget(detail_);
  detail_scroll->setWidgetResizable(true);
  detail_scroll->setFrameShape(QFrame::NoFrame);

  auto* splitter = new QSplitter(Qt::Vertical);
  splitter->addWidget(table_);
  splitter->addWidget(detail_scroll);
  splitter->setStretchFactor(0, 1);
  splitter->setStretchFactor(1, 2);
  splitter->setChildrenCollapsible(false);
  splitter_ = splitter;
  connect(splitter, &QSplitter::splitterMoved, this, [this] { splitter_moved_ = true; });
  layout->addWidget(splitter, 1);

  watcher_ = new QFileSystemWatcher(this);
  reload_timer_ = new QTimer(this);
  reload_timer_->setSingleShot(true);
  reload_timer_->setInterval(kReloadDelayMs);
  // A change made elsewhere (a text editor, ringmasterctl cluster add, the installer) reaches
  // the session too, so new agents are polled without a restart of the app.
  connect(reload_timer_, &QTimer::timeout, this, &ClusterView::reloadChangedElsewhere);
  connect(watcher_, &QFileSystemWatcher::fileChanged, reload_timer_, qOverload<>(&QTimer::start));
  connect(watcher_, &QFileSystemWatcher::directoryChanged, reload_timer_,
          qOverload<>(&QTimer::start));

  connect(install_button, &QPushButton::clicked, this, &ClusterView::onInstallClicked);
  connect(add_button, &QPushButton::clicked, this, &ClusterView::onAddClicked);
  connect(edit_button_, &QPushButton::clicked, this, &ClusterView::onEditClicked);
  connect(remove_button_, &QPushButton::clicked, this, &ClusterView::onRemoveClicked);
  connect(authorize_button, &QPushButton::clicked, this, &ClusterView::onAuthorizeClicked);
  connect(table_, &QTableView::doubleClicked, this, &ClusterView::onEditClicked);
  connect(detail_, &AgentDetailPanel::updateKeyRequested, this, &ClusterView::onEditClicked);
  connect(detail_, &AgentDetailPanel::openJobRequested, this, &ClusterView::openJobRequested);
  connect(offer_button_, &QPushButton::clicked, this, [this] {
    offer_button_->setEnabled(false);
    offer_button_->setText("Starting local agent…");
    Q_EMIT startLocalAgentRequested();
  });
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
    showSelected();
    Q_EMIT agentSelected(selectedAgent());
  });

  setClusterFile(cluster_file);
}

void ClusterView::setClusterFile(const QString& path) {
  cluster_file_ = path;
  reload();
  setLocalAgentOffer(offer_banner_->isVisible());  // its text names the file
}

void ClusterView::reload() {
  const QString selected = selectedAgent();
  auto agents = client::loadClusterFile(cluster_file_.toStdString());
  file_missing_ = !agents.isOk() && agents.status().code() == ErrorCode::kNotFound;
  file_problem_.clear();
  if (agents.isOk()) {
    model_->setAgents(*agents);
    file_message_->setVisible(false);
  } else if (file_missing_) {
    model_->setAgents({});
    file_message_->setText(
        QString("No cluster file at %1 yet: Add agent… creates it.").arg(cluster_file_));
    setTextColor(file_message_, palette().color(QPalette::PlaceholderText));
    file_message_->setVisible(!offer_banner_->isVisible());
  } else {
    // A file being edited by hand may be broken for a moment: keep showing the agents it had.
    file_message_->setText(
        QString("Cannot use %1; showing the agents it listed before.\n%2")
            .arg(cluster_file_, QString::fromStdString(agents.status().message())));
    file_problem_ = file_message_->text();
    setTextColor(file_message_, QColor(0xff, 0x8a, 0x80));
    file_message_->setVisible(true);
  }
  if (!selected.isEmpty()) selectAgent(selected);
  if (selectedAgent().isEmpty() && model_->rowCount() > 0) selectAgent(QString());
  watchFile();
  updateSummary();
  showSelected();
  fitTableHeight();
  fitNameColumns();
}

void ClusterView::fitNameColumns() {
  // Names and hosts change only with the file or an agent's first inventory.
  for (int column : {AgentTableModel::kName, AgentTableModel::kHost}) {
    table_->resizeColumnToContents(column);
    table_->horizontalHeader()->resizeSection(
        column, std::max(table_->horizontalHeader()->sectionSize(column), 70));
  }
}

void ClusterView::fitTableHeight() {
  // The table takes the height of its rows (up to a dozen, then it scrolls) and the detail panel
  // the rest, until the user moves the splitter.
  if (splitter_moved_) return;
  const int rows = std::clamp(model_->rowCount(), 3, 12);
  const int table = table_->horizontalHeader()->sizeHint().height() +
                    rows * table_->verticalHeader()->defaultSectionSize() +
                    2 * table_->frameWidth() + 2;
  const int total = splitter_->height() > table ? splitter_->height() : 900;
  splitter_->setSizes({table, std::max(total - table, 200)});
}

void ClusterView::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  fitTableHeight();
}

void ClusterView::watchFile() {
  // An atomic rewrite replaces the file's inode, which drops the watch: add it back each time.
  // The directory is watched too, so a file created later (the local agent's) is seen; when the
  // directory itself is missing, its nearest existing ancestor stands in until it appears.
  const QFileInfo info(cluster_file_);
  if (!watcher_->files().isEmpty()) watcher_->removePaths(watcher_->files());
  if (info.exists()) watcher_->addPath(info.absoluteFilePath());
  QString watched = info.absolutePath();
  while (!QFileInfo::exists(watched)) {
    const QString parent = QFileInfo(watched).absolutePath();
    if (parent == watched) break;
    watched = parent;
  }
  if (!watcher_->directories().contains(watched)) {
    if (!watcher_->directories().isEmpty()) watcher_->removePaths(watcher_->directories());
    if (QFileInfo::exists(watched)) watcher_->addPath(watched);
  }
}

void ClusterView::updateAgent(const client::AgentStatus& status) {
  const int before = model_->rowOf(status.name);
  const QString host_before =
      before >= 0 ? model_->index(before, AgentTableModel::kHost).data().toString() : QString();
  const int row = model_->updateAgent(status);
  if (row < 0) return;
  if (model_->index(row, AgentTableModel::kHost).data().toString() != host_before) {
    fitNameColumns();
  }
  if (selectedAgent().toStdString() == status.name) detail_->showAgent(&model_->entry(row));
  updateSummary();
}

void ClusterView::setLocalAgentOffer(bool shown) {
  offer_text_->setText(
      QString("<b>No cluster file at %1.</b> Start a local agent on this machine? It runs the "
              "demo and small jobs here, and is listed as <b>local</b>.")
          .arg(cluster_file_.toHtmlEscaped()));
  offer_button_->setEnabled(true);
  offer_button_->setText("Start local agent");
  offer_banner_->setVisible(shown);
  if (file_missing_) file_message_->setVisible(!shown);
}

Status ClusterView::addAgent(const client::AgentEndpoint& agent) {
  Status status = addAgentToFile(cluster_file_.toStdString(), agent);
  afterWrite(status);
  if (status.isOk()) selectAgent(QString::fromStdString(agent.name));
  return status;
}

Status ClusterView::editAgent(const QString& old_name, const client::AgentEndpoint& agent) {
  Status status = replaceAgentInFile(cluster_file_.toStdString(), old_name.toStdString(), agent);
  afterWrite(status);
  if (status.isOk()) selectAgent(QString::fromStdString(agent.name));
  return status;
}

Status ClusterView::removeAgent(const QString& name) {
  Status status = removeAgentFromFile(cluster_file_.toStdString(), name.toStdString());
  afterWrite(status);
  return status;
}

InstallAgentDialog* ClusterView::openInstallDialog() {
  auto* dialog =
      new InstallAgentDialog(defaultInstallerScript(),
                             QCoreApplication::applicationDirPath() + "/..", cluster_file_, this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  // The installer wrote the cluster file: show its agents now, not when the watcher fires.
  connect(dialog, &InstallAgentDialog::installerFinished, this,
          [this](bool, const QStringList& online) {
            reloadChangedElsewhere();
            if (!online.isEmpty()) selectAgent(online.first());
          });
  dialog->open();
  return dialog;
}

void ClusterView::onInstallClicked() { openInstallDialog(); }

void ClusterView::reloadChangedElsewhere() {
  const auto before = model_->endpoints();
  reload();
  if (!sameAgents(before, model_->endpoints())) Q_EMIT clusterFileChanged(cluster_file_);
}

void ClusterView::afterWrite(const Status& status) {
  if (!status.isOk()) return;
  reload();
  Q_EMIT clusterFileChanged(cluster_file_);
}

void ClusterView::selectAgent(const QString& name) {
  // An empty name selects the first row.
  const int source_row = name.isEmpty() ? 0 : model_->rowOf(name.toStdString());
  if (source_row < 0 || source_row >= model_->rowCount()) return;
  const QModelIndex index = proxy_->mapFromSource(model_->index(source_row, 0));
  table_->selectionModel()->select(index,
                                   QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  table_->selectionModel()->setCurrentIndex(index, QItemSelectionModel::NoUpdate);
}

QString ClusterView::selectedAgent() const {
  const QModelIndexList rows = table_->selectionModel()->selectedRows();
  if (rows.isEmpty()) return {};
  const QModelIndex source = proxy_->mapToSource(rows.front());
  return QString::fromStdString(model_->entry(source.row()).status.name);
}

QString ClusterView::fileProblem() const { return file_problem_; }

void ClusterView::showSelected() {
  const QString name = selectedAgent();
  const int row = name.isEmpty() ? -1 : model_->rowOf(name.toStdString());
  detail_->setPlaceholderText(
      model_->rowCount() > 0
          ? QString("Select an agent to see its inventory, health and GPUs.")
          : QString("No agents yet. Install agent on host… sets one up on a GPU host you can "
                    "ssh into. Add agent… lists one that already runs; Authorize this app on an "
                    "agent… shows the command to run there first."));
  detail_->showAgent(row >= 0 ? &model_->entry(row) : nullptr);
  edit_button_->setEnabled(row >= 0);
  remove_button_->setEnabled(row >= 0);
}

QString ClusterView::summary() const { return summary_->text(); }

void ClusterView::updateSummary() {
  const int count = model_->rowCount();
  if (count == 0) {
    summary_->setText("No agents.");
    return;
  }
  std::map<int, int> by_state;
  uint64_t slots = 0, slots_free = 0;
  int gpus = 0;
  for (int row = 0; row < count; ++row) {
    const auto& status = model_->entry(row).status;
    ++by_state[static_cast<int>(status.state)];
    if (status.state == AgentState::kOnline && status.inventory) {
      slots += status.inventory->slots();
      slots_free += status.inventory->slots_free();
      gpus += std::max(status.inventory->gpus_size(), status.inventory->health().gpus_size());
    }
  }
  QStringList parts;
  for (const auto& [state, n] : by_state) {
    parts << QString("%1 %2").arg(n).arg(client::agentStateName(static_cast<AgentState>(state)));
  }
  summary_->setText(QString("%1 agent%2: %3 · %4 of %5 slots free · %6 GPU%7 online")
                        .arg(count)
                        .arg(count == 1 ? "" : "s")
                        .arg(parts.join(", "))
                        .arg(slots_free)
                        .arg(slots)
                        .arg(gpus)
                        .arg(gpus == 1 ? "" : "s"));
}

void ClusterView::onAddClicked() {
  auto agents = readAgentsForEdit(cluster_file_.toStdString());
  if (!agents.isOk()) {
    QMessageBox::warning(this, "Add agent", QString::fromStdString(agents.status().message()));
    return;
  }
  AgentDialog dialog(*agents, QString(), this);
  if (dialog.exec() != QDialog::Accepted) return;
  const Status status = addAgent(dialog.agent());
  if (!status.isOk()) {
    QMessageBox::warning(this, "Add agent", QString::fromStdString(status.message()));
  }
}

void ClusterView::onEditClicked() {
  const QString name = selectedAgent();
  if (name.isEmpty()) return;
  auto agents = readAgentsForEdit(cluster_file_.toStdString());
  if (!agents.isOk()) {
    QMessageBox::warning(this, "Edit agent", QString::fromStdString(agents.status().message()));
    return;
  }
  AgentDialog dialog(*agents, name, this);
  if (dialog.exec() != QDialog::Accepted) return;
  const Status status = editAgent(name, dialog.agent());
  if (!status.isOk()) {
    QMessageBox::warning(this, "Edit agent", QString::fromStdString(status.message()));
  }
}

void ClusterView::onRemoveClicked() {
  const QString name = selectedAgent();
  if (name.isEmpty()) return;
  const auto answer = QMessageBox::question(
      this, "Remove agent",
      QString("Remove %1 from %2?\n\nJobs running there keep running; this app stops watching "
              "the agent and will not place new jobs on it.")
          .arg(name, cluster_file_));
  if (answer != QMessageBox::Yes) return;
  const Status status = removeAgent(name);
  if (!status.isOk()) {
    QMessageBox::warning(this, "Remove agent", QString::fromStdString(status.message()));
  }
}

void ClusterView::onAuthorizeClicked() {
  AuthorizeDialog dialog(client_public_key_, this);
  dialog.exec();
}

}  // namespace ringmaster::gui
