#include "cluster/agent_table_model.h"

#include <QColor>
#include <QFont>
#include <QIcon>
#include <algorithm>
#include <optional>

#include "cluster/agent_state_style.h"
#include "cluster/format.h"
#include "cluster/sparkline.h"
#include "ringmaster/client/cluster_config.h"

namespace ringmaster::gui {
namespace {

using client::AgentState;

const proto::Inventory* inventoryOf(const AgentEntry& entry) {
  return entry.status.inventory ? &*entry.status.inventory : nullptr;
}

bool hasHealth(const AgentEntry& entry) {
  const auto* inventory = inventoryOf(entry);
  return inventory && inventory->has_health();
}

// A value the agent could not read on its host ("cpu", "memory", "network"): shown as such,
// never as 0.
bool isUnmeasured(const AgentEntry& entry, const char* what) {
  const auto* inventory = inventoryOf(entry);
  if (!inventory) return false;
  const auto& names = inventory->health().unmeasured();
  return std::find(names.begin(), names.end(), what) != names.end();
}

// The GPU fault to name in the table: notices are left to the detail panel.
std::optional<NamedGpuFault> worstGpuFault(const proto::HealthSample& health) {
  std::optional<NamedGpuFault> worst;
  int count = 0;
  for (const auto& gpu : health.gpus()) {
    for (const hardware::GpuFault& fault : hardware::gpuFaults(gpu)) {
      if (fault.severity == hardware::FaultSeverity::kNotice) continue;
      ++count;
      if (!worst || fault.severity > worst->fault.severity)
        worst = NamedGpuFault{gpu.index(), fault};
    }
  }
  if (worst) worst->count = count;
  return worst;
}

QString gpuFaultText(const NamedGpuFault& named) {
  QString text = QString("GPU %1: %2").arg(named.gpu).arg(QString::fromStdString(named.fault.text));
  if (named.count > 1) text += QString(" (+%1 more)").arg(named.count - 1);
  return text;
}

const char* measuredName(int column) {
  switch (column) {
    case AgentTableModel::kCpu:
    case AgentTableModel::kCpuHistory:
      return "cpu";
    case AgentTableModel::kMemory:
      return "memory";
    case AgentTableModel::kNetwork:
      return "network";
  }
  return "";
}

// Numbers of an agent that stopped answering are its last known ones: drawn grey.
bool isStale(const AgentEntry& entry) { return entry.status.state != AgentState::kOnline; }

// The agent answers but its last inventory says it cannot write its journal (a full disk).
bool journalError(const AgentEntry& entry) {
  return entry.status.state == AgentState::kOnline && entry.status.inventory &&
         !entry.status.inventory->journal_error().empty();
}
const QColor kJournalErrorColor(0xf5, 0xa6, 0x23);  // amber: answering, not healthy

double memoryFraction(const proto::HealthSample& health) {
  return health.memory_total_bytes() > 0 ? static_cast<double>(health.memory_used_bytes()) /
                                               static_cast<double>(health.memory_total_bytes())
                                         : 0;
}

double averageGpuUtilization(const proto::HealthSample& health) {
  if (health.gpus_size() == 0) return 0;
  double sum = 0;
  for (const auto& gpu : health.gpus()) sum += gpu.utilization_percent();
  return sum / health.gpus_size();
}

int gpuCount(const proto::Inventory& inventory) {
  return std::max(inventory.gpus_size(), inventory.health().gpus_size());
}

}  // namespace

AgentTableModel::AgentTableModel(QString client_public_key, QObject* parent)
    : QAbstractTableModel(parent), client_public_key_(std::move(client_public_key)) {}

void AgentTableModel::setAgents(const std::vector<client::AgentEndpoint>& agents) {
  // The view reloads on every change of the file, its own writes included: an unchanged list
  // must not reset the model (that would drop the selection and scroll position).
  const auto current = endpoints();
  const bool same = std::equal(current.begin(), current.end(), agents.begin(), agents.end(),
                               [](const client::AgentEndpoint& a, const client::AgentEndpoint& b) {
                                 return a.name == b.name && a.endpoint == b.endpoint &&
                                        a.server_key == b.server_key;
                               });
  if (same) return;
  std::vector<AgentEntry> next;
  next.reserve(agents.size());
  for (const auto& agent : agents) {
    const int row = rowOf(agent.name);
    if (row >= 0 && entries_[row].status.endpoint == agent.endpoint &&
        entries_[row].status.server_key == agent.server_key) {
      next.push_back(std::move(entries_[row]));
      continue;
    }
    AgentEntry entry;
    entry.status.name = agent.name;
    entry.status.endpoint = agent.endpoint;
    entry.status.server_key = agent.server_key;
    entry.status.state = AgentState::kConnecting;
    next.push_back(std::move(entry));
  }
  beginResetModel();
  entries_ = std::move(next);
  endResetModel();
}

int AgentTableModel::updateAgent(const client::AgentStatus& status) {
  const int row = rowOf(status.name);
  if (row < 0) return -1;
  AgentEntry& entry = entries_[row];
  // A status for an endpoint or key the file no longer lists predates an edit.
  if (status.endpoint != entry.status.endpoint || status.server_key != entry.status.server_key) {
    return -1;
  }
  std::optional<proto::Inventory> previous = std::move(entry.status.inventory);
  entry.status = status;
  // An agent that stops answering keeps its last inventory, shown grey, so the person sees what
  // was running there.
  if (!entry.status.inventory) entry.status.inventory = std::move(previous);
  if (status.inventory) entry.history.add(*status.inventory, status.time);
  entry.gpu_fault =
      hasHealth(entry) ? worstGpuFault(entry.status.inventory->health()) : std::nullopt;
  Q_EMIT dataChanged(index(row, 0), index(row, kColumnCount - 1));
  return row;
}

int AgentTableModel::rowOf(const std::string& name) const {
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].status.name == name) return static_cast<int>(i);
  }
  return -1;
}

