#include "ringmaster/client/agent_status.h"

#include <ctime>

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

std::string clockTime(double t) {
  const auto seconds = static_cast<std::time_t>(t);
  std::tm local{};
  char text[16];
  std::strftime(text, sizeof text, "%H:%M:%S", ::localtime_r(&seconds, &local));
  return text;
}

}  // namespace ringmaster::client
