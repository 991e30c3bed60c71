#include "ringmaster/client/cluster_config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "ringmaster/util/yaml_node.h"
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

bool hasControlCharacter(const std::string& text) {
  return std::any_of(text.begin(), text.end(),
                     [](unsigned char c) { return c < 0x20 || c == 0x7f; });
}

bool isPortNumber(const std::string& text) {
  return !text.empty() && text.size() <= 5 &&
         text.find_first_not_of("0123456789") == std::string::npos && std::stoi(text) >= 1 &&
         std::stoi(text) <= 65535;
}

// A host name as DNS writes it: labels of letters, digits and '-' (and '_', which ssh configs
// and some sites use), separated by dots; not starting with '-'.
bool isHostName(const std::string& host) {
  if (host.empty() || host.size() > 253 || host[0] == '-' || host[0] == '.') return false;
  if (host.find("..") != std::string::npos) return false;
  return std::all_of(host.begin(), host.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '.' || c == '_';
  });
}

bool isIpLiteral(const std::string& text, int family) {
  unsigned char buffer[16];
  return ::inet_pton(family, text.c_str(), buffer) == 1;
}

// What is wrong with a slurm: entry's login, "[user@]host[:port]"; "" when it is fine.
std::string loginProblem(const std::string& login) {
  const std::string expected = "expected [USER@]HOST[:PORT], e.g. alice@login.example.org:22";
  const std::string quoted = "'" + login + "'";
  if (login.empty()) return "is empty: " + expected;
  if (hasControlCharacter(login)) return "contains a control character: " + expected;
  if (login.find_first_of(" \t") != std::string::npos) {
    return quoted + " contains a space: " + expected;
  }
  std::string rest = login;
  const size_t at_sign = rest.find('@');
  if (at_sign != std::string::npos) {
    const std::string user = rest.substr(0, at_sign);
    if (user.empty()) return quoted + " has an empty user before '@': " + expected;
    // ssh would read "-oProxyCommand=..." as an option, not as a user or host.
    if (user[0] == '-') return quoted + ": the user may not start with '-'";
    rest = rest.substr(at_sign + 1);
    if (rest.find('@') != std::string::npos) return quoted + " has two '@': " + expected;
  }
  std::string host;
  std::string port;
  if (!rest.empty() && rest[0] == '[') {
    const size_t close = rest.find(']');
    if (close == std::string::npos) return quoted + " has no ']' after the IPv6 address";
    host = rest.substr(1, close - 1);
    if (!isIpLiteral(host, AF_INET6)) return quoted + ": '" + host + "' is not an IPv6 address";
    const std::string after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return quoted + ": expected ':PORT' after ']'";
      port = after.substr(1);
      if (port.empty()) return quoted + " has an empty port: " + expected;
    }
  } else {
    const size_t colon = rest.find(':');
    host = rest.substr(0, colon);
    if (colon != std::string::npos) {
      port = rest.substr(colon + 1);
      if (port.find(':') != std::string::npos) {
        return quoted +
               " has more than one ':' (write an IPv6 address in brackets, "
               "[fe80::1]:22): " +
               expected;
      }
      if (port.empty()) return quoted + " has an empty port: " + expected;
    }
    if (host.empty()) return quoted + " has no host: " + expected;
    if (host[0] == '-') return quoted + ": the host may not start with '-'";
    if (!isHostName(host) && !isIpLiteral(host, AF_INET)) {
      return quoted + ": '" + host + "' is not a host name or an IPv4 address: " + expected;
    }
  }
  if (!port.empty() && !isPortNumber(port)) {
    return quoted + ": port '" + port + "' is not a number from 1 to 65535";
  }
  return "";
}

// What is wrong with a slurm: entry's bind address; "" when it is fine.
std::string bindProblem(const std::string& bind) {
  const std::string expected =
      "expected an IPv4 or IPv6 address (without brackets) or a host name, e.g. 10.1.0.5";
  if (bind.empty()) return "is empty: " + expected;
  if (hasControlCharacter(bind)) return "contains a control character: " + expected;
  if (bind.find_first_of(" \t") != std::string::npos) return "'" + bind + "' contains a space";
  if (isIpLiteral(bind, AF_INET) || isIpLiteral(bind, AF_INET6) || isHostName(bind)) return "";
  return "'" + bind + "': " + expected;
}

