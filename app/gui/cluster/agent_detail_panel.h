#pragma once
// The selected agent in full: what is wrong and what to do (when it is not online), its
// inventory, host health and every GPU's utilization, memory, temperature and power, each as a
// bar (now) over a sparkline (the last minutes).

#include <QString>
#include <QWidget>
#include <vector>

class QFormLayout;
class QGridLayout;
class QLabel;
class QPushButton;

namespace ringmaster::gui {

struct AgentEntry;
class MetricCell;

class AgentDetailPanel : public QWidget {
  Q_OBJECT

 public:
  explicit AgentDetailPanel(QString client_public_key, QWidget* parent = nullptr);

  // Shows `entry` (nullptr: none selected). Called again on each update of that agent.
  void showAgent(const AgentEntry* entry);
  // What the panel says while no agent is shown.
  void setPlaceholderText(const QString& text);

  // What the panel shows, for tests.
  QString headline() const;
  QString advice() const;
  QPushButton* updateKeyButton() const { return update_key_; }
  int gpuRowCount() const { return static_cast<int>(gpu_rows_.size()); }
  QString gpuText(int gpu, int metric) const;  // metric: 0 util, 1 memory, 2 temp, 3 power

 Q_SIGNALS:
  // The shown agent answers with another key than the pinned one: the user asked to update it.
  void updateKeyRequested();

 private:
  struct GpuRow {
    QLabel* title;
    MetricCell* cells[4];
  };
  void setGpuRowCount(int count);
  void showInventory(const AgentEntry& entry);
  void showHealth(const AgentEntry& entry);
  void showGpus(const AgentEntry& entry);

  QString client_public_key_;
  QLabel* placeholder_;
  QWidget* body_;
  QLabel* state_dot_;
  QLabel* title_;
  QLabel* advice_;
  QPushButton* update_key_;
  QLabel* reason_;
  QFormLayout* inventory_form_;
  QLabel* host_;
  QLabel* endpoint_;
  QLabel* cpus_;
  QLabel* memory_;
  QLabel* slots_;
  QLabel* version_;
  QLabel* started_;
  QLabel* jobs_;
  QLabel* fingerprint_;
  MetricCell* cpu_cell_;
  MetricCell* memory_cell_;
  MetricCell* network_cell_;
  QLabel* load_;
  QWidget* health_box_;
  QWidget* gpu_box_;
  QLabel* gpu_heading_;
  std::vector<QWidget*> gpu_headers_;
  QGridLayout* gpu_grid_;
  std::vector<GpuRow> gpu_rows_;
};

}  // namespace ringmaster::gui
