#pragma once
// Whether an agent that stopped answering is down or only cut off: a host that answers a TCP
// connect with a refusal is up, and nothing listens on the agent's port, so the agent process is
// gone. A cut link or a powered-off host answers nothing (or "unreachable"): it may come back.

#include <chrono>
#include <string>

namespace ringmaster::agent {

// True only when a TCP connect to `endpoint` (tcp://HOST:PORT) is refused within `timeout`.
// False when it connects, times out, finds no route, or the endpoint cannot be parsed. HOST is
// resolved with getaddrinfo: a name that needs DNS can take longer than `timeout`.
bool refusesConnections(const std::string& endpoint, std::chrono::milliseconds timeout);

}  // namespace ringmaster::agent