// What is wrong with an absolute path of a slurm: entry; "" when it is fine.
std::string absolutePathProblem(const std::string& path) {
  if (path.empty()) return "is empty: expected an absolute path";
  // The path goes into the job's batch script: a line break would start a new command there.
  if (hasControlCharacter(path)) return "contains a control character (a line break or tab)";
  if (path[0] != '/') return "'" + path + "' is not absolute: expected a path starting with '/'";
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
  // A file for Slurm clusters alone has no agents: section; an empty file, or "agents:" with
  // nothing under it, is a cluster with no agents yet (what `cluster add` starts from).
  const bool slurm_only = root.IsMap() && !root["agents"] && root["slurm"];
  const bool empty = root.IsNull() || (root.IsMap() && root["agents"] && root["agents"].IsNull());
  if (slurm_only || empty) return std::vector<AgentEndpoint>{};
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

namespace {

using yaml::describe;
using yaml::lineOf;

// Reads one slurm: entry; appends "FILE:LINE: slurm[NAME].FIELD: problem" to `errors`.
SlurmCluster parseSlurmEntry(const YAML::Node& node, size_t index, const std::string& file_name,
                             const std::vector<std::string>& earlier_names,
                             std::vector<std::string>* errors) {
  struct Problem {
    int line;
    std::string field;  // "" for the entry itself
    std::string message;
  };
  std::vector<Problem> problems;  // labelled once the entry's name is known
  SlurmCluster cluster;
  cluster.line = lineOf(node);
  static const std::vector<std::string> kOwnKeys = {"name", "login", "job_dir", "agent", "bind"};
  std::map<std::string, YAML::Node> values;  // own key -> its value, when a scalar
  std::map<std::string, int> key_lines;      // own key -> its line
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) continue;  // readSlurmFields reports it
    const std::string key = entry.first.Scalar();
    if (std::find(kOwnKeys.begin(), kOwnKeys.end(), key) == kOwnKeys.end()) continue;
    const int line = lineOf(entry.first);
    if (key_lines.count(key) != 0) {
      problems.push_back(
          {line, key,
           "duplicate key (first given on line " + std::to_string(key_lines[key]) + ")"});
      continue;
    }
    key_lines[key] = line;
    if (!entry.second.IsScalar()) {
      problems.push_back({line, key, "expected a string, got " + describe(entry.second)});
      continue;
    }
    values.emplace(key, entry.second);
  }
  // A key whose value is not a string was reported above; only a key not given is missing.
  auto given = [&](const std::string& key) { return values.count(key) != 0; };
  auto missing = [&](const std::string& key) { return key_lines.count(key) == 0; };
  auto text = [&](const std::string& key) {
    return given(key) ? values.at(key).Scalar() : std::string();
  };
  auto check = [&](const std::string& key, const std::string& problem) {
    if (!problem.empty()) problems.push_back({key_lines.at(key), key, problem});
  };

  cluster.name = text("name");
  cluster.login = text("login");
  cluster.job_dir = text("job_dir");
  cluster.agent = text("agent");
  cluster.bind = text("bind");
  if (missing("name")) {
    problems.push_back({cluster.line, "name", "is missing: expected the cluster's name, e.g. hpc"});
  } else if (given("name")) {
    if (cluster.name.empty()) {
      check("name", "is empty: expected the cluster's name");
    } else if (hasControlCharacter(cluster.name)) {
      check("name", "contains a control character (a line break or tab)");
    } else if (std::find(earlier_names.begin(), earlier_names.end(), cluster.name) !=
               earlier_names.end()) {
      check("name",
            "'" + cluster.name + "' is used by another slurm: entry (names must be unique)");
    }
  }
  if (missing("job_dir")) {
    problems.push_back({cluster.line, "job_dir",
                        "is missing: expected an absolute path that the login node and every "
                        "compute node see, e.g. /shared/ringmaster"});
  } else if (given("job_dir")) {
    check("job_dir", absolutePathProblem(cluster.job_dir));
  }
  if (given("login")) check("login", loginProblem(cluster.login));
  if (given("agent")) check("agent", absolutePathProblem(cluster.agent));
  if (given("bind")) check("bind", bindProblem(cluster.bind));
  for (const slurm::SlurmFieldProblem& problem :
       slurm::readSlurmFields(node, kOwnKeys, &cluster.defaults)) {
    std::string message = problem.message;
    if (!problem.hint.empty()) message += " (hint: " + problem.hint + ")";
    problems.push_back({problem.line > 0 ? problem.line : cluster.line, problem.field, message});
  }
  cluster.defaults.line = cluster.line;

  // Named by the entry's name when it has a usable one, else by its index.
  const bool named = !cluster.name.empty() && !hasControlCharacter(cluster.name);
  const std::string label = "slurm[" + (named ? cluster.name : std::to_string(index)) + "]";
  std::stable_sort(problems.begin(), problems.end(),
                   [](const Problem& a, const Problem& b) { return a.line < b.line; });
  for (const Problem& problem : problems) {
    errors->push_back(file_name + ":" + std::to_string(problem.line) + ": " + label +
                      (problem.field.empty() ? "" : "." + problem.field) + ": " + problem.message);
  }
  return cluster;
}

}  // namespace