std::vector<client::AgentEndpoint> AgentTableModel::endpoints() const {
  std::vector<client::AgentEndpoint> out;
  for (const auto& entry : entries_) {
    out.push_back({entry.status.name, entry.status.endpoint, entry.status.server_key});
  }
  return out;
}

int AgentTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(entries_.size());
}

int AgentTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QVariant AgentTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::DisplayRole) {
    switch (section) {
      case kName:
        return "Agent";
      case kState:
        return "State";
      case kHost:
        return "Host";
      case kSlots:
        return "Slots free";
      case kCpu:
        return "CPU";
      case kMemory:
        return "Memory";
      case kNetwork:
        return "Network rx / tx";
      case kGpus:
        return "GPUs (avg util)";
      case kCpuHistory:
        return "CPU, last 5 min";
    }
  }
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case kSlots:
        return "Ranks this agent can still take / ranks it can run";
      case kCpu:
        return "All CPUs of the host, 0-100 %";
      case kMemory:
        return "Host memory used / total";
      case kNetwork:
        return "Bytes per second received / sent on all non-loopback interfaces";
      case kGpus:
        return "GPUs of the host and their average utilization";
      case kCpuHistory:
        return "CPU % over the last 5 minutes (gaps: the agent did not answer)";
    }
  }
  return {};
}

QVariant AgentTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const AgentEntry& entry = entries_[static_cast<size_t>(index.row())];
  const int column = index.column();
  const auto* inventory = inventoryOf(entry);
  switch (role) {
    case Qt::DisplayRole:
      return display(entry, column);
    case Qt::ToolTipRole:
      return toolTip(entry, column);
    case kSortRole:
      return sortKey(entry, column);
    case kAgentStateRole:
      return static_cast<int>(entry.status.state);
    case Qt::DecorationRole:
      if (column == kState && journalError(entry)) return icons_.dot(kJournalErrorColor);
      if (column == kState) return icons_.dot(stateColor(entry.status.state));
      return {};
    case Qt::FontRole:
      if (column == kName) {
        QFont font;
        font.setBold(true);
        return font;
      }
      return {};
    case Qt::ForegroundRole:
      if (column == kState && journalError(entry)) return kJournalErrorColor;
      if (column == kState && entry.status.state != AgentState::kOnline) {
        return stateColor(entry.status.state).lighter(115);
      }
      if (column >= kSlots && column <= kGpus && isStale(entry)) return kStaleColor.lighter(140);
      if (column == kGpus && entry.gpu_fault) return faultColor(entry.gpu_fault->fault.severity);
      return {};
    case Qt::TextAlignmentRole:
      if (column == kGpus && entry.gpu_fault) return int(Qt::AlignLeft | Qt::AlignVCenter);
      if (column == kSlots || column == kGpus) return int(Qt::AlignRight | Qt::AlignVCenter);
      return int(Qt::AlignLeft | Qt::AlignVCenter);
    case kBarFractionRole:
      if (!hasHealth(entry) || isUnmeasured(entry, measuredName(column))) return {};
      if (column == kCpu) return inventory->health().cpu_percent() / 100.0;
      if (column == kMemory) return memoryFraction(inventory->health());
      return {};
    case kBarColorRole:
      if (column == kCpuHistory) return isStale(entry) ? kStaleColor : kCpuColor;
      if (!hasHealth(entry)) return {};
      if (isStale(entry)) return kStaleColor;
      if (column == kCpu) return kCpuColor;
      if (column == kMemory) {
        return levelColor(memoryFraction(inventory->health()), 0.9, 0.97, kMemoryColor);
      }
      return {};
    case kSparklineRole: {
      if (column != kCpuHistory || entry.history.points().empty()) return {};
      Sparkline line;
      line.span_s = kSparklineSpanS;
      line.end_time = std::max(entry.history.newestTime(), entry.status.time);
      line.points =
          entry.history.series(kSparklineSpanS, [](const HealthPoint& p) { return p.cpu_percent; });
      return QVariant::fromValue(line);
    }
  }
  return {};
}

