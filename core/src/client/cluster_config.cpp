#include "ringmaster/client/cluster_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ringmaster/util/yaml_quote.h"

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

std::string endpointProblem(const std::string& endpoint) {
  const std::string expected = "expected tcp://HOST:PORT, e.g. tcp://gpu01:7070";
  if (endpoint.empty()) return "is missing: " + expected;
  const std::string quoted = "'" + endpoint + "'";
  if (endpoint.rfind("tcp://", 0) != 0) return quoted + ": " + expected;
  if (endpoint.find_first_of(" \t\r\n") != std::string::npos) {
    return quoted + " contains a space: " + expected;
  }
  const std::string rest = endpoint.substr(6);
  if (endpointHost(endpoint).empty()) return quoted + " has no host: " + expected;
  size_t host_end = 0;
  if (rest[0] == '[') {
    host_end = rest.find(']') + 1;
  } else {
    const size_t colon = rest.rfind(':');
    host_end = colon == std::string::npos ? rest.size() : colon;
  }
  if (host_end >= rest.size() || rest[host_end] != ':') {
    return quoted + " has no port: " + expected;
  }
  const std::string port = rest.substr(host_end + 1);
  const bool digits = !port.empty() && port.size() <= 5 &&
                      port.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || std::stoi(port) < 1 || std::stoi(port) > 65535) {
    return quoted + ": port '" + port + "' is not a number from 1 to 65535";
  }
  return "";
}

std::string serverKeyProblem(const std::string& key) {
  const std::string expected =
      "expected the agent's public key, 40 characters of Z85 (ringmaster-agent pubkey "
      "--state-dir DIR on that host)";
  if (key.empty()) return "is missing: " + expected;
  if (key.size() != 40) return "has " + std::to_string(key.size()) + " characters: " + expected;
  if (!security::isValidKey(key)) return "is not valid Z85: " + expected;
  return "";
}

// Writes `text` to a temporary file next to `path`, syncs it and renames it over `path`, so a
// crash or a full disk leaves the old file whole. The directory is synced too, so the rename
// itself survives a power cut.
Status replaceFileAtomically(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path target(path);
  if (fs::is_symlink(target, ec)) {
    fs::path resolved = fs::canonical(target, ec);
    if (ec) return ioError("cannot write " + path + ": dangling symlink: " + ec.message());
    target = resolved;
  }
  fs::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  fs::create_directories(dir, ec);
  if (ec) return ioError("cannot create directory " + dir.string() + ": " + ec.message());

  std::string temp = (dir / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
  const int fd = ::mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0) {
    return ioError("cannot write " + path + ": cannot create a temporary file in " + dir.string() +
                   ": " + std::strerror(errno));
  }
  struct stat existing {};
  // Keeps the mode of the file it replaces; a new one is world-readable (public keys only).
  ::fchmod(fd, ::stat(target.c_str(), &existing) == 0 ? (existing.st_mode & 07777) : 0644);
  auto fail = [&](const std::string& what) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    ::unlink(temp.c_str());
    return ioError("cannot write " + path + ": " + what + ": " + reason);
  };
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("write " + temp);
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("fsync " + temp);
  if (::close(fd) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temp.c_str());
    return ioError("cannot write " + path + ": close " + temp + ": " + reason);
  }
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temp.c_str());
    return ioError("cannot write " + path + ": rename " + temp + ": " + reason);
  }
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);  // best effort: some filesystems refuse fsync on a directory
    ::close(dir_fd);
  }
  return Status::ok();
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

AgentEntryProblems checkAgentEntry(const AgentEndpoint& agent,
                                   const std::vector<std::string>& other_names) {
  AgentEntryProblems problems;
  if (agent.name.empty()) {
    problems.name = "is missing";
  } else if (std::any_of(agent.name.begin(), agent.name.end(),
                         [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
    problems.name = "'" + agent.name + "' contains a control character (a line break or tab)";
  } else if (std::find(other_names.begin(), other_names.end(), agent.name) != other_names.end()) {
    problems.name = "'" + agent.name + "' is used by another agent (names must be unique)";
  }
  problems.endpoint = endpointProblem(agent.endpoint);
  problems.server_key = serverKeyProblem(agent.server_key);
  return problems;
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
  std::vector<std::string> names;
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
    const AgentEntryProblems problems = checkAgentEntry(agent, names);
    const std::string where = at(file_name, node) + ": agents[" + agent.name + "]";
    if (!problems.name.empty()) errors.push_back(where + ".name " + problems.name);
    if (!problems.endpoint.empty()) errors.push_back(where + ".endpoint " + problems.endpoint);
    if (!problems.server_key.empty()) {
      errors.push_back(where + ".server_key " + problems.server_key);
    }
    names.push_back(agent.name);
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

Result<std::string> otherClusterSections(const std::string& text, const std::string& file_name) {
  try {
    const YAML::Node root = YAML::Load(text);
    if (!root.IsMap()) return std::string();
    YAML::Emitter out;
    out << YAML::BeginMap;
    size_t count = 0;
    for (const auto& entry : root) {
      if (entry.first.as<std::string>("") == "agents") continue;
      out << YAML::Key << entry.first << YAML::Value << entry.second;
      ++count;
    }
    out << YAML::EndMap;
    return count == 0 ? std::string() : std::string(out.c_str()) + "\n";
  } catch (const YAML::Exception& e) {
    return invalidArgument(file_name + ": not valid YAML: " + e.msg);
  }
}

Status writeClusterFile(const std::string& path, const std::vector<AgentEndpoint>& agents,
                        const std::string& other_sections) {
  std::vector<std::string> names;
  for (size_t i = 0; i < agents.size(); ++i) {
    const AgentEntryProblems problems = checkAgentEntry(agents[i], names);
    if (!problems.ok()) {
      std::string message =
          "not writing " + path + ": agents[" + std::to_string(i) + "] ('" + agents[i].name + "')";
      if (!problems.name.empty()) message += ": name " + problems.name;
      if (!problems.endpoint.empty()) message += ": endpoint " + problems.endpoint;
      if (!problems.server_key.empty()) message += ": server_key " + problems.server_key;
      return invalidArgument(message);
    }
    names.push_back(agents[i].name);
  }
  std::string text =
      "# Ringmaster cluster file, rewritten by ringmaster and ringmasterctl (comments are not\n"
      "# kept). server_key: what `ringmaster-agent pubkey` prints on the agent's host.\n"
      "agents:";
  // An empty block sequence would read back as null, not as an empty list.
  text += agents.empty() ? " []\n" : "\n";
  for (const auto& a : agents) {
    text += "  - name: " + yamlDoubleQuoted(a.name) +
            "\n    endpoint: " + yamlDoubleQuoted(a.endpoint) +
            "\n    server_key: " + yamlDoubleQuoted(a.server_key) + "\n";
  }
  return replaceFileAtomically(path, text + other_sections);
}

}  // namespace ringmaster::client
