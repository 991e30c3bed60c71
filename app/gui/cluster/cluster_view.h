#pragma once
// The cluster tab: every agent of the cluster file with its state and live health, the selected
// agent in detail, and the actions that change the file (add, edit, remove an agent) or this
// app's standing with agents (authorize). Without a cluster file it offers to start the embedded
// local agent.
//
// The view reads and writes the cluster file itself (small, local, atomic writes) and watches it
// for changes made elsewhere; it never touches the network: statuses come in via updateAgent.
// Not thread-safe: GUI thread only.

#include <QString>
#include <QWidget>

// The generated protobuf code has Inventory::slots(), which Qt's `slots` keyword macro would
// eat: hide the macro while core's headers are parsed, whatever was included before.
#pragma push_macro("slots")
#undef slots
#include "ringmaster/client/agent_connection.h"
#include "ringmaster/client/agent_status.h"
#include "ringmaster/util/result.h"
#pragma pop_macro("slots")

class QFileSystemWatcher;
class QFrame;
class QLabel;
class QPushButton;
class QSortFilterProxyModel;
class QSplitter;
class QTableView;
class QTimer;

namespace ringmaster::gui {

class AgentDetailPanel;
class AgentTableModel;
class InstallAgentDialog;

class ClusterView : public QWidget {
  Q_OBJECT

 public:
  ClusterView(const QString& cluster_file, const QString& client_public_key,
              QWidget* parent = nullptr);

  // (Re)loads the agent list from the file; a missing file is an empty list.
  void setClusterFile(const QString& path);
  // A status from the session (GUI thread; about 1 Hz per agent).
  void updateAgent(const client::AgentStatus& status);
  // No cluster file yet: offer the embedded local agent in a banner.
  void setLocalAgentOffer(bool shown);

  // What the Add / Edit / Remove buttons do once their dialog is answered: rewrite the file,
  // reload, emit clusterFileChanged. An error (also shown to the user by the buttons) names the
  // field that is wrong.
  Status addAgent(const client::AgentEndpoint& agent);
  Status editAgent(const QString& old_name, const client::AgentEndpoint& agent);
  Status removeAgent(const QString& name);

  // "Install agent on host…": the installer's dialog, opened (deleted when closed).
  InstallAgentDialog* openInstallDialog();

  void selectAgent(const QString& name);
  QString selectedAgent() const;
  const QString& clusterFile() const { return cluster_file_; }
  // Why the file could not be read ("" when it was, or when it does not exist yet).
  QString fileProblem() const;
  QString summary() const;

  AgentTableModel* model() const { return model_; }
  QTableView* table() const { return table_; }
  AgentDetailPanel* detailPanel() const { return detail_; }

 Q_SIGNALS:
  void clusterFileChanged(const QString& path);  // add/edit/remove rewrote it
  void startLocalAgentRequested();
  void agentSelected(const QString& name);
  void openJobRequested(const QString& job_id);  // from a rank in the agent's detail
  void checkClusterRequested();                  // "Check cluster": a preflight of every agent

 private:
  void reload();
  // After the file was written by someone else (an editor, ringmasterctl, the installer):
  // reloads it and emits clusterFileChanged when its agents changed, so the session follows.
  void reloadChangedElsewhere();
  void watchFile();
  void updateSummary();
  void showSelected();
  void onInstallClicked();
  void onAddClicked();
  void onEditClicked();
  void onRemoveClicked();
  void onAuthorizeClicked();
  void afterWrite(const Status& status);
  void fitTableHeight();
  void fitNameColumns();
  void resizeEvent(QResizeEvent* event) override;

  QString cluster_file_;
  QString client_public_key_;
  AgentTableModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  AgentDetailPanel* detail_;
  QFrame* offer_banner_;
  QLabel* offer_text_;
  QPushButton* offer_button_;
  QLabel* file_message_;
  QLabel* summary_;
  QPushButton* edit_button_;
  QPushButton* remove_button_;
  QSplitter* splitter_;
  bool splitter_moved_ = false;
  QFileSystemWatcher* watcher_;
  QTimer* reload_timer_;
  bool file_missing_ = false;
  QString file_problem_;
};

}  // namespace ringmaster::gui