QVariant AgentTableModel::display(const AgentEntry& entry, int column) const {
  const auto* inventory = inventoryOf(entry);
  const QString none = QString::fromUtf8("—");
  if (column != kCpuHistory && isUnmeasured(entry, measuredName(column))) return "unmeasured";
  switch (column) {
    case kName:
      return QString::fromStdString(entry.status.name);
    case kState:
      // Online, but its jobs' records wait in its memory where no client sees them: the one
      // thing the watcher must not read as healthy.
      if (journalError(entry)) return "online · journal error";
      return QString(client::agentStateName(entry.status.state));
    case kHost:
      return agentHost(entry.status);
    case kSlots:
      if (!inventory) return none;
      return QString("%1 / %2").arg(inventory->slots_free()).arg(inventory->slots());
    case kCpu:
      if (!hasHealth(entry)) return none;
      return formatPercent(inventory->health().cpu_percent());
    case kMemory:
      if (!hasHealth(entry)) return none;
      return QString("%1 / %2").arg(
          formatBytes(static_cast<double>(inventory->health().memory_used_bytes())),
          formatBytes(static_cast<double>(inventory->health().memory_total_bytes())));
    case kNetwork:
      if (!hasHealth(entry)) return none;
      return QString::fromUtf8("↓ %1   ↑ %2")
          .arg(formatRate(inventory->health().net_rx_bytes_per_s()),
               formatRate(inventory->health().net_tx_bytes_per_s()));
    case kGpus: {
      if (!inventory) return none;
      const int count = gpuCount(*inventory);
      if (count == 0) return tr("CPU only");
      if (inventory->health().gpus_size() == 0) return QString::number(count);
      // A faulty GPU is named here, where the person watching the cluster looks.
      if (entry.gpu_fault) return gpuFaultText(*entry.gpu_fault);
      return QString("%1  (%2)")
          .arg(count)
          .arg(formatPercent(averageGpuUtilization(inventory->health())));
    }
    case kCpuHistory:
      return {};
  }
  return {};
}

QVariant AgentTableModel::sortKey(const AgentEntry& entry, int column) const {
  const auto* inventory = inventoryOf(entry);
  const bool health = hasHealth(entry);
  switch (column) {
    case kName:
    case kHost:
      return display(entry, column);
    case kState:
      // Problems first when sorted ascending: what needs a person comes to the top.
      return entry.status.state == AgentState::kOnline ? 1 : 0;
    case kSlots:
      return inventory ? static_cast<int>(inventory->slots_free()) : -1;
    case kCpu:
    case kCpuHistory:
      return health ? inventory->health().cpu_percent() : -1.0;
    case kMemory:
      return health ? memoryFraction(inventory->health()) : -1.0;
    case kNetwork:
      return health ? inventory->health().net_rx_bytes_per_s() +
                          inventory->health().net_tx_bytes_per_s()
                    : -1.0;
    case kGpus:
      return inventory ? gpuCount(*inventory) * 1000.0 + averageGpuUtilization(inventory->health())
                       : -1.0;
  }
  return {};
}

QVariant AgentTableModel::toolTip(const AgentEntry& entry, int column) const {
  const auto& status = entry.status;
  const auto* inventory = inventoryOf(entry);
  switch (column) {
    case kName:
      return QString("%1\n%2").arg(QString::fromStdString(status.name),
                                   QString::fromStdString(status.endpoint));
    case kState: {
      if (journalError(entry)) {
        return QString(
                   "%1 answers, but cannot write its journal: %2\nIts jobs' records wait in its "
                   "memory, and no client sees them until it can (free its disk).")
            .arg(QString::fromStdString(status.name),
                 QString::fromStdString(inventory->journal_error()));
      }
      QString text = stateAdvice(status, client_public_key_);
      if (!status.reason.empty()) {
        text += (text.isEmpty() ? "" : "\n\n") + QString::fromStdString(status.reason);
      }
      return text.isEmpty() ? QVariant() : QVariant(text);
    }
    case kGpus: {
      if (!inventory || inventory->gpus_size() == 0) return {};
      QStringList lines;
      for (const auto& gpu : inventory->gpus()) {
        lines << QString("GPU %1: %2").arg(gpu.index()).arg(QString::fromStdString(gpu.name()));
      }
      if (hasHealth(entry)) {
        for (const auto& gpu : inventory->health().gpus()) {
          for (const hardware::GpuFault& fault : hardware::gpuFaults(gpu)) {
            lines << QString("GPU %1 %2: %3")
                         .arg(gpu.index())
                         .arg(hardware::severityName(fault.severity))
                         .arg(QString::fromStdString(fault.text));
          }
        }
      }
      return lines.join('\n');
    }
    default:
      if (isUnmeasured(entry, measuredName(column))) {
        return "The agent could not measure this on its host: " +
               QString::fromStdString(inventory->health().error());
      }
      if (column >= kSlots && isStale(entry) && inventory && inventory->health_time() > 0) {
        return QString("Last known values, %1 old: %2 is %3")
            .arg(formatUptime(status.time - inventory->health_time()),
                 QString::fromStdString(status.name), client::agentStateName(status.state));
      }
      return {};
  }
}

}  // namespace ringmaster::gui
