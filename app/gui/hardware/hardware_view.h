#pragma once
// The Hardware screen: every host and GPU over the history's runs (hardware::HardwareReport) —
// runs, failures, who failed first, hangs, GPU faults — and, on top, the ones that stand out,
// each named in a sentence with a way to its newest failed run and to restarting that run
// without its host. The view only shows what it is given: the caller reads the report off the
// GUI thread (SessionBridge::hardwareReport) and calls setReport.

#include <QWidget>
#include <vector>

// The generated protobuf code has Inventory::slots(), which Qt's `slots` keyword macro would
// eat: hide the macro while core's headers are parsed.
#pragma push_macro("slots")
#undef slots
#include "ringmaster/hardware/hardware_report.h"
#pragma pop_macro("slots")

class QComboBox;
class QLabel;
class QPushButton;
class QTreeWidget;
class QVBoxLayout;

namespace ringmaster::gui {

class HardwareView : public QWidget {
  Q_OBJECT
 public:
  explicit HardwareView(QWidget* parent = nullptr);

  void setReport(const hardware::HardwareReport& report);
  void setError(const QString& message);  // the history could not be read
  // Unix seconds of the chosen window's start (0: every run).
  double since() const;

  // What is shown, for tests.
  QTreeWidget* table() const { return table_; }
  QStringList outlierTexts() const;
  QString summaryText() const;

 Q_SIGNALS:
  void refreshRequested(double since);
  void openRun(const QString& job_id);
  // Restart `job_id` (a failed run) from its checkpoint on every host but `agent`.
  void restartWithout(const QString& job_id, const QString& agent);

 private:
  void showOutliers(const hardware::HardwareReport& report);
  void showTable(const hardware::HardwareReport& report);

  QComboBox* window_;
  QPushButton* refresh_;
  QLabel* summary_;
  QWidget* outliers_;
  QVBoxLayout* outlier_list_;
  QTreeWidget* table_;
};

}  // namespace ringmaster::gui
