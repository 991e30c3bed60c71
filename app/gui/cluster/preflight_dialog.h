#pragma once
// The Cluster view's "Check cluster" (client::runPreflight): what the preflight is doing while it
// runs, then each agent's checks, the links between every pair as a heat map (each cell's colour
// its bandwidth against the median pair's; past client::kAllPairsUpTo agents, whose links are
// sampled, the measured links listed slowest first) and the verdict, every problem on its own line.
// The checks kept in the history are a click away ("Earlier checks"): last night's matrix next to
// this morning's. Not modal: the cluster view stays usable while the link tests run.

#include <QDialog>
#include <vector>

// The generated protobuf code has Inventory::slots(), which Qt's `slots` keyword macro would
// eat: hide the macro while core's headers are parsed.
#pragma push_macro("slots")
#undef slots
#include "ringmaster/client/preflight.h"
#pragma pop_macro("slots")

class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QTableWidget;

namespace ringmaster::gui {

class PreflightDialog : public QDialog {
  Q_OBJECT
 public:
  explicit PreflightDialog(QWidget* parent = nullptr);

  void setProgress(const QString& what);                  // running: what it does now
  void setReport(const client::PreflightReport& report);  // the check just run
  void setError(const QString& message);
  // The checks kept in the history (store::Reader::preflights), newest first: listed under
  // "Earlier checks", where choosing one shows it.
  void setKeptReports(std::vector<client::PreflightReport> reports);

  // What is shown, for tests and screenshots.
  QTableWidget* agentTable() const { return agents_; }
  QTableWidget* linkMatrix() const { return links_; }
  QString verdictText() const;
  QString statusText() const;
  QComboBox* keptChecks() const { return kept_; }

 Q_SIGNALS:
  void runAgainRequested();

 private:
  void showReport(const client::PreflightReport& report);
  void showAgents(const client::PreflightReport& report);
  void showLinks(const client::PreflightReport& report);
  void showLinkList(const client::PreflightReport& report, int agents);

  QLabel* status_;
  QProgressBar* busy_;
  QTableWidget* agents_;
  QLabel* links_title_;
  QTableWidget* links_;
  QLabel* verdict_;
  QPushButton* again_;
  QLabel* kept_label_;
  QComboBox* kept_;
  std::vector<client::PreflightReport> kept_reports_;
  int64_t shown_id_ = 0;  // the kept check shown; 0: none (running, or not stored)
};

}  // namespace ringmaster::gui
