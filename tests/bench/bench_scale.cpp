// bench_scale: one job over many agents. N agents on loopback (each its own process, state dir
// and port), one `command` job of R ranks of /bin/sh printing 100 metric lines each, submitted
// with `ringmasterctl submit --wait`: submit-to-done time, metric rows stored (every one
// expected), and the agents' resident memory, beside `mpirun -np R` of the same command in the
// same run. Usage: bench_scale [--no-mpirun] [--slow K] [--hold S] [AGENTS:RANKS ...] (default
// 8:64 32:256 128:1024). Then one rank of `sleep S` (6) on every agent: the gang's standing cost,
// the agents' CPU per second while it runs (the leader's, the median's, the busiest's).
// With --slow K, K agents are stopped in bursts (2.5 s stopped, 50 ms running: alive, their
// connections up, but their loops far behind) while the first job runs, submitted with
// --agent-timeout 1: it must still succeed with every row, and its progress lines name them.
// Needs about 8 open files per rank and 40 per agent (ulimit -n), and R + 10 N processes.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "ringmaster/store/store.h"

using namespace ringmaster::testing;

namespace {

// What every rank runs: 100 JSON metric lines, as a training script would print them.
constexpr const char* kScript =
    "i=0; while [ $i -lt 100 ]; do echo \"{\\\"step\\\": $i, \\\"loss\\\": 0.5}\"; "
    "i=$((i+1)); done";
constexpr int kLinesPerRank = 100;

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// VmRSS of a process in MiB (0 when it is gone).
double rssMiB(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      double kib = 0;
      status >> kib;
      return kib / 1024.0;
    }
    status.ignore(1 << 12, '\n');
  }
  return 0;
}

// CPU seconds a process's threads have run so far, to the nanosecond: the sum over its threads of
// /proc/PID/task/TID/schedstat's first field. /proc/PID/stat's utime + stime count 10 ms ticks,
// and an agent uses 20-50 ms in a 6 s hold: a leader at 4 ticks against a median at 2 read
// "2.00x" whatever the truth. An agent's threads live as long as it does (its ranks are
// processes), so none of its time leaves with an exited thread.
double cpuSeconds(pid_t pid) {
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  double nanoseconds = 0;
  for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) {
    std::ifstream schedstat(task.path() / "schedstat");
    double on_cpu = 0;
    if (schedstat >> on_cpu) nanoseconds += on_cpu;
  }
  return nanoseconds / 1e9;
}

long long countRows(const std::string& db_path, const std::string& job) {
  auto history = ringmaster::store::Reader::open(db_path);
  if (!history.isOk()) return -1;
  ringmaster::store::MetricQuery query;
  query.job_id = job;
  auto rows = (*history)->metrics(query);
  return rows.isOk() ? static_cast<long long>(rows->size()) : -1;
}

struct Point {
  int agents = 0;
  int ranks = 0;
};

struct Options {
  bool with_mpirun = true;
  int slowed = 0;                       // --slow K
  int hold_seconds = 6;                 // --hold S: the sleeping job's length
  std::vector<std::string> agent_args;  // --agent-arg ARG, repeated: given to every agent
};

