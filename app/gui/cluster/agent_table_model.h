#pragma once
// The agents of the cluster file as a table: one row per agent, in file order, with its state and
// latest health, plus the recent history that sparklines draw. Fed by setAgents (the file) and
// updateAgent (statuses from the session, about one a second per agent).
// Not thread-safe: the GUI thread owns it.

#include <QAbstractTableModel>
#include <QString>
#include <optional>
#include <string>
#include <vector>

#include "cluster/agent_history.h"
#include "color_icons.h"
// The generated protobuf code has Inventory::slots(), which Qt's `slots` keyword macro would
// eat: hide the macro while core's headers are parsed, whatever was included before.
#pragma push_macro("slots")
#undef slots
#include "ringmaster/client/agent_connection.h"
#include "ringmaster/client/agent_status.h"
#include "ringmaster/hardware/gpu_faults.h"
#pragma pop_macro("slots")

namespace ringmaster::gui {

// The GPU fault the table names for an agent: its most serious warning or critical one (the
// first GPU's of the worst), and how many such faults its GPUs have in all.
struct NamedGpuFault {
  uint32_t gpu = 0;
  hardware::GpuFault fault;
  int count = 0;
};

struct AgentEntry {
  client::AgentStatus status;  // name, endpoint and key from the file until a status arrives
  AgentHistory history;
  // Worked out once per status (the table asks for it at every paint of the row).
  std::optional<NamedGpuFault> gpu_fault;
};

class AgentTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    kName,
    kState,
    kHost,
    kSlots,
    kCpu,
    kMemory,
    kNetwork,
    kGpus,
    kCpuHistory,
    kColumnCount
  };
  enum Role {
    kBarFractionRole = Qt::UserRole + 1,  // double 0..1: the delegate draws a bar
    kBarColorRole,                        // QColor of that bar
    kSparklineRole,                       // Sparkline: the delegate draws it
    kSortRole,                            // number or string to sort by
    kAgentStateRole,                      // int(client::AgentState)
  };
  // What the table's sparkline column and the detail panel show.
  static constexpr double kSparklineSpanS = 300;

  explicit AgentTableModel(QString client_public_key, QObject* parent = nullptr);

  // The agents of the cluster file, in its order. An agent still listed with the same endpoint
  // and key keeps its state and history; others start as connecting.
  void setAgents(const std::vector<client::AgentEndpoint>& agents);
  // A status from the session. Statuses of agents that are not in the file are dropped: they
  // come from before an edit reached the session, and must not bring a removed agent back.
  // Returns the row updated, or -1.
  int updateAgent(const client::AgentStatus& status);

  int rowOf(const std::string& name) const;
  // REQUIRES: 0 <= row < rowCount()
  const AgentEntry& entry(int row) const { return entries_[static_cast<size_t>(row)]; }
  std::vector<client::AgentEndpoint> endpoints() const;
  const QString& clientPublicKey() const { return client_public_key_; }

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  int columnCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  QVariant display(const AgentEntry& entry, int column) const;
  QVariant sortKey(const AgentEntry& entry, int column) const;
  QVariant toolTip(const AgentEntry& entry, int column) const;

  QString client_public_key_;
  std::vector<AgentEntry> entries_;
  ColorIcons icons_;  // the state dots
};

}  // namespace ringmaster::gui
