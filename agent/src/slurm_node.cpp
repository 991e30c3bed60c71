#include "slurm_node.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "agent_server.h"
#include "ringmaster/slurm/job_dir.h"

namespace ringmaster::agent {
namespace {

Result<int> intFromEnvironment(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) {
    return invalidArgument(std::string(name) +
                           " is not set: slurm-node runs as a task of srun, inside a Slurm job");
  }
  char* end = nullptr;
  const long number = std::strtol(value, &end, 10);
  if (*end != '\0' || number < 0) {
    return invalidArgument(std::string(name) + "='" + value + "' is not a number");
  }
  return static_cast<int>(number);
}

std::string stringFromEnvironment(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

// An IPv6 address in an endpoint: tcp://[::1]:7070.
std::string inBrackets(const std::string& host) {
  return host.find(':') == std::string::npos ? host : "[" + host + "]";
}

std::string hostName() {
  char buffer[256] = {};
  ::gethostname(buffer, sizeof buffer - 1);
  return buffer;
}

// The first non-loopback IPv4 address the host name resolves to; the host name itself when there
// is none (the other nodes may still resolve it).
std::string hostAddress() {
  const std::string name = hostName();
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(name.c_str(), nullptr, &hints, &found) != 0) return name;
  std::string address = name;
  for (addrinfo* a = found; a; a = a->ai_next) {
    char text[INET_ADDRSTRLEN] = {};
    const auto* in = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
    if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text) &&
        std::string(text).rfind("127.", 0) != 0) {
      address = text;
      break;
    }
  }
  ::freeaddrinfo(found);
  return address;
}

Result<proto::JobLaunch> readLaunch(const slurm::JobDir& dir) {
  std::ifstream in(dir.launchFile(), std::ios::binary);
  if (!in) return notFound("cannot read " + dir.launchFile() + ": is the job directory shared?");
  std::stringstream bytes;
  bytes << in.rdbuf();
  proto::JobLaunch launch;
  if (!launch.ParseFromString(bytes.str()) || launch.job_id().empty()) {
    return invalidArgument(dir.launchFile() + " is not a job launch");
  }
  return launch;
}

// The job's key pair and its client's key, into the node's state dir where the agent reads them.
Status copyKeys(const slurm::JobDir& dir, const std::string& state_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(state_dir, ec);
  fs::permissions(state_dir, fs::perms::owner_all, ec);
  for (const auto& [from, to] :
       {std::pair{dir.keyFile(), agentKeyPath(state_dir)},
        std::pair{dir.authorizedKeysFile(), authorizedKeysPath(state_dir)}}) {
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    if (ec) return ioError("cannot copy " + from + " to " + to + ": " + ec.message());
    fs::permissions(to, fs::perms::owner_read | fs::perms::owner_write, ec);
  }
  return Status::ok();
}

// The job's checkpoints stay in the job directory, whatever run and node write them: this run's
// node directory links to them (the supervisor keeps a job's checkpoints in
// <state dir>/jobs/<job id>/checkpoints).
Status linkCheckpoints(const slurm::JobDir& dir, const std::string& state_dir,
                       const std::string& job_id) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string job_dir = state_dir + "/jobs/" + job_id;
  fs::create_directories(dir.checkpointDir(), ec);
  fs::create_directories(job_dir, ec);
  if (ec) return ioError("cannot create " + job_dir + ": " + ec.message());
  const std::string link = job_dir + "/checkpoints";
  if (fs::is_symlink(link, ec)) return Status::ok();
  fs::create_directory_symlink(dir.checkpointDir(), link, ec);
  if (ec)
    return ioError("cannot link " + link + " to " + dir.checkpointDir() + ": " + ec.message());
  return Status::ok();
}