// Stops `pids` in bursts until destroyed: 2.5 s stopped (under libzmq's 3 s heartbeat timeout,
// so their connections stay up), 50 ms running.
class StopBursts {
 public:
  explicit StopBursts(std::vector<pid_t> pids) : pids_(std::move(pids)) {
    if (pids_.empty()) return;
    thread_ = std::thread([this] {
      while (!done_) {
        for (pid_t pid : pids_) ::kill(pid, SIGSTOP);
        for (int i = 0; i < 25 && !done_; ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        for (pid_t pid : pids_) ::kill(pid, SIGCONT);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  }
  ~StopBursts() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
    for (pid_t pid : pids_) ::kill(pid, SIGCONT);
  }

 private:
  std::vector<pid_t> pids_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// The line of `text` holding `needle`, the first one; "" when none does.
std::string lineWith(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  if (at == std::string::npos) return "";
  const size_t begin = text.rfind('\n', at) == std::string::npos ? 0 : text.rfind('\n', at) + 1;
  return text.substr(begin, text.find('\n', at) - begin);
}

// Of the `slowed` agents, how many the submit's "waiting for" lines named.
int namedInWaitingLines(const std::string& err, const std::vector<std::string>& slowed) {
  std::set<std::string> named;
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("waiting for ") == std::string::npos) continue;
    for (const std::string& agent : slowed) {
      if (line.find(" " + agent + ",") != std::string::npos ||
          line.find(" " + agent + " ") != std::string::npos) {
        named.insert(agent);
      }
    }
  }
  return static_cast<int>(named.size());
}

bool runPoint(const Point& point, const Options& options) {
  const int slots = (point.ranks + point.agents - 1) / point.agents;
  Cluster cluster;
  std::string error;
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < point.agents; ++i) {
    if (!cluster.addAgent("s" + std::to_string(i), slots, &error, options.agent_args)) {
      std::fprintf(stderr, "bench_scale: agent %d: %s\n", i, error.c_str());
      return false;
    }
  }
  const double agents_ms = msSince(started);
  const std::string spec = cluster.writeSpec(
      "scale.yaml", "name: scale\nlauncher: command\nworld_size: " + std::to_string(point.ranks) +
                        "\ncommand: [/bin/sh, -c, '" + kScript + "']\n");

  std::vector<double> cpu_before;
  for (int i = 0; i < point.agents; ++i) {
    cpu_before.push_back(cpuSeconds(cluster.agent("s" + std::to_string(i)).pid()));
  }
  // The slowed agents: spread over the line, never the leader (s0).
  std::vector<std::string> slowed;
  std::vector<pid_t> slowed_pids;
  for (int k = 0; k < std::min(options.slowed, point.agents - 1); ++k) {
    const int i = point.agents - 1 - k * (point.agents - 1) / std::max(1, options.slowed);
    slowed.push_back("s" + std::to_string(i));
    slowed_pids.push_back(cluster.agent(slowed.back()).pid());
  }
  std::vector<std::string> submit_args = {"submit", spec, "--wait"};
  if (!slowed.empty()) submit_args.insert(submit_args.end(), {"--agent-timeout", "1"});
  const auto submitted = std::chrono::steady_clock::now();
  CommandResult result;
  {
    StopBursts bursts(slowed_pids);
    result = cluster.ctl(submit_args, 600000);
  }
  const double submit_ms = msSince(submitted);
  const int named = namedInWaitingLines(result.err, slowed);
  if (!slowed.empty()) {
    const std::string first = lineWith(result.err, "waiting for");
    std::printf("%zu agents slowed; the submit's first waiting line: %s\n", slowed.size(),
                first.empty() ? "(none)" : first.c_str());
  }
  const std::string job = result.firstLine();
  const long long expected = static_cast<long long>(point.ranks) * kLinesPerRank;
  const long long rows = countRows(cluster.dbPath(), job);
  if (result.exit_code != 0 || rows != expected) {
    // What the agents said of losses and slow peers: a failed job at scale is mostly one of them.
    for (int i = 0; i < point.agents; ++i) {
      std::istringstream log(cluster.agent("s" + std::to_string(i)).stderrText());
      for (std::string line; std::getline(log, line);) {
        if (line.find(" lost") != std::string::npos || line.find("busy") != std::string::npos) {
          std::fprintf(stderr, "s%d: %s\n", i, line.c_str());
        }
      }
    }
    std::fprintf(stderr, "bench_scale: %d ranks on %d agents: submit failed (exit %d): %s%s%s\n",
                 point.ranks, point.agents, result.exit_code, result.out.c_str(),
                 result.err.c_str(), cluster.ctl({"status", job}).out.substr(0, 3000).c_str());
  }

  // The leader (s0, first in line) against the median agent: a star's hub pays O(N), a tree's
  // (gang_tree.h) inner agents pay for their fan-out (the busiest one is printed too).
  double rss_max = 0, rss_sum = 0;
  std::vector<double> cpu_used;
  for (int i = 0; i < point.agents; ++i) {
    const pid_t pid = cluster.agent("s" + std::to_string(i)).pid();
    const double rss = rssMiB(pid);
    rss_max = std::max(rss_max, rss);
    rss_sum += rss;
    cpu_used.push_back(cpuSeconds(pid) - cpu_before[i]);
  }
  const double leader_cpu_ms = 1000 * cpu_used[0];
  std::sort(cpu_used.begin(), cpu_used.end());
  const double median_cpu_ms = 1000 * cpu_used[cpu_used.size() / 2];

  // The gang's standing cost: one rank of `sleep` on every agent for --hold seconds, the agents'
  // CPU over that time (launch and exits included) in ms per second.
  std::string placement = "placement: [";
  for (int i = 0; i < point.agents; ++i) {
    placement += (i ? ", " : "") + std::string("{agent: s") + std::to_string(i) + ", ranks: 1}";
  }
  const std::string hold_spec = cluster.writeSpec(
      "hold.yaml", "name: hold\nlauncher: command\ncommand: [/bin/sleep, '" +
                       std::to_string(options.hold_seconds) + "']\n" + placement + "]\n");
  for (int i = 0; i < point.agents; ++i) {
    cpu_before[i] = cpuSeconds(cluster.agent("s" + std::to_string(i)).pid());
  }
  const auto hold_started = std::chrono::steady_clock::now();
  const CommandResult hold = cluster.ctl({"submit", hold_spec, "--wait"}, 600000);
  const double hold_s = msSince(hold_started) / 1000;
  if (hold.exit_code != 0) {
    std::fprintf(stderr, "bench_scale: the sleep job failed: %s%s%s\n", hold.out.c_str(),
                 hold.err.substr(0, 2000).c_str(),
                 cluster.ctl({"status", hold.firstLine()}).out.substr(0, 3000).c_str());
  }
  std::vector<double> hold_cpu;
  for (int i = 0; i < point.agents; ++i) {
    hold_cpu.push_back(cpuSeconds(cluster.agent("s" + std::to_string(i)).pid()) - cpu_before[i]);
  }
  const double leader_hold = 1000 * hold_cpu[0] / hold_s;
  std::sort(hold_cpu.begin(), hold_cpu.end());
  const double median_hold = 1000 * hold_cpu[hold_cpu.size() / 2] / hold_s;
  const double busiest_hold = 1000 * hold_cpu.back() / hold_s;

  // Open MPI 4.1 under --oversubscribe now and then prints everything and never exits (1 run in
  // 4 at 128 ranks here): the best of three runs, each given 30 s.
  double mpirun_ms = 0;
  int mpirun_hung = 0;
  for (int run = 0; options.with_mpirun && run < 3; ++run) {
    const auto mpirun_started = std::chrono::steady_clock::now();
    CommandResult mpirun =
        runCommand({"/usr/bin/mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
                    std::to_string(point.ranks), "/bin/sh", "-c", kScript},
                   {}, 30000);
    const double ms = msSince(mpirun_started);
    if (mpirun.exit_code == 0) {
      mpirun_ms = mpirun_ms == 0 ? ms : std::min(mpirun_ms, ms);
    } else {
      ++mpirun_hung;
      std::fprintf(stderr, "bench_scale: mpirun -np %d failed (exit %d%s): %s\n", point.ranks,
                   mpirun.exit_code, mpirun.timed_out ? ", timed out" : "",
                   mpirun.err.substr(0, 400).c_str());
    }
  }
  const bool have_mpirun = mpirun_ms > 0;
  std::printf(
      "%4d ranks on %3d agents: submit --wait %.0f ms, %lld of %lld rows stored; agents' RSS max "
      "%.1f MiB, sum %.0f MiB (agents started in %.0f ms); mpirun -np %d best of 3 %.0f ms (%d "
      "of 3 hung); agent CPU during the job: leader %.0f ms, median %.0f ms; while %d ranks sleep "
      "%d s: leader %.1f ms/s, median %.1f ms/s, busiest %.1f ms/s\n",
      point.ranks, point.agents, submit_ms, rows, expected, rss_max, rss_sum, agents_ms,
      point.ranks, mpirun_ms, mpirun_hung, leader_cpu_ms, median_cpu_ms, point.agents,
      options.hold_seconds, leader_hold, median_hold, busiest_hold);
  std::printf(
      "RESULT agents=%d ranks=%d submit_ms=%.0f rows=%lld expected_rows=%lld "
      "agent_rss_max_mib=%.1f "
      "leader_cpu_ms=%.0f median_agent_cpu_ms=%.0f hold_leader_cpu_ms_per_s=%.1f "
      "hold_median_cpu_ms_per_s=%.1f hold_busiest_cpu_ms_per_s=%.1f leader_vs_median=%.2f "
      "mpirun_ms=%.0f ratio_vs_mpirun=%.3f slowed=%zu "
      "slowed_named=%d ok=%d\n",
      point.agents, point.ranks, submit_ms, rows, expected, rss_max, leader_cpu_ms, median_cpu_ms,
      leader_hold, median_hold, busiest_hold, median_hold > 0 ? leader_hold / median_hold : 0.0,
      have_mpirun ? mpirun_ms : 0.0, have_mpirun ? mpirun_ms / submit_ms : 0.0, slowed.size(),
      named, result.exit_code == 0 && rows == expected ? 1 : 0);
  std::fflush(stdout);
  return result.exit_code == 0 && rows == expected;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Point> points;
  Options options;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--no-mpirun") {  // the agents' figures alone, sooner
      options.with_mpirun = false;
      continue;
    }
    if (std::string(argv[i]) == "--agent-arg" && i + 1 < argc) {
      options.agent_args.push_back(argv[++i]);
      continue;
    }
    if (std::string(argv[i]) == "--hold" && i + 1 < argc) {
      options.hold_seconds = std::max(1, std::atoi(argv[++i]));
      continue;
    }
    if (std::string(argv[i]) == "--slow" && i + 1 < argc) {
      options.slowed = std::atoi(argv[++i]);
      continue;
    }
    Point point;
    if (std::sscanf(argv[i], "%d:%d", &point.agents, &point.ranks) != 2 || point.agents < 1 ||
        point.ranks < point.agents) {
      std::fprintf(stderr, "bench_scale: '%s' is not AGENTS:RANKS with RANKS >= AGENTS >= 1\n",
                   argv[i]);
      return 2;
    }
    points.push_back(point);
  }
  if (points.empty()) points = {{8, 64}, {32, 256}, {128, 1024}};
  bool all_ok = true;
  for (const Point& point : points) all_ok = runPoint(point, options) && all_ok;
  return all_ok ? 0 : 1;
}
