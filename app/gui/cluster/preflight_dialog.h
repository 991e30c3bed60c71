#pragma once
// The Cluster view's "Check cluster" (client::runPreflight): what the preflight is doing while it
// runs, then each agent's checks, the links between every pair as a heat map (each cell's colour
// its bandwidth against the median pair's) and the verdict, every problem on its own line. Not
// modal: the cluster view stays usable while the link tests run.

#include <QDialog>

// The generated protobuf code has Inventory::slots(), which Qt's `slots` keyword macro would
// eat: hide the macro while core's headers are parsed.
#pragma push_macro("slots")
#undef slots
#include "ringmaster/client/preflight.h"
#pragma pop_macro("slots")

class QLabel;
class QProgressBar;
class QPushButton;
class QTableWidget;

namespace ringmaster::gui {

class PreflightDialog : public QDialog {
  Q_OBJECT
 public:
  explicit PreflightDialog(QWidget* parent = nullptr);

  void setProgress(const QString& what);  // running: what it does now
  void setReport(const client::PreflightReport& report);
  void setError(const QString& message);

  // What is shown, for tests and screenshots.
  QTableWidget* agentTable() const { return agents_; }
  QTableWidget* linkMatrix() const { return links_; }
  QString verdictText() const;
  QString statusText() const;

 Q_SIGNALS:
  void runAgainRequested();

 private:
  void showAgents(const client::PreflightReport& report);
  void showLinks(const client::PreflightReport& report);

  QLabel* status_;
  QProgressBar* busy_;
  QTableWidget* agents_;
  QLabel* links_title_;
  QTableWidget* links_;
  QLabel* verdict_;
  QPushButton* again_;
};

}  // namespace ringmaster::gui
