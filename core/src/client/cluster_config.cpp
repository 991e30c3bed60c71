#include "ringmaster/client/cluster_config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace ringmaster::client {
namespace {

std::string envOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

std::string home() { return envOr("HOME", "/root"); }

std::string at(const std::string& file, const YAML::Node& node) {
  return file + ":" + std::to_string(node.Mark().line + 1);
}

}  // namespace

ClientPaths ClientPaths::resolve(const std::string& cluster_flag, const std::string& db_flag) {
  ClientPaths paths;
  paths.config_dir = envOr("RINGMASTER_CONFIG_DIR", home() + "/.config/ringmaster");
  paths.cluster_file = !cluster_flag.empty() ? cluster_flag
                                             : envOr("RINGMASTER_CLUSTER",
                                                     home() + "/.config/ringmaster/cluster.yaml");
  paths.db_file = !db_flag.empty()
                      ? db_flag
                      : envOr("RINGMASTER_DB", home() + "/.local/share/ringmaster/history.db");
  return paths;
}

Result<security::KeyPair> loadClientKeys(const ClientPaths& paths) {
  return security::loadOrCreateKeyPair(paths.clientKeyPath());
}

std::string endpointHost(const std::string& endpoint) {
  const std::string prefix = "tcp://";
  if (endpoint.rfind(prefix, 0) != 0) return "";
  std::string rest = endpoint.substr(prefix.size());
  if (!rest.empty() && rest[0] == '[') {
    size_t close = rest.find(']');
    return close == std::string::npos ? "" : rest.substr(1, close - 1);
  }
  size_t colon = rest.rfind(':');
  return colon == std::string::npos ? rest : rest.substr(0, colon);
}

Result<std::vector<AgentEndpoint>> parseClusterFile(const std::string& text,
                                                    const std::string& file_name) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    return invalidArgument(file_name + ":" + std::to_string(e.mark.line + 1) +
                           ": not valid YAML: " + e.msg);
  }
  if (!root.IsMap() || !root["agents"] || !root["agents"].IsSequence()) {
    return invalidArgument(file_name +
                           ": expected a mapping with 'agents:', a list of {name, endpoint, "
                           "server_key}");
  }
  std::vector<AgentEndpoint> agents;
  std::vector<std::string> errors;
  std::set<std::string> names;
  for (const auto& node : root["agents"]) {
    if (!node.IsMap()) {
      errors.push_back(at(file_name, node) + ": agents[]: expected {name, endpoint, server_key}");
      continue;
    }
    AgentEndpoint agent;
    for (const auto& entry : node) {
      const std::string key = entry.first.as<std::string>("");
      if (!entry.second.IsScalar()) {
        errors.push_back(at(file_name, entry.second) + ": agents[]." + key + ": expected a string");
        continue;
      }
      const std::string value = entry.second.as<std::string>("");
      if (key == "name") {
        agent.name = value;
      } else if (key == "endpoint") {
        agent.endpoint = value;
      } else if (key == "server_key") {
        agent.server_key = value;
      } else {
        errors.push_back(at(file_name, entry.first) + ": agents[]: unknown key '" + key +
                         "' (expected name, endpoint, server_key)");
      }
    }
    if (agent.name.empty()) errors.push_back(at(file_name, node) + ": agents[].name is missing");
    if (!names.insert(agent.name).second) {
      errors.push_back(at(file_name, node) + ": agents[].name '" + agent.name +
                       "' is listed twice");
    }
    if (endpointHost(agent.endpoint).empty()) {
      errors.push_back(at(file_name, node) + ": agents[" + agent.name + "].endpoint '" +
                       agent.endpoint + "': expected tcp://HOST:PORT");
    }
    if (!security::isValidKey(agent.server_key)) {
      errors.push_back(at(file_name, node) + ": agents[" + agent.name +
                       "].server_key: expected the agent's public key, 40 characters of Z85 "
                       "(ringmaster-agent pubkey --state-dir DIR)");
    }
    agents.push_back(std::move(agent));
  }
  if (!errors.empty()) {
    std::string message;
    for (const auto& e : errors) message += (message.empty() ? "" : "\n") + e;
    return invalidArgument(message);
  }
  return agents;
}

Result<std::vector<AgentEndpoint>> loadClusterFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return notFound("cluster file " + path +
                    " not found (give --cluster FILE or set RINGMASTER_CLUSTER; it lists "
                    "agents: [{name, endpoint, server_key}])");
  }
  std::stringstream text;
  text << in.rdbuf();
  return parseClusterFile(text.str(), path);
}

Status writeClusterFile(const std::string& path, const std::vector<AgentEndpoint>& agents) {
  std::error_code ec;
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  std::ofstream out(path);
  out << "agents:\n";
  for (const auto& a : agents) {
    out << "  - name: \"" << a.name << "\"\n    endpoint: \"" << a.endpoint
        << "\"\n    server_key: \"" << a.server_key << "\"\n";
  }
  out.flush();
  if (!out) return ioError("cannot write " + path);
  return Status::ok();
}

}  // namespace ringmaster::client
