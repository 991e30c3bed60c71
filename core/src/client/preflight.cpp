#include "ringmaster/client/preflight.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "ringmaster/job/spec.h"
#include "ringmaster/store/store.h"
#include "ringmaster/util/wall_clock.h"

namespace ringmaster::client {
namespace {

constexpr int kInventoryTimeoutMs = 5000;

std::string bytesText(uint64_t bytes) {
  char out[32];
  const double gib = static_cast<double>(bytes) / (1 << 30);
  if (gib >= 1) {
    std::snprintf(out, sizeof out, "%.1f GiB", gib);
  } else {
    std::snprintf(out, sizeof out, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  }
  return out;
}

std::string number(const char* format, double value) {
  char out[32];
  std::snprintf(out, sizeof out, format, value);
  return out;
}

// A job name from agent names: [A-Za-z0-9._-] only, at most 64 characters.
std::string linkJobName(const std::string& a, const std::string& b) {
  std::string name = kPreflightJobPrefix + a + "-" + b;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  }
  return name.substr(0, 64);
}

AgentCheck checkAgent(ClusterClient& cluster, const std::string& name) {
  AgentCheck check;
  check.agent = name;
  const double before = unixSeconds();
  auto answers = cluster.inventories({name}, kInventoryTimeoutMs);
  const double after = unixSeconds();
  const Result<proto::Inventory>& inventory = answers.front().second;
  if (!inventory.isOk()) {
    check.error = inventory.status().message();
    return check;
  }
  const proto::Inventory& inv = *inventory;
  check.cpus = inv.cpus();
  check.load1 = inv.health().load1();
  check.memory_total = inv.health().memory_total_bytes();
  check.memory_used = inv.health().memory_used_bytes();
  check.state_dir = inv.state_dir();
  check.disk_free = inv.state_dir_free_bytes();
  check.disk_total = inv.state_dir_total_bytes();
  check.round_trip_ms = (after - before) * 1000;
  // The agent read its clock between our two readings: the middle is the best guess of when.
  if (inv.agent_time() > 0) check.clock_offset_s = inv.agent_time() - (before + after) / 2;
  check.gpus = inv.gpus_size();
  for (const proto::GpuHealth& gpu : inv.health().gpus()) {
    for (const hardware::GpuFault& fault : hardware::gpuFaults(gpu)) {
      if (fault.severity != hardware::FaultSeverity::kNotice) {
        check.gpu_faults.push_back({gpu.index(), fault});
      }
    }
  }
  return check;
}

Result<job::JobSpec> linkSpec(const std::string& a, const std::string& b,
                              const PreflightOptions& options) {
  const std::string yaml = "name: " + linkJobName(a, b) +
                           "\n"
                           "description: the cluster preflight's link test between " +
                           a + " and " + b +
                           "\n"
                           "launcher: native\n"
                           "placement:\n"
                           "  - {agent: " +
                           a +
                           ", ranks: 1}\n"
                           "  - {agent: " +
                           b +
                           ", ranks: 1}\n"
                           "native:\n"
                           "  link_test: {bytes: " +
                           std::to_string(options.link_bytes) +
                           ", repeats: " + std::to_string(options.link_repeats) + "}\n";
  job::SpecParseResult parsed = job::parseJobSpec(yaml, "preflight");
  if (!parsed.ok()) return invalidArgument(job::formatDiagnostics(parsed.errors));
  return *parsed.spec;
}

// One round: the pairs' link tests run side by side (no agent in two of them), followed until
// each is over or the round's time is up.
void runRound(ClusterClient& cluster, const std::vector<std::pair<int, int>>& pairs,
              const std::vector<std::string>& names, const PreflightOptions& options,
              std::vector<LinkCheck>& out) {
  std::map<std::string, size_t> running;  // job id -> index into out
  std::set<std::string> agents;
  for (const auto& [i, j] : pairs) {
    LinkCheck& link = out.emplace_back();
    link.a = names[static_cast<size_t>(i)];
    link.b = names[static_cast<size_t>(j)];
    auto spec = linkSpec(link.a, link.b, options);
    auto submitted = spec.isOk() ? cluster.submit(*spec) : Result<SubmittedJob>(spec.status());
    if (!submitted.isOk()) {
      link.error = submitted.status().message();
      continue;
    }
    link.job_id = submitted->job_id;
    running[link.job_id] = out.size() - 1;
    agents.insert(link.a);
    agents.insert(link.b);
  }
  if (running.empty()) return;
  std::set<std::string> over;
  SyncOptions follow;
  follow.follow = true;
  follow.poll_wait_ms = 200;
  follow.timeout_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(options.round_timeout).count();
  follow.on_record = [&](const std::string&, const proto::JournalRecord& record) {
    if (record.has_job_outcome() && running.contains(record.job())) over.insert(record.job());
  };
  follow.until = [&] { return over.size() == running.size(); };
  auto synced = cluster.sync({agents.begin(), agents.end()}, follow);
  auto history = cluster.history();
  for (const auto& [job_id, index] : running) {
    LinkCheck& link = out[index];
    if (!over.contains(job_id)) {
      (void)cluster.stop(job_id);
      link.error = "no result within " + std::to_string(options.round_timeout.count()) + " s" +
                   (synced.isOk() ? "" : " (" + synced.status().message() + ")");
      continue;
    }
    if (!history.isOk()) {
      link.error = history.status().message();
      continue;
    }
    store::MetricQuery query;
    query.job_id = job_id;
    query.rank = 0;
    auto metrics = (*history)->metrics(query);
    if (metrics.isOk()) {
      for (const store::MetricRow& row : *metrics) {
        if (row.name == "link_gbps") link.gbps = row.value;
        if (row.name == "link_latency_us") link.latency_us = row.value;
      }
    }
    if (link.gbps > 0) continue;
    // Failed: the agents' first cause says why.
    link.error = "the link test failed";
    if (auto events = (*history)->events(job_id); events.isOk()) {
      for (const store::EventRow& event : *events) {
        if (event.kind == "job_failure" && event.problem) {
          link.error = event.detail;
          break;
        }
      }
    }
  }
}

// Into the history, through the process's one writer; waits until it is written, so that a
// list read next shows it. A failure to store it is the writer's to report (its next flush):
// the check itself is still whole in `report`.
void keep(ClusterClient& cluster, PreflightReport& report) {
  Result<store::BatchWriter*> writer = cluster.writer();
  if (!writer.isOk()) return;
  auto id = std::make_shared<int64_t>(0);
  (*writer)->enqueueWrite([copy = report, id](store::Writer& history) -> Status {
    RM_ASSIGN_OR_RETURN(*id, history.recordPreflight(copy));
    return Status::ok();
  });
  (*writer)->waitWritten();
  report.id = *id;
}

}  // namespace

std::vector<std::vector<std::pair<int, int>>> pairRounds(int n) {
  std::vector<std::vector<std::pair<int, int>>> rounds;
  if (n < 2) return rounds;
  // The circle method: one agent stays put, the others turn; an odd count gets a "bye" slot.
  const int slots = n % 2 == 0 ? n : n + 1;
  std::vector<int> circle(static_cast<size_t>(slots));
  for (int i = 0; i < slots; ++i) circle[static_cast<size_t>(i)] = i;
  for (int round = 0; round < slots - 1; ++round) {
    std::vector<std::pair<int, int>> pairs;
    for (int i = 0; i < slots / 2; ++i) {
      const int a = circle[static_cast<size_t>(i)];
      const int b = circle[static_cast<size_t>(slots - 1 - i)];
      if (a < n && b < n) pairs.emplace_back(std::min(a, b), std::max(a, b));
    }
    std::sort(pairs.begin(), pairs.end());
    rounds.push_back(std::move(pairs));
    std::rotate(circle.begin() + 1, circle.end() - 1, circle.end());
  }
  return rounds;
}

std::vector<std::vector<std::pair<int, int>>> linkRounds(int n, uint64_t seed) {
  if (n <= kAllPairsUpTo) return pairRounds(n);
  std::set<std::pair<int, int>> chosen;
  std::vector<std::vector<std::pair<int, int>>> rounds;
  auto add = [&](std::vector<std::pair<int, int>>& round, int a, int b) {
    const std::pair<int, int> pair(std::min(a, b), std::max(a, b));
    if (chosen.insert(pair).second) round.push_back(pair);
  };
  // The ring: edge i joins i and i+1. Even edges, then odd ones, share no agent; for odd n the
  // closing edge (n-1, 0) meets edge 0 and edge n-2 and gets a round of its own.
  std::vector<std::pair<int, int>> even, odd, closing;
  for (int i = 0; i < n; ++i) {
    if (i == n - 1 && n % 2 == 1) {
      add(closing, i, 0);
    } else {
      add(i % 2 == 0 ? even : odd, i, (i + 1) % n);
    }
  }
  for (auto* round : {&even, &odd, &closing}) {
    if (!round->empty()) rounds.push_back(std::move(*round));
  }
  std::mt19937_64 random(seed);
  std::vector<int> order(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  for (int r = 0; r < kSampledRounds; ++r) {
    std::shuffle(order.begin(), order.end(), random);
    std::vector<std::pair<int, int>> round;
    for (size_t i = 0; i + 1 < order.size(); i += 2) add(round, order[i], order[i + 1]);
    std::sort(round.begin(), round.end());
    rounds.push_back(std::move(round));
  }
  return rounds;
}

std::vector<std::string> preflightVerdict(const PreflightReport& report,
                                          const PreflightOptions& options) {
  std::vector<std::string> problems;
  for (const AgentCheck& agent : report.agents) {
    if (!agent.error.empty()) {
      problems.push_back(agent.agent + ": could not be checked: " + agent.error);
      continue;
    }
    for (const AgentCheck::Fault& f : agent.gpu_faults) {
      problems.push_back(agent.agent + " GPU " + std::to_string(f.gpu) + ": " + f.fault.text);
    }
    const bool low_disk = agent.disk_total > 0 && (agent.disk_free < options.min_free_bytes ||
                                                   static_cast<double>(agent.disk_free) <
                                                       options.min_free_share * agent.disk_total);
    if (low_disk) {
      problems.push_back(agent.agent + ": " + bytesText(agent.disk_free) + " free of " +
                         bytesText(agent.disk_total) + " in " + agent.state_dir +
                         " (its jobs' logs, checkpoints and work directories)");
    }
    if (std::abs(agent.clock_offset_s) > options.max_clock_offset_s) {
      problems.push_back(agent.agent + ": its clock is " +
                         number("%.1f", std::abs(agent.clock_offset_s)) + " s " +
                         (agent.clock_offset_s > 0 ? "ahead of" : "behind") +
                         " this client's (timelines across hosts will not line up)");
    }
  }
  std::vector<const LinkCheck*> slow;
  // Per agent: its measured links, and the slow ones among them.
  std::map<std::string, std::pair<int, std::vector<double>>> by_agent;
  for (const LinkCheck& link : report.links) {
    if (!link.error.empty()) {
      problems.push_back("link " + link.a + " <-> " + link.b + ": no result: " + link.error);
      continue;
    }
    const bool is_slow =
        report.median_gbps > 0 && link.gbps < options.slow_link_share * report.median_gbps;
    for (const std::string* end : {&link.a, &link.b}) {
      auto& [measured, slow_rates] = by_agent[*end];
      ++measured;
      if (is_slow) slow_rates.push_back(link.gbps);
    }
    if (is_slow) slow.push_back(&link);
  }
  std::set<std::string> slow_hosts;
  for (const auto& [agent, links] : by_agent) {
    const auto& [measured, slow_rates] = links;
    if (measured < 2 || static_cast<int>(slow_rates.size()) < measured) continue;
    slow_hosts.insert(agent);
    const auto [low, high] = std::minmax_element(slow_rates.begin(), slow_rates.end());
    problems.push_back(agent + ": every link slow (" + std::to_string(measured) + " of " +
                       std::to_string(measured) + ", " + number("%.3g", *low) + "-" +
                       number("%.3g", *high) + " GB/s, the median pair " +
                       number("%.3g", report.median_gbps) +
                       " GB/s): its network interface or its switch port");
  }
  std::erase_if(slow, [&](const LinkCheck* link) {
    return slow_hosts.contains(link->a) || slow_hosts.contains(link->b);
  });
  std::sort(slow.begin(), slow.end(),
            [](const auto* a, const auto* b) { return a->gbps < b->gbps; });
  for (const LinkCheck* link : slow) {
    problems.push_back("link " + link->a + " <-> " + link->b + ": " + number("%.3g", link->gbps) +
                       " GB/s, the median pair " + number("%.3g", report.median_gbps) + " GB/s");
  }
  return problems;
}

Result<PreflightReport> runPreflight(ClusterClient& cluster, const PreflightOptions& options) {
  const double start = unixSeconds();
  std::vector<std::string> names = options.agents;
  std::vector<std::string> known;
  for (const AgentEndpoint& agent : cluster.agents()) known.push_back(agent.name);
  if (names.empty()) names = known;
  if (names.empty()) {
    return invalidArgument(
        "the cluster file has no agent to check (add one: ringmasterctl "
        "cluster add NAME ENDPOINT KEY)");
  }
  for (const std::string& name : names) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      return notFound("unknown agent '" + name + "'; the cluster file has: " + list);
    }
  }
  auto say = [&](const std::string& what) {
    if (options.progress) options.progress(what);
  };
  PreflightReport report;
  report.started_at = start;
  say("checking " + std::to_string(names.size()) + " agent(s)");
  std::vector<std::string> reachable;
  for (const std::string& name : names) {
    report.agents.push_back(checkAgent(cluster, name));
    if (report.agents.back().error.empty()) reachable.push_back(name);
  }
  if (options.links) {
    const auto rounds =
        linkRounds(static_cast<int>(reachable.size()), static_cast<uint64_t>(start * 1000));
    for (size_t r = 0; r < rounds.size(); ++r) {
      std::string pairs;
      constexpr size_t kPairsNamed = 4;  // a round of 1,000 agents has 500 pairs
      for (size_t p = 0; p < std::min(rounds[r].size(), kPairsNamed); ++p) {
        const auto& [i, j] = rounds[r][p];
        pairs += (pairs.empty() ? "" : ", ") + reachable[static_cast<size_t>(i)] + " <-> " +
                 reachable[static_cast<size_t>(j)];
      }
      if (rounds[r].size() > kPairsNamed) {
        pairs += " (+" + std::to_string(rounds[r].size() - kPairsNamed) + " more)";
      }
      say("link tests, round " + std::to_string(r + 1) + " of " + std::to_string(rounds.size()) +
          ": " + pairs);
      runRound(cluster, rounds[r], reachable, options, report.links);
    }
  }
  std::vector<double> rates;
  for (const LinkCheck& link : report.links) {
    if (link.error.empty()) rates.push_back(link.gbps);
  }
  if (!rates.empty()) {
    std::sort(rates.begin(), rates.end());
    const size_t mid = rates.size() / 2;
    report.median_gbps = rates.size() % 2 ? rates[mid] : (rates[mid - 1] + rates[mid]) / 2;
  }
  report.problems = preflightVerdict(report, options);
  report.seconds = unixSeconds() - start;
  keep(cluster, report);
  return report;
}

}  // namespace ringmaster::client
