#include "ringmaster/client/agent_status.h"

namespace ringmaster::client {

const char* agentStateName(AgentState state) {
  switch (state) {
    case AgentState::kConnecting:
      return "connecting";
    case AgentState::kOnline:
      return "online";
    case AgentState::kUnreachable:
      return "unreachable";
    case AgentState::kKeyRejected:
      return "key rejected";
    case AgentState::kServerKeyMismatch:
      return "server-key mismatch";
    case AgentState::kError:
      return "error";
  }
  return "error";
}

}  // namespace ringmaster::client
