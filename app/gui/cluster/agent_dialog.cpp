#include "cluster/agent_dialog.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "cluster/agent_state_style.h"
#include "ringmaster/security/keys.h"

namespace ringmaster::gui {
namespace {

QFont monospace() {
  QFont font("monospace");
  font.setStyleHint(QFont::Monospace);
  return font;
}

}  // namespace

AgentDialog::AgentDialog(std::vector<client::AgentEndpoint> agents, const QString& editing,
                         QWidget* parent)
    : QDialog(parent), agents_(std::move(agents)), editing_(editing) {
  setWindowTitle(editing.isEmpty() ? "Add agent" : QString("Edit agent %1").arg(editing));
  setMinimumWidth(620);
  auto* layout = new QVBoxLayout(this);
  auto* intro = new QLabel(
      QString("An agent is a ringmaster-agent process on a GPU host. Its server key is what "
              "<code>ringmaster-agent pubkey --state-dir %1</code> prints on that host.")
          .arg(kDefaultAgentStateDir));
  intro->setWordWrap(true);
  intro->setMinimumWidth(560);
  layout->addWidget(intro);

  auto* form = new QFormLayout;
  form->setFieldGrowthPolicy(QFormLayout::ExpandingFieldsGrow);
  name_ = new QLineEdit;
  name_->setPlaceholderText("gpu01");
  endpoint_ = new QLineEdit;
  endpoint_->setPlaceholderText("tcp://gpu01:7070");
  key_ = new QLineEdit;
  key_->setFont(monospace());
  key_->setPlaceholderText("40 characters of Z85");
  name_message_ = messageLabel();
  endpoint_message_ = messageLabel();
  key_message_ = messageLabel();
  fingerprint_ = new QLabel;
  fingerprint_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  fingerprint_->setWordWrap(true);
  fingerprint_->setMinimumWidth(440);

  form->addRow("&Name:", name_);
  form->addRow("", name_message_);
  form->addRow("&Endpoint:", endpoint_);
  form->addRow("", endpoint_message_);
  form->addRow("Server &key:", key_);
  form->addRow("", key_message_);
  form->addRow("Fingerprint:", fingerprint_);
  layout->addLayout(form);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  buttons->button(QDialogButtonBox::Ok)->setText(editing.isEmpty() ? "Add" : "Save");
  connect(buttons, &QDialogButtonBox::accepted, this, &AgentDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &AgentDialog::reject);
  layout->addWidget(buttons);

  for (const auto& agent : agents_) {
    if (QString::fromStdString(agent.name) == editing) {
      name_->setText(QString::fromStdString(agent.name));
      endpoint_->setText(QString::fromStdString(agent.endpoint));
      key_->setText(QString::fromStdString(agent.server_key));
    }
  }
  QLineEdit* edits[] = {name_, endpoint_, key_};
  for (int i = 0; i < 3; ++i) {
    connect(edits[i], &QLineEdit::textChanged, this, [this, i] {
      touched_[i] = true;
      refresh();
    });
  }
  refresh();
}

QLabel* AgentDialog::messageLabel() {
  auto* label = new QLabel;
  label->setWordWrap(true);
  label->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QPalette palette = label->palette();
  palette.setColor(QPalette::WindowText, QColor(0xff, 0x8a, 0x80));
  label->setPalette(palette);
  label->setVisible(false);
  // A word-wrapped label asks for little width; without a floor the form squeezes it into a
  // narrow column of many lines.
  label->setMinimumWidth(440);
  return label;
}

client::AgentEndpoint AgentDialog::agent() const {
  return {name_->text().trimmed().toStdString(), endpoint_->text().trimmed().toStdString(),
          key_->text().trimmed().toStdString()};
}

client::AgentEntryProblems AgentDialog::problems() const {
  std::vector<std::string> others;
  for (const auto& agent : agents_) {
    if (QString::fromStdString(agent.name) != editing_) others.push_back(agent.name);
  }
  return client::checkAgentEntry(agent(), others);
}

void AgentDialog::refresh() {
  const client::AgentEntryProblems found = problems();
  const QLineEdit* edits[] = {name_, endpoint_, key_};
  QLabel* labels[] = {name_message_, endpoint_message_, key_message_};
  const std::string* messages[] = {&found.name, &found.endpoint, &found.server_key};
  const char* fields[] = {"Name", "Endpoint", "Server key"};
  for (int i = 0; i < 3; ++i) {
    // A field nobody has typed in yet is not an error; it becomes one when the user tries to save.
    const bool shown = !messages[i]->empty() &&
                       (show_all_ || (touched_[i] && !edits[i]->text().trimmed().isEmpty()));
    labels[i]->setText(shown ? QString("%1 %2").arg(fields[i], QString::fromStdString(*messages[i]))
                             : QString());
    labels[i]->setVisible(shown);
  }
  const std::string fingerprint = security::keyFingerprint(agent().server_key);
  fingerprint_->setText(
      fingerprint.empty()
          ? QString("appears once the key is valid")
          : QString("<code><b>%1</b></code>&nbsp;&nbsp;(a short digest of the key, to compare "
                    "by eye with the agent's and catch a wrong paste)")
                .arg(QString::fromStdString(fingerprint)));
}

void AgentDialog::accept() {
  if (!problems().ok()) {
    show_all_ = true;
    refresh();
    QLineEdit* edits[] = {name_, endpoint_, key_};
    QLabel* labels[] = {name_message_, endpoint_message_, key_message_};
    for (int i = 0; i < 3; ++i) {
      if (labels[i]->isVisible()) {
        edits[i]->setFocus();
        break;
      }
    }
    return;
  }
  QDialog::accept();
}

QString AgentDialog::fieldMessage(Field field) const {
  switch (field) {
    case Field::kName:
      return name_message_->text();
    case Field::kEndpoint:
      return endpoint_message_->text();
    case Field::kServerKey:
      return key_message_->text();
  }
  return {};
}

QString AgentDialog::fingerprintText() const { return fingerprint_->text(); }

}  // namespace ringmaster::gui
