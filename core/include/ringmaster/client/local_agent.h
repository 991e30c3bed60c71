#pragma once
// The embedded local agent: a ringmaster-agent on loopback with its state under the client's data
// directory, for a desktop with no cluster (the demo, first start of the app). Detached, it runs
// in its own session with its output in STATE_DIR/agent.log, so that closing the app never stops
// a job; a later start finds it again through STATE_DIR/local-agent.info.

#include <sys/types.h>

#include <optional>
#include <string>

#include "ringmaster/util/result.h"

namespace ringmaster::client {

struct LocalAgentOptions {
  std::string program;    // path of ringmaster-agent
  std::string state_dir;  // its --state-dir
  std::string listen = "tcp://127.0.0.1:0";
  std::string name = "local";
  bool detach = false;  // outlive this process (own session, output to STATE_DIR/agent.log)
  int start_timeout_ms = 15000;
};

struct LocalAgent {
  pid_t pid = -1;
  std::string endpoint;
  std::string public_key;
};

// Starts the agent and waits for its banner (endpoint and public key).
Result<LocalAgent> startLocalAgent(const LocalAgentOptions& options);
// A detached agent of `state_dir` started earlier that still runs; nullopt when none.
std::optional<LocalAgent> findLocalAgent(const std::string& state_dir);
// SIGTERM, then waits for it to exit (SIGKILL after timeout_ms).
void stopLocalAgent(const LocalAgent& agent, int timeout_ms = 10000);

// The directory of the running executable (to find ringmaster-agent next to it).
std::string executableDir();

// The job specs, example scripts and icons: $RINGMASTER_RESOURCES, else ../share/ringmaster
// beside this executable (a bundle or an installed package), else `source_tree_resources` (the
// resources/ of the source tree it was built from).
std::string resourcesDir(const std::string& source_tree_resources);

}  // namespace ringmaster::client
