#include "editor/agent_summary.h"

#include <QObject>

namespace ringmaster::gui {

QString agentSummary(const client::AgentStatus& agent) {
  QString text;
  if (agent.inventory) {
    const proto::Inventory& inventory = *agent.inventory;
    const int gpus = inventory.gpus_size();
    text = QObject::tr("free %1/%2 slots, %3")
               .arg(inventory.slots_free())
               .arg(inventory.slots())
               .arg(gpus == 0   ? QObject::tr("no GPU")
                    : gpus == 1 ? QObject::tr("1 GPU")
                                : QObject::tr("%1 GPUs").arg(gpus));
  }
  if (agent.state == client::AgentState::kOnline) return text;
  QString state = QString::fromUtf8(client::agentStateName(agent.state));
  if (!agent.reason.empty()) state += QStringLiteral(": ") + QString::fromStdString(agent.reason);
  return text.isEmpty() ? state : state + QObject::tr(" (last seen: %1)").arg(text);
}

}  // namespace ringmaster::gui
