// bench_recovery: how fast the agents of a 4-rank native job on 2 agents recover, with no client
// connected, from kill -9 of one rank: (a) detection (the failed rank's exit journaled), (b) every
// rank of the attempt gone, (c) every rank of the next attempt training again (its first step,
// after its checkpoint load). And from kill -9 of an agent: detection by the other (JobFailure
// "agent lost"). Times come from the records' own clocks (same host) against the kill.
//
// Peer, same run: torchrun (python3-torch) restarting a killed local worker of 2 (Gloo), from the
// kill to every worker of the next attempt past init_process_group, with its default monitor
// interval and with 0.1 s. Debian's torch 1.13 on Python 3.11 needs --redirects 1 --tee 1 (its
// Std.from_str("0") is None there, and torchrun fails at start without them).
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <vector>

#include "harness.h"
#include "ringmaster/store/store.h"

using namespace ringmaster;
using namespace ringmaster::testing;
using nlohmann::json;

namespace {

constexpr int kRuns = 3;

double median(std::vector<double> values) {
  if (values.empty()) return -1;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct Recovery {
  double detect_ms = -1, teardown_ms = -1, resume_ms = -1, agent_detect_ms = -1;
};

class Bench {
 public:
  bool start(std::string* error) {
    return cluster_.addAgent("a1", 2, error) && cluster_.addAgent("a2", 2, error);
  }

  std::optional<std::string> submit(const std::string& name) {
    const std::string spec =
        interruptibleNativeSpec(name, "{max_restarts: 1, backoff_seconds: 0, min_nodes: 1}");
    auto submitted = cluster_.ctl({"submit", cluster_.writeSpec(name + ".yaml", spec)});
    if (submitted.exit_code != 0) {
      std::fprintf(stderr, "bench_recovery: submit of %s failed: %s\n", name.c_str(),
                   submitted.err.c_str());
      return std::nullopt;
    }
    return submitted.firstLine();
  }

  bool trainedPast(const std::string& agent, const std::string& job, int rank, int64_t step) {
    const std::string log = cluster_.agent(agent).stateDir() + "/jobs/" + job + "/attempt-1/rank-" +
                            std::to_string(rank) + ".log";
    return waitUntil([&] { return newestMetricStep(readFile(log)) >= step; },
                     std::chrono::seconds(60));
  }

  json status(const std::string& job) {
    auto parsed = json::parse(cluster_.ctl({"status", job, "--json"}).out, nullptr, false);
    return parsed.is_object() ? parsed : json::object();
  }

  // Stops the job and waits until its ranks are gone, so that the next run finds free slots.
  // Until every rank has ended and given its slot back (the job reads stopped as soon as its
  // leader decides, while its ranks still end).
  void stop(const std::string& job) {
    cluster_.ctl({"stop", job, "--wait"});
    waitUntil(
        [&] {
          const std::string state = status(job).value("state", "");
          return state == "stopped" || state == "failed" || state == "succeeded";
        },
        std::chrono::seconds(30));
  }

  std::vector<store::EventRow> events(const std::string& job) {
    auto history = store::Reader::open(cluster_.dbPath());
    if (!history.isOk()) return {};
    auto rows = (*history)->events(job);
    return rows.isOk() ? *rows : std::vector<store::EventRow>{};
  }

  // kill -9 of rank 1 (on a1); waits until every rank of attempt 2 has made a step.
  std::optional<Recovery> killRank(int run) {
    auto job = submit("rank" + std::to_string(run));
    if (!job) return std::nullopt;
    if (!trainedPast("a1", *job, 1, 40)) {
      std::fprintf(stderr, "bench_recovery: rank 1 of %s did not reach step 40 in 60 s\n",
                   job->c_str());
      return std::nullopt;
    }
    pid_t pid = -1;
    for (const auto& r : status(*job).value("ranks", json::array())) {
      if (r["rank"] == 1) pid = r["pid"].get<pid_t>();
    }
    if (pid <= 0) return std::nullopt;
    const double killed_at = unixSeconds();
    ::kill(pid, SIGKILL);
    // Every rank of attempt 2 has a metric, then the job is stopped (its end is not measured).
    json loss;
    const bool resumed = waitUntil(
        [&] {
          status(*job);  // syncs
          loss =
              json::parse(cluster_.ctl({"metrics", *job, "--name", "loss", "--format", "json"}).out,
                          nullptr, false);
          std::set<int> ranks;
          for (const auto& row : loss) {
            if (row["attempt"] == 2) ranks.insert(row["rank"].get<int>());
          }
          return ranks.size() == 4;
        },
        std::chrono::seconds(60));
    stop(*job);
    if (!resumed) {
      std::fprintf(stderr, "bench_recovery: %s: not every rank of attempt 2 trained within 60 s\n",
                   job->c_str());
      return std::nullopt;
    }
    Recovery r;
    std::map<int, double> first_step;
    for (const auto& row : loss) {
      if (row["attempt"] != 2) continue;
      const int rank = row["rank"].get<int>();
      const double time = row["time"].get<double>();
      if (!first_step.count(rank) || time < first_step[rank]) first_step[rank] = time;
    }
    for (const auto& [rank, time] : first_step) {
      r.resume_ms = std::max(r.resume_ms, (time - killed_at) * 1000);
    }
    for (const auto& e : events(*job)) {
      if (e.attempt != 1 || e.kind != "rank_exited") continue;
      const double ms = (e.time - killed_at) * 1000;
      if (e.detail.find(" failed") != std::string::npos && r.detect_ms < 0) r.detect_ms = ms;
      r.teardown_ms = std::max(r.teardown_ms, ms);
    }
    return r;
  }

  // kill -9 of agent a2: how long until a1 journals it lost. a2 comes back for the next run.
  double killAgent(int run) {
    auto job = submit("agent" + std::to_string(run));
    if (!job || !trainedPast("a2", *job, 2, 40)) return -1;
    const double killed_at = unixSeconds();
    cluster_.agent("a2").kill();
    double detected = -1;
    waitUntil(
        [&] {
          status(*job);
          for (const auto& e : events(*job)) {
            if (e.kind == "job_failure" && e.detail.find("agent a2 lost") != std::string::npos) {
              detected = (e.time - killed_at) * 1000;
            }
          }
          return detected >= 0;
        },
        std::chrono::seconds(30));
    stop(*job);
    std::string error;
    cluster_.crashAndRestartAgent("a2", &error);
    return detected;
  }

 private:
  Cluster cluster_;
};

// torchrun's restart of a killed local worker, kill to every worker past init_process_group.
double torchrunRestartMs(const std::string& monitor_interval) {
  TempDir dir;
  const std::string out = dir.path() + "/out";
  std::vector<std::string> argv = {"/usr/bin/python3",
                                   "-m",
                                   "torch.distributed.run",
                                   "--standalone",
                                   "--nproc_per_node=2",
                                   "--max_restarts=1",
                                   "--redirects",
                                   "1",
                                   "--tee",
                                   "1"};
  if (!monitor_interval.empty()) argv.insert(argv.end(), {"--monitor_interval", monitor_interval});
  argv.insert(argv.end(), {sourcePath("tests/bench/torchrun_restart_peer.py"), out});
  if (runCommand(argv, {}, 120000).exit_code != 0) return -1;
  std::istringstream lines(readFile(out));
  std::string word;
  double killed = -1, ready = -1;
  while (lines >> word) {
    if (word == "kill") {
      lines >> killed;
    } else if (word == "ready") {
      int restart = 0, rank = 0;
      double time = 0;
      lines >> restart >> rank >> time;
      if (restart == 1) ready = std::max(ready, time);
    }
  }
  return killed > 0 && ready > 0 ? (ready - killed) * 1000 : -1;
}

}  // namespace

int main() {
  Bench bench;
  std::string error;
  if (!bench.start(&error)) {
    std::fprintf(stderr, "bench_recovery: %s\n", error.c_str());
    return 1;
  }
  std::vector<double> detect, teardown, resume, agent_detect, torch_default, torch_fast;
  for (int run = 0; run < kRuns; ++run) {
    auto r = bench.killRank(run);
    if (!r) {
      std::fprintf(stderr, "bench_recovery: run %d did not recover\n", run);
      return 1;
    }
    std::printf("rank kill %d: detect %.0f ms, teardown %.0f ms, resume %.0f ms\n", run,
                r->detect_ms, r->teardown_ms, r->resume_ms);
    detect.push_back(r->detect_ms);
    teardown.push_back(r->teardown_ms);
    resume.push_back(r->resume_ms);
  }
  for (int run = 0; run < kRuns; ++run) {
    const double ms = bench.killAgent(run);
    std::printf("agent kill %d: detect %.0f ms\n", run, ms);
    if (ms >= 0) agent_detect.push_back(ms);
  }
  const bool have_torch =
      runCommand({"/usr/bin/python3", "-c", "import torch.distributed"}).exit_code == 0;
  for (int run = 0; have_torch && run < kRuns; ++run) {
    torch_default.push_back(torchrunRestartMs(""));
    torch_fast.push_back(torchrunRestartMs("0.1"));
    std::printf("torchrun %d: restart %.0f ms (default monitor), %.0f ms (0.1 s)\n", run,
                torch_default.back(), torch_fast.back());
  }
  const double resume_ms = median(resume);
  const double torch_ms = median(torch_default);
  std::printf(
      "RESULT detect_ms=%.0f teardown_ms=%.0f resume_ms=%.0f agent_detect_ms=%.0f "
      "torchrun_restart_ms=%.0f torchrun_restart_fast_ms=%.0f ratio_resume_vs_torchrun=%.2f "
      "runs=%d\n",
      median(detect), median(teardown), resume_ms, median(agent_detect), torch_ms,
      median(torch_fast), torch_ms > 0 && resume_ms > 0 ? torch_ms / resume_ms : 0.0, kRuns);
  return 0;
}
