// ringmasterctl preflight: the cluster checked before a job meets its bad host
// (ringmaster/client/preflight.h): a table per agent, the link matrix, and the verdict.
#include <cmath>
#include <cstdio>
#include <cstdlib>
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

json reportJson(const client::PreflightReport& report) {
  json agents = json::array(), links = json::array();
  for (const auto& a : report.agents) agents.push_back(agentJson(a));
  for (const auto& l : report.links) {
    links.push_back({{"a", l.a},
                     {"b", l.b},
                     {"job", l.job_id},
                     {"error", l.error},
                     {"gbps", l.gbps},
                     {"latency_us", l.latency_us}});
  }
  return {{"id", report.id},
          {"started_at", report.started_at},
          {"agents", agents},
          {"links", links},
          {"median_gbps", report.median_gbps},
          {"problems", report.problems},
          {"seconds", report.seconds}};
}

void printReport(const client::PreflightReport& report) {
  printAgents(report);
  if (!report.links.empty()) printLinks(report);
  std::printf("\n");
  if (report.problems.empty()) {
    std::printf("all clear: %zu agent(s), %zu link(s) checked in %.1f s\n", report.agents.size(),
                report.links.size(), report.seconds);
  }
  for (const auto& problem : report.problems) {
    std::printf("problem: %s\n", terminalSafe(problem).c_str());
  }
}

// --history and --show: the checks kept in the history, read without asking any agent.
int showKept(const Globals& globals, const PreflightFlags& flags) {
  auto paths = client::ClientPaths::resolve(globals.cluster_file, globals.db_file);
  auto history = store::Reader::open(paths.db_file);
  if (!history.isOk()) {
    printError(history.status().message());
    return kExitFailure;
  }
  const bool one = !flags.show.empty();
  int64_t wanted = 0;
  if (one && flags.show != "last") {
    char* end = nullptr;
    wanted = std::strtoll(flags.show.c_str(), &end, 10);
    if (end == flags.show.c_str() || *end != '\0' || wanted <= 0) {
      printError("--show takes a check's number (see --history) or 'last', not '" + flags.show +
                 "'");
      return kExitBadInput;
    }
  }
  auto kept = (*history)->preflights(one ? 1 : 50, wanted);
  if (!kept.isOk()) {
    printError(kept.status().message());
    return kExitFailure;
  }
  if (one) {
    if (kept->empty()) {
      printError(wanted == 0 ? "no preflight is kept in the history yet (run: ringmasterctl "
                               "preflight)"
                             : "no preflight " + flags.show + " in the history (see --history)");
      return kExitBadInput;
    }
    const client::PreflightReport& report = kept->front();
    if (flags.json) {
      std::printf("%s\n", reportJson(report).dump(2).c_str());
    } else {
      std::printf("preflight %lld of %s\n", static_cast<long long>(report.id),
                  formatTime(report.started_at).c_str());
      printReport(report);
    }
    return kExitOk;
  }
  if (flags.json) {
    json out = json::array();
    for (const auto& report : *kept) out.push_back(reportJson(report));
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  Table table({"#", "STARTED", "AGENTS", "LINKS", "MEDIAN GB/S", "VERDICT"});
  for (const auto& report : *kept) {
    std::string verdict = report.problems.empty() ? "all clear"
                                                  : std::to_string(report.problems.size()) +
                                                        " problem(s): " + report.problems.front();
    constexpr size_t kVerdictWidth = 90;  // the whole is one --show away
    if (verdict.size() > kVerdictWidth) {
      size_t cut = kVerdictWidth - 3;
      while (cut > 0 && (static_cast<unsigned char>(verdict[cut]) & 0xC0) == 0x80) --cut;
      verdict = verdict.substr(0, cut) + "...";  // not inside a UTF-8 character
    }
    table.add({std::to_string(report.id), formatTime(report.started_at),
               std::to_string(report.agents.size()), std::to_string(report.links.size()),
               report.links.empty() ? "-" : cell("%.3g", report.median_gbps), verdict});
  }
  std::printf("%s", table.render().c_str());
  if (kept->empty()) std::printf("no preflight kept yet (run: ringmasterctl preflight)\n");
  return kExitOk;
}

}  // namespace

int runPreflightCommand(const Globals& globals, const PreflightFlags& flags) {
  if (flags.history || !flags.show.empty()) return showKept(globals, flags);
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
    std::printf("%s\n", reportJson(*report).dump(2).c_str());
  } else {
    printReport(*report);
    if (report->id > 0) {
      std::printf("kept in the history as preflight %lld (ringmasterctl preflight --show %lld)\n",
                  static_cast<long long>(report->id), static_cast<long long>(report->id));
    }
  }
  return report->problems.empty() ? kExitOk : kExitFailure;
}

}  // namespace ringmaster::ctl
