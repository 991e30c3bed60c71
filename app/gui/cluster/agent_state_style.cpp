#include "cluster/agent_state_style.h"

#include "ringmaster/client/cluster_config.h"
#include "ringmaster/security/keys.h"

namespace ringmaster::gui {

using client::AgentState;

QColor stateColor(AgentState state) {
  // Saturated enough to tell apart on the dark palette, and not by hue alone: the word is always
  // next to the dot.
  switch (state) {
    case AgentState::kOnline:
      return QColor(0x4c, 0xc2, 0x5a);
    case AgentState::kConnecting:
      return QColor(0x9e, 0xa7, 0xb3);
    case AgentState::kUnreachable:
      return QColor(0xef, 0x53, 0x50);
    case AgentState::kKeyRejected:
      return QColor(0xff, 0xa7, 0x26);
    case AgentState::kServerKeyMismatch:
      return QColor(0xd0, 0x7b, 0xe8);
    case AgentState::kError:
      return QColor(0xef, 0x53, 0x50);
  }
  return QColor(0xef, 0x53, 0x50);
}

QColor levelColor(double value, double warn, double critical, const QColor& normal) {
  if (value >= critical) return QColor(0xe5, 0x39, 0x35);
  if (value >= warn) return QColor(0xf5, 0xa6, 0x23);
  return normal;
}

QColor faultColor(hardware::FaultSeverity severity) {
  switch (severity) {
    case hardware::FaultSeverity::kCritical:
      return QColor(0xe5, 0x39, 0x35);
    case hardware::FaultSeverity::kWarning:
      return QColor(0xf5, 0xa6, 0x23);
    case hardware::FaultSeverity::kNotice:
      break;
  }
  return QColor(0x9e, 0xa7, 0xb3);
}

QIcon stateIcon(AgentState state) { return dotIcon(stateColor(state)); }

QString agentHost(const client::AgentStatus& status) {
  if (status.inventory && !status.inventory->hostname().empty()) {
    return QString::fromStdString(status.inventory->hostname());
  }
  const std::string host = client::endpointHost(status.endpoint);
  return QString::fromStdString(host.empty() ? status.name : host);
}

QString authorizeCommand(const QString& client_key, const QString& state_dir) {
  return QString("ringmaster-agent authorize --state-dir %1 %2'%3'")
      .arg(state_dir, client_key.startsWith('-') ? "-- " : "", client_key);
}

QString stateAdvice(const client::AgentStatus& status, const QString& client_key) {
  const QString name = QString::fromStdString(status.name);
  const QString host = agentHost(status);
  const QString endpoint = QString::fromStdString(status.endpoint);
  switch (status.state) {
    case AgentState::kOnline:
      return {};
    case AgentState::kConnecting:
      return QString("Waiting for the first answer from %1.").arg(endpoint);
    case AgentState::kUnreachable:
      // Silent after answering: a stopped, hung or overloaded agent still accepts connections,
      // and "Nothing answers" contradicted the reason under it (issue 35).
      if (status.answered_at > 0) {
        return QString(
                   "%1 stopped answering at %2. Is ringmaster-agent still running on %3, and "
                   "not stopped, hung or overloaded?")
            .arg(name, QString::fromStdString(client::clockTime(status.answered_at)), host);
      }
      return QString(
                 "Nothing answers at %1. Is ringmaster-agent running on %2, and is the port "
                 "open from this machine?")
          .arg(endpoint, host);
    case AgentState::kKeyRejected:
      return QString("%1 rejected this app's key. On %2 run:  %3")
          .arg(name, host, authorizeCommand(client_key));
    case AgentState::kServerKeyMismatch: {
      const QString fingerprint =
          QString::fromStdString(security::keyFingerprint(status.server_key));
      return QString(
                 "%1 answers with another key than the one pinned here (fingerprint %2). If "
                 "its key was rotated (ringmaster-agent rotate-key), run `ringmaster-agent "
                 "pubkey --state-dir %3` on %4 and Update server key… with what it prints. If "
                 "nobody rotated it, something else may be answering at this address.")
          .arg(name, fingerprint, kDefaultAgentStateDir, host);
    }
    case AgentState::kError:
      return QString("%1 answered with an error.").arg(name);
  }
  return {};
}

}  // namespace ringmaster::gui
