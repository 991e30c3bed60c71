#include <cstdio>

#include "ctl.h"

namespace ringmaster::ctl {

void printError(const std::string& message) {
  std::fprintf(stderr, "ringmasterctl: %s\n", message.c_str());
}

std::unique_ptr<client::ClusterClient> openCluster(const Globals& globals) {
  auto cluster = client::ClusterClient::open(
      client::ClientPaths::resolve(globals.cluster_file, globals.db_file));
  if (!cluster.isOk()) {
    printError(cluster.status().message());
    return nullptr;
  }
  // stop, kill and restart say which busy agents they wait for, as submit does.
  (*cluster)->setWaiting([](const std::string& line) { printError(line); });
  return std::move(*cluster);
}

bool syncQuietly(client::ClusterClient& cluster, const std::vector<std::string>& agents,
                 std::set<std::string>* silent) {
  client::SyncOptions options;
  options.timeout_ms = 0;
  options.request_timeout_ms = 1500;
  auto report = cluster.sync(agents, options);
  if (!report.isOk()) {
    // No agent answered at all (or the history could not be written).
    if (silent && report.status().code() != ErrorCode::kIo) {
      for (const auto& a : cluster.agents()) silent->insert(a.name);
    }
    printError("warning: " + report.status().message() + " (showing the history as it is)");
    return report.status().code() != ErrorCode::kIo;
  }
  for (const auto& [agent, error] : report->agent_errors) {
    // An agent that answered with an error of its own (it cannot write or read its journal)
    // is not silent: what it says about its jobs stands, and `status` asks it why.
    if (silent && error.code() != ErrorCode::kIo) silent->insert(agent);
    printError("warning: " + error.message() + " (its newest records are missing)");
  }
  for (const auto& damage : report->damage) printError("warning: " + damage.describe());
  return true;
}

std::optional<store::JobRow> findJob(client::ClusterClient& cluster, const std::string& job_ref) {
  syncQuietly(cluster);
  auto store = cluster.history();
  if (!store.isOk()) {
    printError(store.status().message());
    return std::nullopt;
  }
  auto job = (*store)->job(job_ref);
  if (!job.isOk()) {
    printError(job.status().message());
    return std::nullopt;
  }
  return *job;
}

}  // namespace ringmaster::ctl
