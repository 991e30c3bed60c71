#pragma once
// "Authorize this app on an agent": this client's public key and the exact command that adds it
// to an agent's authorized_keys, each with a Copy button.

#include <QDialog>

class QLineEdit;
class QPushButton;

namespace ringmaster::gui {

class AuthorizeDialog : public QDialog {
  Q_OBJECT

 public:
  explicit AuthorizeDialog(const QString& client_public_key, QWidget* parent = nullptr);

  QString keyText() const;
  QString commandText() const;
  QPushButton* copyKeyButton() const { return copy_key_; }
  QPushButton* copyCommandButton() const { return copy_command_; }

 private:
  void copy(QPushButton* button, const QString& text);

  QLineEdit* key_;
  QLineEdit* command_;
  QPushButton* copy_key_;
  QPushButton* copy_command_;
};

}  // namespace ringmaster::gui
