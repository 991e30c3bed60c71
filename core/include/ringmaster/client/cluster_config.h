#pragma once
// Where a client finds its cluster file, history DB and key pair, and the cluster file itself:
//   agents:
//     - {name: gpu01, endpoint: "tcp://10.0.0.11:7070", server_key: "<agent public key>"}

#include <string>
#include <vector>

#include "ringmaster/client/agent_connection.h"
#include "ringmaster/security/keys.h"
#include "ringmaster/util/result.h"

namespace ringmaster::client {

struct ClientPaths {
  std::string cluster_file;  // --cluster, $RINGMASTER_CLUSTER, ~/.config/ringmaster/cluster.yaml
  std::string db_file;       // --db, $RINGMASTER_DB, ~/.local/share/ringmaster/history.db
  std::string config_dir;    // $RINGMASTER_CONFIG_DIR, ~/.config/ringmaster (holds client.key)

  // Defaults from the environment; non-empty arguments win.
  static ClientPaths resolve(const std::string& cluster_flag, const std::string& db_flag);
  std::string clientKeyPath() const { return config_dir + "/client.key"; }
};

// This client's key pair, created (0600) on first use.
Result<security::KeyPair> loadClientKeys(const ClientPaths& paths);

// Parses and checks a cluster file: every agent needs a unique name, a tcp:// endpoint and a
// valid server_key; errors name the file, line and field.
Result<std::vector<AgentEndpoint>> loadClusterFile(const std::string& path);
Result<std::vector<AgentEndpoint>> parseClusterFile(const std::string& text,
                                                    const std::string& file_name);
// Writes a cluster file (used by `ringmasterctl demo` and tests).
Status writeClusterFile(const std::string& path, const std::vector<AgentEndpoint>& agents);

// "tcp://10.0.0.11:7070" -> "10.0.0.11" (brackets of IPv6 removed); empty when not tcp://.
std::string endpointHost(const std::string& endpoint);

}  // namespace ringmaster::client
