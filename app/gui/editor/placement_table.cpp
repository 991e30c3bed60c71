#include "editor/placement_table.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTableWidget>
#include <QToolButton>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <algorithm>

#include "editor/agent_summary.h"
#include "editor/form_fields.h"

namespace ringmaster::gui {
namespace {

enum Column { kAgent = 0, kRanks, kAvailable, kRemove, kColumns };
constexpr int kMaxRanksPerAgent = 4096;

// An agent name: one of the cluster's, or typed. Ignores the wheel unless focused, like the
// other fields, so scrolling the form does not change the placement.
class AgentCombo : public QComboBox {
 public:
  explicit AgentCombo(QWidget* parent) : QComboBox(parent) {
    setEditable(true);
    setInsertPolicy(QComboBox::NoInsert);
    setFocusPolicy(Qt::StrongFocus);
    lineEdit()->setPlaceholderText(QObject::tr("agent name"));
  }

 protected:
  void wheelEvent(QWheelEvent* event) override {
    if (hasFocus()) {
      QComboBox::wheelEvent(event);
    } else {
      event->ignore();
    }
  }
};

}  // namespace

PlacementTable::PlacementTable(QWidget* parent)
    : QWidget(parent), table_(new QTableWidget(0, kColumns, this)), total_(new QLabel(this)) {
  table_->setHorizontalHeaderLabels({tr("Agent"), tr("Ranks"), tr("Available now"), QString()});
  QHeaderView* header = table_->horizontalHeader();
  header->setSectionResizeMode(kAgent, QHeaderView::Interactive);
  header->setSectionResizeMode(kRanks, QHeaderView::ResizeToContents);
  header->setSectionResizeMode(kAvailable, QHeaderView::Stretch);
  header->setSectionResizeMode(kRemove, QHeaderView::ResizeToContents);
  table_->setColumnWidth(kAgent, 160);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(
      std::max(table_->verticalHeader()->defaultSectionSize(), 32));
  table_->setSelectionMode(QAbstractItemView::NoSelection);
  table_->setFocusPolicy(Qt::NoFocus);

  auto* add = new QPushButton(tr("Add agent"), this);
  add->setObjectName(QStringLiteral("placement.add"));
  add->setToolTip(tr("Another agent for this job"));
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(add);
  buttons->addStretch();
  buttons->addWidget(total_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(table_);
  layout->addLayout(buttons);

  connect(add, &QPushButton::clicked, this, [this] {
    // Suggest the first cluster agent not used yet.
    PlacementDraft entry;
    const auto used = entries();
    for (const auto& agent : agents_) {
      const bool taken = std::any_of(
          used.begin(), used.end(), [&](const PlacementDraft& p) { return p.agent == agent.name; });
      if (!taken) {
        entry.agent = agent.name;
        break;
      }
    }
    addRow(entry);
    refreshAvailability();
    Q_EMIT edited();
  });
  refreshAvailability();
}

void PlacementTable::addRow(const PlacementDraft& entry) {
  const bool was_filling = filling_;
  filling_ = true;
  const int row = table_->rowCount();
  table_->insertRow(row);
  auto* agent = new AgentCombo(table_);
  for (const auto& a : agents_) agent->addItem(QString::fromStdString(a.name));
  agent->setCurrentText(QString::fromStdString(entry.agent));
  auto* ranks = new IntField(1, kMaxRanksPerAgent, table_);
  ranks->setYamlText(QString::fromStdString(entry.ranks));
  auto* remove = new QToolButton(table_);
  remove->setText(QStringLiteral("✕"));
  remove->setToolTip(tr("Remove this agent from the placement"));
  remove->setAutoRaise(true);
  table_->setCellWidget(row, kAgent, agent);
  table_->setCellWidget(row, kRanks, ranks);
  auto* available = new QTableWidgetItem;
  available->setFlags(Qt::ItemIsEnabled);
  table_->setItem(row, kAvailable, available);
  table_->setCellWidget(row, kRemove, remove);

  connect(agent, &QComboBox::currentTextChanged, this, [this] {
    if (filling_) return;
    refreshAvailability();
    Q_EMIT edited();
  });
  connect(ranks, &IntField::edited, this, [this] {
    if (filling_) return;
    refreshAvailability();
    Q_EMIT edited();
  });
  connect(remove, &QToolButton::clicked, this, [this, remove] {
    for (int r = 0; r < table_->rowCount(); ++r) {
      if (table_->cellWidget(r, kRemove) == remove) {
        table_->removeRow(r);
        break;
      }
    }
    refreshAvailability();
    Q_EMIT edited();
  });
  filling_ = was_filling;
  fitHeight();
}

void PlacementTable::setAgents(const std::vector<client::AgentStatus>& agents) {
  agents_ = agents;
  agents_known_ = true;
  filling_ = true;
  for (int row = 0; row < rowCount(); ++row) {
    QComboBox* combo = agentField(row);
    const QString current = combo->currentText();
    combo->clear();
    for (const auto& a : agents_) combo->addItem(QString::fromStdString(a.name));
    combo->setCurrentText(current);
  }
  filling_ = false;
  refreshAvailability();
}

void PlacementTable::setEntries(const std::vector<PlacementDraft>& entries) {
  filling_ = true;
  // Update rows in place where possible, so that a field being typed in keeps its cursor.
  while (rowCount() > static_cast<int>(entries.size())) table_->removeRow(rowCount() - 1);
  for (size_t i = 0; i < entries.size(); ++i) {
    if (static_cast<int>(i) >= rowCount()) {
      addRow(entries[i]);
      continue;
    }
    const QString agent = QString::fromStdString(entries[i].agent);
    if (agentField(i)->currentText() != agent) agentField(i)->setCurrentText(agent);
    const QString ranks = QString::fromStdString(entries[i].ranks);
    if (ranksField(i)->yamlText() != ranks) ranksField(i)->setYamlText(ranks);
  }
  filling_ = false;
  refreshAvailability();
}

std::vector<PlacementDraft> PlacementTable::entries() const {
  std::vector<PlacementDraft> out;
  for (int row = 0; row < rowCount(); ++row) {
    out.push_back(
        {agentField(row)->currentText().toStdString(), ranksField(row)->yamlText().toStdString()});
  }
  return out;
}

int PlacementTable::rowCount() const { return table_->rowCount(); }

QComboBox* PlacementTable::agentField(int row) const {
  return static_cast<QComboBox*>(table_->cellWidget(row, kAgent));
}

IntField* PlacementTable::ranksField(int row) const {
  return static_cast<IntField*>(table_->cellWidget(row, kRanks));
}

void PlacementTable::refreshAvailability() {
  int total_ranks = 0;
  for (int row = 0; row < rowCount(); ++row) {
    // Names the validator will use for this row's problems.
    agentField(row)->setObjectName(QStringLiteral("placement[%1].agent").arg(row));
    ranksField(row)->setObjectName(QStringLiteral("placement[%1].ranks").arg(row));
    const QString name = agentField(row)->currentText();
    const int ranks = ranksField(row)->isRaw() ? 0 : ranksField(row)->value();
    total_ranks += ranks;
    QTableWidgetItem* item = table_->item(row, kAvailable);
    const auto agent = std::find_if(agents_.begin(), agents_.end(), [&](const auto& a) {
      return QString::fromStdString(a.name) == name;
    });
    QString text;
    QColor color = palette().color(QPalette::Text);
    const QColor warn(0xff, 0xb3, 0x40);
    if (!agents_known_) {
      text = tr("(cluster not loaded)");
      color = palette().color(QPalette::Disabled, QPalette::Text);
    } else if (agent == agents_.end()) {
      text = name.isEmpty() ? QString() : tr("not in the cluster file");
      color = warn;
    } else {
      text = agentSummary(*agent);
      if (agent->state != client::AgentState::kOnline) {
        color = warn;
      } else if (agent->inventory && ranks > static_cast<int>(agent->inventory->slots_free())) {
        text += tr(" — %1 ranks need more than the free slots").arg(ranks);
        color = warn;
      }
    }
    item->setText(text);
    item->setToolTip(text);
    item->setForeground(color);
  }
  total_->setText(rowCount() == 0 ? tr("No agent yet: add one")
                                  : tr("%1 %2 in total on %3 %4")
                                        .arg(total_ranks)
                                        .arg(total_ranks == 1 ? tr("rank") : tr("ranks"))
                                        .arg(rowCount())
                                        .arg(rowCount() == 1 ? tr("agent") : tr("agents")));
}

void PlacementTable::fitHeight() {
  const int rows = std::clamp(rowCount() + 1, 2, 8);
  table_->setFixedHeight(table_->horizontalHeader()->sizeHint().height() +
                         rows * table_->verticalHeader()->defaultSectionSize() +
                         2 * table_->frameWidth());
}

}  // namespace ringmaster::gui
