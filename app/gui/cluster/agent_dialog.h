#pragma once
// Add or edit one agent of the cluster file: name, endpoint and server key, each checked as the
// user types with the rules the cluster file is read with, and the key's short fingerprint shown
// live so it can be compared with the agent's own. accept() refuses to close while a field is
// wrong and says which and why under that field.

#include <QDialog>
#include <vector>

// The generated protobuf code has Inventory::slots(), which Qt's `slots` keyword macro would
// eat: hide the macro while core's headers are parsed, whatever was included before.
#pragma push_macro("slots")
#undef slots
#include "ringmaster/client/agent_connection.h"
#include "ringmaster/client/cluster_config.h"
#pragma pop_macro("slots")

class QDialogButtonBox;
class QLabel;
class QLineEdit;

namespace ringmaster::gui {

class AgentDialog : public QDialog {
  Q_OBJECT

 public:
  enum class Field { kName, kEndpoint, kServerKey };

  // `agents`: the file's agents now. `editing`: the name of the agent being edited (its fields
  // are filled in), or empty to add one.
  AgentDialog(std::vector<client::AgentEndpoint> agents, const QString& editing,
              QWidget* parent = nullptr);

  // The fields as typed, surrounding spaces removed.
  client::AgentEndpoint agent() const;
  client::AgentEntryProblems problems() const;

  QLineEdit* nameEdit() const { return name_; }
  QLineEdit* endpointEdit() const { return endpoint_; }
  QLineEdit* keyEdit() const { return key_; }
  // The message under `field` now (empty when none is shown).
  QString fieldMessage(Field field) const;
  QString fingerprintText() const;

 public Q_SLOTS:
  void accept() override;

 private:
  void refresh();
  QLabel* messageLabel();

  std::vector<client::AgentEndpoint> agents_;
  QString editing_;
  QLineEdit* name_;
  QLineEdit* endpoint_;
  QLineEdit* key_;
  QLabel* name_message_;
  QLabel* endpoint_message_;
  QLabel* key_message_;
  QLabel* fingerprint_;
  bool show_all_ = false;  // after a refused accept(), empty fields are reported too
  bool touched_[3] = {false, false, false};
};

}  // namespace ringmaster::gui
