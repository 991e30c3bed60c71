// `ringmasterctl demo`: the bundled demo job on an embedded local agent, followed live.
// Starts ringmaster-agent (next to this executable) on loopback with a state dir under the
// history's directory, authorizes this client's key there, writes a one-agent cluster file,
// submits the demo spec, streams its logs, prints where to look next, and stops the agent.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>

#include "ctl.h"
#include "ringmaster/security/keys.h"

extern char** environ;

namespace ringmaster::ctl {
namespace {

std::string executableDir() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "." : self.parent_path().string();
}

// resources/ of this build: $RINGMASTER_RESOURCES, else the source tree it was built from.
std::string resourcesDir() {
  if (const char* env = std::getenv("RINGMASTER_RESOURCES"); env && *env) return env;
  return RINGMASTER_RESOURCES_DIR;
}

struct LocalAgent {
  pid_t pid = -1;
  std::string endpoint;
  std::string public_key;
};

Result<LocalAgent> startLocalAgent(const std::string& state_dir) {
  std::string program = executableDir() + "/ringmaster-agent";
  std::vector<std::string> args = {program,       "--listen", "tcp://127.0.0.1:0",
                                   "--state-dir", state_dir,  "--name",
                                   "local",       "--quiet"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return ioError("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  LocalAgent agent;
  int rc = posix_spawn(&agent.pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    return ioError("cannot start " + program + ": " + std::strerror(rc));
  }
  std::string text;
  char buffer[512];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (text.find("public-key ") == std::string::npos ||
         text.find('\n', text.find("public-key ")) == std::string::npos) {
    pollfd p{out[0], POLLIN, 0};
    if (std::chrono::steady_clock::now() > deadline || ::poll(&p, 1, 200) < 0) break;
    if (!(p.revents & (POLLIN | POLLHUP))) continue;
    ssize_t n = ::read(out[0], buffer, sizeof buffer);
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(out[0]);
  auto field = [&](const std::string& key) {
    size_t at = text.find(key + " ");
    if (at == std::string::npos) return std::string();
    at += key.size() + 1;
    return text.substr(at, text.find('\n', at) - at);
  };
  agent.endpoint = field("endpoint");
  agent.public_key = field("public-key");
  if (agent.endpoint.empty() || agent.public_key.empty()) {
    ::kill(agent.pid, SIGKILL);
    ::waitpid(agent.pid, nullptr, 0);
    return unavailable("the local agent did not start (run " + program + " --state-dir " +
                       state_dir + " to see why)");
  }
  return agent;
}

// "rank 0: loss 8.316 -> 0.00312 over 2000 steps" for the newest job in the history.
void printLossSummary(client::ClusterClient& cluster) {
  auto store = cluster.history();
  if (!store.isOk()) return;
  auto jobs = (*store)->jobs();
  if (!jobs.isOk() || jobs->empty()) return;
  store::MetricQuery query;
  query.job_id = jobs->front().job_id;
  query.name = "loss";
  auto rows = (*store)->metrics(query);
  if (!rows.isOk()) return;
  std::map<int, std::pair<const store::MetricRow*, const store::MetricRow*>> first_last;
  for (const auto& row : *rows) {
    auto& entry = first_last[row.rank];
    if (!entry.first) entry.first = &row;
    entry.second = &row;
  }
  for (const auto& [rank, entry] : first_last) {
    std::printf("rank %d: loss %.4g -> %.4g over %lld steps\n", rank, entry.first->value,
                entry.second->value, static_cast<long long>(entry.second->step + 1));
  }
}

void stopLocalAgent(const LocalAgent& agent) {
  ::kill(agent.pid, SIGTERM);
  ::waitpid(agent.pid, nullptr, 0);
}

}  // namespace

int runDemo(const Globals& globals, const std::string& spec_path_flag) {
  client::ClientPaths paths = client::ClientPaths::resolve(globals.cluster_file, globals.db_file);
  auto keys = client::loadClientKeys(paths);
  if (!keys.isOk()) {
    printError(keys.status().message());
    return kExitFailure;
  }
  const std::string state_dir =
      std::filesystem::path(paths.db_file).parent_path().string() + "/local-agent";
  Status authorized = security::authorizeKey(state_dir + "/authorized_keys", keys->public_key,
                                             "ringmasterctl demo");
  if (!authorized.isOk()) {
    printError(authorized.message());
    return kExitFailure;
  }
  const std::string spec_path =
      spec_path_flag.empty() ? resourcesDir() + "/jobs/demo.yaml" : spec_path_flag;
  job::SpecParseResult parsed = job::loadJobSpec(spec_path);
  if (!checkSpec(parsed)) return kExitBadInput;
  job::JobSpec spec = *parsed.spec;
  if (spec.workdir.empty()) spec.workdir = resourcesDir();

  auto agent = startLocalAgent(state_dir);
  if (!agent.isOk()) {
    printError(agent.status().message());
    return kExitFailure;
  }
  std::printf("local agent listening on %s (state in %s)\n", agent->endpoint.c_str(),
              state_dir.c_str());
  paths.cluster_file = paths.config_dir + "/local-cluster.yaml";
  int rc = kExitFailure;
  Status written =
      client::writeClusterFile(paths.cluster_file, {{"local", agent->endpoint, agent->public_key}});
  auto cluster = written.isOk() ? client::ClusterClient::open(paths)
                                : Result<std::unique_ptr<client::ClusterClient>>(written);
  if (!cluster.isOk()) {
    printError(cluster.status().message());
  } else {
    std::printf("submitting %s (%s, %d ranks)\n", spec_path.c_str(),
                job::launcherName(spec.launcher), spec.world_size);
    std::fflush(stdout);
    rc = submitAndWatch(**cluster, spec, /*wait=*/true, /*follow=*/true, /*compact_metrics=*/true);
    printLossSummary(**cluster);
    std::printf(
        "\nhistory: %s\n  ringmasterctl --db %s runs\n  ringmasterctl --db %s metrics "
        "<job> --name loss\n",
        paths.db_file.c_str(), paths.db_file.c_str(), paths.db_file.c_str());
  }
  cluster = Result<std::unique_ptr<client::ClusterClient>>(unavailable("closed"));
  stopLocalAgent(*agent);
  return rc;
}

}  // namespace ringmaster::ctl
