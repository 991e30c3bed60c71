// bench_launch: `ringmasterctl submit --wait` of 8 ranks of /bin/true over 2 local agents, end to
// end (CLI start, CURVE handshakes, placement, prepare + launch, journal pull until every rank
// has exited, history written), side by side with `mpirun -np 8 /bin/true` on this host.
// Prints the median of several runs of each; RESULT ratio_vs_mpirun = mpirun_ms / launch_ms, and
// ratio_vs_floor = floor_ms / launch_ms, the floor being one process that forks and execs the 8
// /bin/true and waits for them (what no launcher can beat).
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "harness.h"

using namespace ringmaster::testing;

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

template <typename F>
double timeMs(F&& run) {
  auto start = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// Starts 8 /bin/true and waits for them all: false if one could not be started.
bool spawnEightTrue() {
  std::vector<pid_t> pids;
  char arg0[] = "/bin/true";
  char* argv[] = {arg0, nullptr};
  char* envp[] = {nullptr};
  for (int i = 0; i < 8; ++i) {
    pid_t pid = 0;
    if (posix_spawn(&pid, "/bin/true", nullptr, nullptr, argv, envp) != 0) return false;
    pids.push_back(pid);
  }
  for (const pid_t pid : pids) waitpid(pid, nullptr, 0);
  return true;
}

}  // namespace

int main() {
  constexpr int kRuns = 15;
  Cluster cluster;
  std::string error;
  if (!cluster.addAgent("a1", 4, &error) || !cluster.addAgent("a2", 4, &error)) {
    std::fprintf(stderr, "bench_launch: %s\n", error.c_str());
    return 1;
  }
  const std::string spec = cluster.writeSpec(
      "true.yaml", "name: true8\nlauncher: command\ncommand: [/bin/true]\nworld_size: 8\n");

  std::vector<double> ours;
  for (int i = 0; i < kRuns + 1; ++i) {
    CommandResult result;
    double ms = timeMs([&] { result = cluster.ctl({"submit", spec, "--wait"}); });
    if (result.exit_code != 0) {
      std::fprintf(stderr, "bench_launch: submit failed: %s%s\n", result.out.c_str(),
                   result.err.c_str());
      return 1;
    }
    if (i > 0) ours.push_back(ms);  // the first run warms caches
  }

  std::vector<double> mpirun;
  bool have_mpirun = runCommand({"/usr/bin/mpirun", "--version"}).exit_code == 0;
  for (int i = 0; have_mpirun && i < kRuns + 1; ++i) {
    CommandResult result;
    double ms = timeMs([&] {
      result = runCommand(
          {"/usr/bin/mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "8", "/bin/true"});
    });
    if (result.exit_code != 0) {
      have_mpirun = false;
      std::fprintf(stderr, "bench_launch: mpirun failed: %s\n", result.err.c_str());
    }
    if (i > 0) mpirun.push_back(ms);
  }

  std::vector<double> floor;
  for (int i = 0; i < kRuns + 1; ++i) {
    bool started = false;
    const double ms = timeMs([&] { started = spawnEightTrue(); });
    if (!started) {
      std::fprintf(stderr, "bench_launch: posix_spawn of /bin/true failed\n");
      return 1;
    }
    if (i > 0) floor.push_back(ms);
  }
  const double floor_ms = median(floor);

  const double launch_ms = median(ours);
  std::printf("ringmasterctl submit --wait, 8 x /bin/true on 2 agents: median %.1f ms (min %.1f)\n",
              launch_ms, *std::min_element(ours.begin(), ours.end()));
  std::printf("floor: one process spawns 8 x /bin/true and waits:  median %.2f ms\n", floor_ms);
  const double mpirun_ms = have_mpirun ? median(mpirun) : 0.0;
  if (have_mpirun) {
    std::printf(
        "mpirun -np 8 /bin/true:                                median %.1f ms (min %.1f)\n",
        mpirun_ms, *std::min_element(mpirun.begin(), mpirun.end()));
  }
  char mpirun_figures[96] = "mpirun_ms=nan ratio_vs_mpirun=nan";
  if (have_mpirun) {
    std::snprintf(mpirun_figures, sizeof mpirun_figures, "mpirun_ms=%.1f ratio_vs_mpirun=%.3f",
                  mpirun_ms, mpirun_ms / launch_ms);
  }
  std::printf("RESULT launch_ms=%.1f %s floor_ms=%.2f ratio_vs_floor=%.3f runs=%d\n", launch_ms,
              mpirun_figures, floor_ms, floor_ms / launch_ms, kRuns);
  return 0;
}
