#pragma once
// The selected agent in full: what is wrong and what to do (when it is not online), when it last
// answered, its inventory, the ranks running on it (each a way to its job's dashboard), host
// health and every GPU's utilization, memory, temperature and power, each as a bar (now) over a
// sparkline (the last minutes).

#include <QString>
#include <QWidget>
#include <vector>

class QFormLayout;
class QGridLayout;
class QGroupBox;
class QLabel;
class QPushButton;
class QTreeWidget;

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
  // The faults under GPU `gpu` as shown, one per line ("" when it has none).
  QString gpuFaultsText(int gpu) const;
  QString lastAnswerText() const;
  QTreeWidget* rankList() const { return ranks_; }

 Q_SIGNALS:
  // The shown agent answers with another key than the pinned one: the user asked to update it.
  void updateKeyRequested();
  // The user double-clicked (or pressed Enter on) a rank running on the agent.
  void openJobRequested(const QString& job_id);

 private:
  struct GpuRow {
    QLabel* title;
    MetricCell* cells[4];
    QLabel* faults;  // under the row, across it: the GPU's faults in words; hidden when none
  };
  void setGpuRowCount(int count);
  void showInventory(const AgentEntry& entry);
  void showHealth(const AgentEntry& entry);
  void showGpus(const AgentEntry& entry);
  void showRanks(const AgentEntry& entry);
  void updateLastAnswer();  // also each second: the age goes on while nothing arrives

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
  QLabel* last_answer_;
  double answered_at_ = 0;  // of the agent shown; 0 when none came
  bool online_ = false;
  QGroupBox* ranks_box_;
  QTreeWidget* ranks_;
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
