// `ringmasterctl demo`: the bundled demo job on an embedded local agent, followed live.
// Starts ringmaster-agent (next to this executable) on loopback with a state dir under the
// history's directory, authorizes this client's key there, writes a one-agent cluster file,
// submits the demo spec, streams its logs, prints where to look next, and stops the agent. When
// the desktop app's local agent runs on that state dir, it is used instead and left running.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "ctl.h"
#include "ringmaster/client/local_agent.h"
#include "ringmaster/security/keys.h"

namespace ringmaster::ctl {
namespace {

std::string resourcesDir() { return client::resourcesDir(RINGMASTER_RESOURCES_DIR); }

// "rank 0: loss 8.316 -> 0.00312 over 2000 steps" for the newest job in the history, then
// "accuracy 0.8625 -> 0.9014 over 8 evaluations (rank 0), 0.87 first at 0:25" when it has one.
void printSummary(const std::string& db_file) {
  auto store = store::Reader::open(db_file);
  if (!store.isOk()) return;
  auto jobs = (*store)->jobs();
  if (!jobs.isOk() || jobs->empty()) return;
  const store::JobRow& job = jobs->front();
  store::MetricQuery query;
  query.job_id = job.job_id;
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
  query.name = "accuracy";
  query.rank = 0;
  auto accuracy = (*store)->metrics(query);
  if (!accuracy.isOk() || accuracy->empty()) return;
  std::printf("accuracy %.4f -> %.4f over %zu evaluations (rank 0)", accuracy->front().value,
              accuracy->back().value, accuracy->size());
  constexpr double kGoal = 0.87;  // the demo's mark: Fashion-MNIST's MLPs end near 0.88-0.90
  for (const store::MetricRow& row : *accuracy) {
    if (row.value < kGoal) continue;
    const long seconds = std::lround(std::max(0.0, row.time - job.submitted_at));
    std::printf(", %.2f first at %ld:%02ld after the submit", kGoal, seconds / 60, seconds % 60);
    break;
  }
  std::printf("\n");
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
                                             security::Role::kAdmin, "ringmasterctl demo");
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

  // The desktop app's local agent (same state dir) may be running: use it rather than start a
  // second agent on the same journal, and leave it running.
  std::optional<client::LocalAgent> running = client::findLocalAgent(state_dir);
  client::LocalAgentOptions local;
  local.program = client::executableDir() + "/ringmaster-agent";
  local.state_dir = state_dir;
  auto agent = running ? Result<client::LocalAgent>(*running) : client::startLocalAgent(local);
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
  if (!written.isOk()) {
    printError(written.message());
  } else {
    std::printf("submitting %s (%s, %d ranks)\n", spec_path.c_str(),
                job::launcherName(spec.launcher), spec.world_size);
    std::fflush(stdout);
    rc = submitAndWatch(paths, spec, /*wait=*/true, /*follow=*/true, /*compact_metrics=*/true);
    printSummary(paths.db_file);
    std::printf(
        "\nhistory: %s\n  ringmasterctl --db %s runs\n  ringmasterctl --db %s metrics "
        "<job> --name loss\n",
        paths.db_file.c_str(), paths.db_file.c_str(), paths.db_file.c_str());
  }
  if (!running) client::stopLocalAgent(*agent);
  return rc;
}

}  // namespace ringmaster::ctl
