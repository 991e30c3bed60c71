#include "cluster/authorize_dialog.h"

#include <QClipboard>
#include <QDialogButtonBox>
#include <QGridLayout>
#include <QGuiApplication>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTimer>
#include <QVBoxLayout>

#include "cluster/agent_state_style.h"
#include "ringmaster/security/keys.h"

namespace ringmaster::gui {
namespace {

QLineEdit* readOnlyField(const QString& text) {
  auto* edit = new QLineEdit(text);
  edit->setReadOnly(true);
  QFont font("monospace");
  font.setStyleHint(QFont::Monospace);
  edit->setFont(font);
  edit->setCursorPosition(0);
  // Wide enough for the whole command line without scrolling.
  edit->setMinimumWidth(edit->fontMetrics().horizontalAdvance(text) + 24);
  return edit;
}

}  // namespace

AuthorizeDialog::AuthorizeDialog(const QString& client_public_key, QWidget* parent)
    : QDialog(parent) {
  setWindowTitle("Authorize this app on an agent");
  auto* layout = new QVBoxLayout(this);
  auto* intro = new QLabel(
      "An agent answers only the clients whose public key is in its authorized_keys. Run the "
      "command below on each GPU host, as the user that runs ringmaster-agent (with sudo when its "
      "state directory is under /var/lib). The agent picks the key up at once; no restart.");
  intro->setWordWrap(true);
  layout->addWidget(intro);

  auto* grid = new QGridLayout;
  grid->addWidget(new QLabel("<b>This app's public key</b>"), 0, 0, 1, 2);
  key_ = readOnlyField(client_public_key);
  copy_key_ = new QPushButton("Copy key");
  grid->addWidget(key_, 1, 0);
  grid->addWidget(copy_key_, 1, 1);
  const QString fingerprint =
      QString::fromStdString(security::keyFingerprint(client_public_key.toStdString()));
  auto* fingerprint_label = new QLabel(QString("Fingerprint <code>%1</code>").arg(fingerprint));
  fingerprint_label->setTextInteractionFlags(Qt::TextSelectableByMouse);
  grid->addWidget(fingerprint_label, 2, 0, 1, 2);

  grid->addWidget(new QLabel("<b>On the agent's host, run</b>"), 3, 0, 1, 2);
  command_ = readOnlyField(authorizeCommand(client_public_key));
  copy_command_ = new QPushButton("Copy command");
  grid->addWidget(command_, 4, 0);
  grid->addWidget(copy_command_, 4, 1);
  auto* note = new QLabel(
      QString("If the agent keeps its state elsewhere, change <code>%1</code> to its "
              "<code>--state-dir</code>. The key is quoted because Z85 keys hold characters "
              "the shell would expand.")
          .arg(kDefaultAgentStateDir));
  note->setWordWrap(true);
  note->setForegroundRole(QPalette::PlaceholderText);
  grid->addWidget(note, 5, 0, 1, 2);
  grid->setColumnStretch(0, 1);
  layout->addLayout(grid);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);

  connect(copy_key_, &QPushButton::clicked, this, [this] { copy(copy_key_, keyText()); });
  connect(copy_command_, &QPushButton::clicked, this,
          [this] { copy(copy_command_, commandText()); });
}

QString AuthorizeDialog::keyText() const { return key_->text(); }

QString AuthorizeDialog::commandText() const { return command_->text(); }

void AuthorizeDialog::copy(QPushButton* button, const QString& text) {
  QGuiApplication::clipboard()->setText(text);
  const QString label = button->text();
  if (label.startsWith("Copied")) return;
  // Confirms the click without a popup; the label comes back after two seconds.
  button->setText(QString::fromUtf8("Copied ✓"));
  QTimer::singleShot(2000, button, [button, label] { button->setText(label); });
}

}  // namespace ringmaster::gui
