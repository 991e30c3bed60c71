#pragma once
// What a client knows about one agent of its cluster file at a moment: whether it answers, why
// not when it does not (the client library's own explanation), and its latest inventory and
// health. Produced by ClusterSession on its thread, copied to the GUI.

#include <optional>
#include <string>

#include "ringmaster/protocol/ringmaster.pb.h"

namespace ringmaster::client {

enum class AgentState {
  kConnecting,         // no answer yet since the session started or the cluster file changed
  kOnline,             // answered the last inventory request
  kUnreachable,        // nothing listens at the endpoint, or no answer in time
  kKeyRejected,        // the agent does not list this client's key in its authorized_keys
  kServerKeyMismatch,  // the agent's key is not the server_key pinned in the cluster file
  kError,              // anything else (reason says what)
};

// "online", "unreachable", "key rejected", "server-key mismatch", "connecting", "error".
const char* agentStateName(AgentState state);

struct AgentStatus {
  std::string name;
  std::string endpoint;
  std::string server_key;
  AgentState state = AgentState::kConnecting;
  std::string reason;                         // empty when online
  std::optional<proto::Inventory> inventory;  // the latest one answered (health included)
  double time = 0;                            // unix seconds of this status
  // Unix seconds of the newest answer; 0 when none came since the session started. The evidence
  // a job's state rests on is no newer than this while the agent is silent.
  double answered_at = 0;
};

// "14:02:11": the local wall-clock time of unix seconds `t`, as shown in "no answer since".
std::string clockTime(double t);

}  // namespace ringmaster::client
