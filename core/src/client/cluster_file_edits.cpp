#include "ringmaster/client/cluster_file_edits.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "ringmaster/client/cluster_config.h"

namespace ringmaster::client {
namespace {

std::vector<std::string> namesExcept(const std::vector<AgentEndpoint>& agents,
                                     const std::string& except) {
  std::vector<std::string> names;
  for (const auto& agent : agents) {
    if (agent.name != except) names.push_back(agent.name);
  }
  return names;
}

Status checkEntry(const AgentEndpoint& agent, const std::vector<std::string>& other_names) {
  const AgentEntryProblems problems = checkAgentEntry(agent, other_names);
  if (problems.ok()) return Status::ok();
  std::string message = "agent '" + agent.name + "':";
  if (!problems.name.empty()) message += " name " + problems.name + ";";
  if (!problems.endpoint.empty()) message += " endpoint " + problems.endpoint + ";";
  if (!problems.server_key.empty()) message += " server key " + problems.server_key + ";";
  message.pop_back();
  return invalidArgument(message);
}

auto findByName(std::vector<AgentEndpoint>& agents, const std::string& name) {
  return std::find_if(agents.begin(), agents.end(),
                      [&](const AgentEndpoint& a) { return a.name == name; });
}

// Runs one read-modify-write of `path` under an exclusive flock of its directory (created when
// missing, as writeClusterFile would need it): no lock file is left beside the cluster file.
// The lock goes with the descriptor, so a crashed editor never leaves the file locked.
Status editUnderLock(const std::string& path,
                     const std::function<Status(std::vector<AgentEndpoint>&)>& edit) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return unavailable("cannot open " + dir.string() + ": " + std::strerror(errno));
  while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
  Status status = [&]() -> Status {
    // One read: the agents and the other sections (slurm:, ...) come from the same version.
    std::vector<AgentEndpoint> agents;
    std::string others;
    if (std::ifstream in(path); in) {
      std::stringstream text;
      text << in.rdbuf();
      RM_ASSIGN_OR_RETURN(agents, parseClusterFile(text.str(), path));
      RM_ASSIGN_OR_RETURN(others, otherClusterSections(text.str(), path));
    }
    RM_RETURN_IF_ERROR(edit(agents));
    return writeClusterFile(path, agents, others);
  }();
  ::close(fd);
  return status;
}

}  // namespace

Result<std::vector<AgentEndpoint>> readAgentsForEdit(const std::string& path) {
  auto agents = loadClusterFile(path);
  if (!agents.isOk() && agents.status().code() == ErrorCode::kNotFound) {
    return std::vector<AgentEndpoint>{};
  }
  return agents;
}

Status addAgentToFile(const std::string& path, const AgentEndpoint& agent) {
  return editUnderLock(path, [&](std::vector<AgentEndpoint>& agents) {
    RM_RETURN_IF_ERROR(checkEntry(agent, namesExcept(agents, "")));
    agents.push_back(agent);
    return Status::ok();
  });
}

Status replaceAgentInFile(const std::string& path, const std::string& old_name,
                          const AgentEndpoint& agent) {
  return editUnderLock(path, [&](std::vector<AgentEndpoint>& agents) {
    auto it = findByName(agents, old_name);
    if (it == agents.end()) {
      return notFound("agent '" + old_name + "' is no longer in " + path +
                      " (the file changed meanwhile)");
    }
    RM_RETURN_IF_ERROR(checkEntry(agent, namesExcept(agents, old_name)));
    *it = agent;
    return Status::ok();
  });
}

Status putAgentInFile(const std::string& path, const AgentEndpoint& agent) {
  return editUnderLock(path, [&](std::vector<AgentEndpoint>& agents) {
    RM_RETURN_IF_ERROR(checkEntry(agent, namesExcept(agents, agent.name)));
    if (auto it = findByName(agents, agent.name); it != agents.end()) {
      *it = agent;
    } else {
      agents.push_back(agent);
    }
    return Status::ok();
  });
}

Status removeAgentFromFile(const std::string& path, const std::string& name) {
  return editUnderLock(path, [&](std::vector<AgentEndpoint>& agents) {
    auto it = findByName(agents, name);
    if (it == agents.end()) return notFound("agent '" + name + "' is not in " + path);
    agents.erase(it);
    return Status::ok();
  });
}

}  // namespace ringmaster::client