Result<std::vector<SlurmCluster>> parseSlurmClusters(const std::string& text,
                                                     const std::string& file_name) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return invalidArgument(file_name + ":" + std::to_string(e.mark.line + 1) +
                           ": not valid YAML: " + e.msg);
  }
  try {
    if (root.IsNull()) return std::vector<SlurmCluster>{};
    if (!root.IsMap()) {
      return invalidArgument(file_name + ": expected a mapping with 'agents:' and/or 'slurm:'");
    }
    const YAML::Node list = root["slurm"];
    if (!list || list.IsNull()) return std::vector<SlurmCluster>{};
    if (!list.IsSequence()) {
      return invalidArgument(file_name + ":" + std::to_string(lineOf(list)) +
                             ": slurm: expected a list of {name, job_dir, ...} entries, got " +
                             describe(list));
    }
    std::vector<SlurmCluster> clusters;
    std::vector<std::string> errors;
    std::vector<std::string> names;
    for (size_t i = 0; i < list.size(); ++i) {
      const YAML::Node node = list[i];
      if (!node.IsMap()) {
        errors.push_back(file_name + ":" +
                         std::to_string(lineOf(node) > 0 ? lineOf(node) : lineOf(list)) +
                         ": slurm[" + std::to_string(i) +
                         "]: expected a mapping {name, job_dir, ...}, got " + describe(node));
        continue;
      }
      SlurmCluster cluster = parseSlurmEntry(node, i, file_name, names, &errors);
      names.push_back(cluster.name);
      clusters.push_back(std::move(cluster));
    }
    if (!errors.empty()) {
      std::string message;
      for (const auto& e : errors) message += (message.empty() ? "" : "\n") + e;
      return invalidArgument(message);
    }
    return clusters;
  } catch (const YAML::Exception& e) {
    return invalidArgument(file_name + ": cannot read the slurm: entries: " + e.msg);
  }
}

Result<std::vector<SlurmCluster>> loadSlurmClusters(const std::string& path) {
  std::error_code ec;
  // As for the agents (readAgentsForEdit), a missing cluster file is an empty one.
  if (!std::filesystem::exists(path, ec) && !ec) return std::vector<SlurmCluster>{};
  if (std::filesystem::is_directory(path, ec)) {
    return ioError("cannot read cluster file " + path + ": it is a directory");
  }
  std::ifstream in(path);
  if (!in) return ioError("cannot read cluster file " + path + ": " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  return parseSlurmClusters(text.str(), path);
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
