// ringmasterctl preflight: the cluster checked before a job meets its bad host
// (ringmaster/client/preflight.h): a table per agent, the link matrix, and the verdict.
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "ctl.h"
#include "ringmaster/client/preflight.h"
#include "table.h"
#include "terminal_safe.h"

namespace ringmaster::ctl {
namespace {

using nlohmann::json;

json agentJson(const client::AgentCheck& a) {
  json faults = json::array();
  for (const auto& f : a.gpu_faults) {
    faults.push_back({{"gpu", f.gpu},
                      {"kind", f.fault.kind},
                      {"severity", hardware::severityName(f.fault.severity)},
                      {"text", f.fault.text}});
  }
  return {{"agent", a.agent},
          {"error", a.error},
          {"cpus", a.cpus},
          {"load1", a.load1},
          {"memory_total_bytes", a.memory_total},
          {"memory_used_bytes", a.memory_used},
          {"state_dir", a.state_dir},
          {"disk_free_bytes", a.disk_free},
          {"disk_total_bytes", a.disk_total},
          {"clock_offset_s", a.clock_offset_s},
          {"round_trip_ms", a.round_trip_ms},
          {"gpus", a.gpus},
          {"gpu_faults", faults}};
}

std::string cell(const char* format, double value) {
  char out[32];
  std::snprintf(out, sizeof out, format, value);
  return out;
}

void printAgents(const client::PreflightReport& report) {
  Table table({"AGENT", "CPUS", "LOAD", "MEMORY USED", "DISK FREE (STATE DIR)", "CLOCK", "GPUS"});
  for (const auto& a : report.agents) {
    if (!a.error.empty()) {
      table.add({a.agent, "-", "-", "-", "-", "-", "-"});
      continue;
    }
    table.add(
        {a.agent, std::to_string(a.cpus), cell("%.1f", a.load1),
         formatBytes(static_cast<double>(a.memory_used)) + " / " +
             formatBytes(static_cast<double>(a.memory_total)),
         formatBytes(static_cast<double>(a.disk_free)) + " / " +
             formatBytes(static_cast<double>(a.disk_total)),
         cell("%+.3f s", a.clock_offset_s),
         std::to_string(a.gpus) +
             (a.gpu_faults.empty() ? ""
                                   : " (" + std::to_string(a.gpu_faults.size()) + " fault(s))")});
  }
  std::printf("%s", table.render().c_str());
}

// Bandwidth between each pair, GB/s (the matrix is symmetric: one test per pair).
void printLinks(const client::PreflightReport& report) {
  std::vector<std::string> names;
  for (const auto& a : report.agents) {
    if (a.error.empty()) names.push_back(a.agent);
  }
  std::vector<std::string> header = {"GB/s"};
  header.insert(header.end(), names.begin(), names.end());
  Table table(header);
  for (const auto& row : names) {
    std::vector<std::string> cells = {row};
    for (const auto& column : names) {
      std::string text = row == column ? "-" : "";
      for (const auto& link : report.links) {
        if (!((link.a == row && link.b == column) || (link.a == column && link.b == row))) continue;
        text = link.error.empty() ? cell("%.3g", link.gbps) : "failed";
      }
      cells.push_back(text);
    }
    table.add(cells);
  }
  std::printf("\nlinks (a 2-rank Gloo allreduce per pair; median %.3g GB/s):\n%s",
              report.median_gbps, table.render().c_str());
}

}  // namespace

int runPreflightCommand(const Globals& globals, const PreflightFlags& flags) {
  auto cluster = openCluster(globals);
  if (!cluster) return kExitFailure;
  client::PreflightOptions options;
  options.agents = flags.agents;
  options.links = !flags.no_links;
  if (!flags.json) {
    options.progress = [](const std::string& what) {
      std::fprintf(stderr, "%s...\n", what.c_str());
    };
  }
  auto report = client::runPreflight(*cluster, options);
  if (!report.isOk()) {
    printError(report.status().message());
    return report.status().code() == ErrorCode::kInvalidArgument ||
                   report.status().code() == ErrorCode::kNotFound
               ? kExitBadInput
               : kExitFailure;
  }
  if (flags.json) {
    json agents = json::array(), links = json::array();
    for (const auto& a : report->agents) agents.push_back(agentJson(a));
    for (const auto& l : report->links) {
      links.push_back({{"a", l.a},
                       {"b", l.b},
                       {"job", l.job_id},
                       {"error", l.error},
                       {"gbps", l.gbps},
                       {"latency_us", l.latency_us}});
    }
    json out = {{"agents", agents},
                {"links", links},
                {"median_gbps", report->median_gbps},
                {"problems", report->problems},
                {"seconds", report->seconds}};
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    printAgents(*report);
    if (!report->links.empty()) printLinks(*report);
    std::printf("\n");
    if (report->problems.empty()) {
      std::printf("all clear: %zu agent(s), %zu link(s) checked in %.1f s\n", report->agents.size(),
                  report->links.size(), report->seconds);
    }
    for (const auto& problem : report->problems) {
      std::printf("problem: %s\n", terminalSafe(problem).c_str());
    }
  }
  return report->problems.empty() ? kExitOk : kExitFailure;
}

}  // namespace ringmaster::ctl
