#pragma once
// Placement by agent: one row per agent (a combo of the cluster's agents, still free to type a
// name the cluster file does not list yet), its ranks, and what that agent has free now.

#include <QString>
#include <QWidget>
#include <vector>

#include "editor/job_draft.h"
#include "ringmaster/client/agent_status.h"

class QComboBox;
class QLabel;
class QTableWidget;

namespace ringmaster::gui {

class IntField;

class PlacementTable : public QWidget {
  Q_OBJECT
 public:
  explicit PlacementTable(QWidget* parent = nullptr);

  void setAgents(const std::vector<client::AgentStatus>& agents);
  void setEntries(const std::vector<PlacementDraft>& entries);  // does not emit edited()
  std::vector<PlacementDraft> entries() const;

  int rowCount() const;
  QComboBox* agentField(int row) const;
  IntField* ranksField(int row) const;
  QTableWidget* table() const { return table_; }

 Q_SIGNALS:
  void edited();

 private:
  void addRow(const PlacementDraft& entry);
  void refreshAvailability();
  void fitHeight();

  QTableWidget* table_;
  QLabel* total_;
  std::vector<client::AgentStatus> agents_;
  bool agents_known_ = false;
  bool filling_ = false;
};

}  // namespace ringmaster::gui