// Every node's address of this run, in node order, once all are written.
Result<std::vector<slurm::NodeAddress>> waitForNodes(const slurm::JobDir& dir, int run, int nodes,
                                                     double timeout_seconds) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
  while (true) {
    std::vector<slurm::NodeAddress> found;
    std::string missing;
    for (int node = 0; node < nodes; ++node) {
      auto address = slurm::readNodeAddress(dir.addressFile(run, node));
      if (address.isOk()) {
        found.push_back(*address);
      } else {
        missing += (missing.empty() ? "" : ", ") + std::to_string(node);
      }
    }
    if (missing.empty()) return found;
    if (std::chrono::steady_clock::now() > deadline) {
      return Status(ErrorCode::kTimeout, "the agents of node(s) " + missing + " did not start in " +
                                             std::to_string(static_cast<int>(timeout_seconds)) +
                                             " s (no " + dir.runDir(run) + "/node-N/address)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

Result<SlurmNodeEnd> runSlurmNode(const SlurmNodeOptions& options) {
  RM_ASSIGN_OR_RETURN(const int node, intFromEnvironment("SLURM_NODEID"));
  RM_ASSIGN_OR_RETURN(const int nodes, intFromEnvironment("SLURM_JOB_NUM_NODES"));
  const int run = std::atoi(stringFromEnvironment("SLURM_RESTART_COUNT", "0").c_str());
  const std::string node_name = stringFromEnvironment("SLURMD_NODENAME", hostName());
  if (node >= nodes) {
    return invalidArgument("SLURM_NODEID " + std::to_string(node) + " is not below " +
                           "SLURM_JOB_NUM_NODES " + std::to_string(nodes));
  }
  const slurm::JobDir dir{std::filesystem::absolute(options.job_dir).string()};
  RM_ASSIGN_OR_RETURN(proto::JobLaunch launch, readLaunch(dir));
  const std::string state_dir = dir.nodeDir(run, node);
  RM_RETURN_IF_ERROR(copyKeys(dir, state_dir));
  RM_RETURN_IF_ERROR(linkCheckpoints(dir, state_dir, launch.job_id()));

  AgentOptions agent;
  agent.listen =
      "tcp://" + (options.bind.empty() ? std::string("0.0.0.0") : inBrackets(options.bind)) + ":0";
  agent.state_dir = state_dir;
  agent.name = node_name;
  agent.slots = options.ranks_per_node;
  agent.quiet = options.quiet;
  agent.exit_when_done = true;
  RM_ASSIGN_OR_RETURN(auto server, AgentServer::create(agent));
  const std::string host = options.bind.empty() ? hostAddress() : options.bind;
  const std::string port = server->endpoint().substr(server->endpoint().rfind(':') + 1);

  // This node's share: ranks are numbered node by node.
  launch.set_group_rank(node);
  launch.set_group_world_size(nodes);
  launch.set_world_size(nodes * options.ranks_per_node);
  launch.clear_ranks();
  for (int local = 0; local < options.ranks_per_node; ++local) {
    auto* rank = launch.add_ranks();
    rank->set_rank(node * options.ranks_per_node + local);
    rank->set_local_rank(local);
  }
  launch.set_host_address(host);
  slurm::NodeAddress self;
  self.node = node;
  self.agent = node_name;
  self.endpoint = "tcp://" + inBrackets(host) + ":" + port;
  self.host = host;
  if (node == 0) self.attempt = slurm::newestAttempt(dir, launch.job_id()) + 1;
  launch.set_attempt(self.attempt);
  if (node == 0) {
    RM_ASSIGN_OR_RETURN(self.master_port, server->prepare(launch, /*reserve_master_port=*/true));
  }
  RM_RETURN_IF_ERROR(slurm::writeNodeAddress(dir.addressFile(run, node), self));

  RM_ASSIGN_OR_RETURN(auto addresses, waitForNodes(dir, run, nodes, options.peers_timeout_seconds));
  const slurm::NodeAddress& first = addresses[0];
  launch.set_attempt(first.attempt);
  launch.set_master_addr(first.host);
  launch.set_master_port(first.master_port);
  launch.set_rendezvous_endpoint(first.endpoint);
  launch.set_rendezvous_server_key(server->publicKey());
  launch.clear_gang();
  for (const auto& address : addresses) {
    auto* member = launch.add_gang();
    member->set_agent(address.agent);
    member->set_endpoint(address.endpoint);
    member->set_server_key(server->publicKey());  // one key for all of the job's agents
    member->set_host_address(address.host);
    member->set_ranks(options.ranks_per_node);
  }
  RM_RETURN_IF_ERROR(server->launch(launch).status());
  RM_RETURN_IF_ERROR(server->run());
  return server->stoppedBySignal() ? SlurmNodeEnd::kStoppedBySignal : SlurmNodeEnd::kJobOver;
}

}  // namespace ringmaster::agent
