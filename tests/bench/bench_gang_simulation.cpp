// The gang's deterministic simulation (tests/agent/gang_simulation.h) over many schedules:
// bench_gang_simulation [--schedules N] [--first SEED] [--workers W]. Each worker process runs
// every W-th seed; the first violation is printed with its schedule and the events before it.
// bench_gang_simulation --replay SEED [--agents N] prints one run's schedule and every event.
// RESULT schedules=N violations=V agents=3-16 events=... messages=... virtual_hours=...
// outcomes: succeeded=... failed=... stopped=... restarted=... seconds=...
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "gang_simulation.h"

namespace {

struct Totals {
  uint64_t schedules = 0, violations = 0, events = 0, messages = 0, restarted = 0;
  uint64_t succeeded = 0, failed = 0, stopped = 0, none = 0;
  double virtual_seconds = 0;
  uint64_t first_bad_seed = 0;
};

Totals runShare(uint64_t first, uint64_t count, int worker, int workers) {
  Totals totals;
  for (uint64_t seed = first + worker; seed < first + count; seed += workers) {
    const auto result = ringmaster::agent::sim::run({seed});
    ++totals.schedules;
    totals.events += result.events;
    totals.messages += result.messages;
    totals.virtual_seconds += result.virtual_seconds;
    totals.restarted += result.last_attempt > 1;
    if (result.outcome == "succeeded") ++totals.succeeded;
    if (result.outcome == "failed") ++totals.failed;
    if (result.outcome == "stopped") ++totals.stopped;
    if (result.outcome == "none") ++totals.none;
    if (!result.violation.empty()) {
      if (totals.violations++ == 0) {
        totals.first_bad_seed = seed;
        std::fprintf(stderr, "seed %llu: %s\n%sevents before it:\n%s",
                     static_cast<unsigned long long>(seed), result.violation.c_str(),
                     result.schedule.c_str(), result.trace.c_str());
      }
    }
  }
  return totals;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t schedules = 100000, first = 1;
  std::optional<uint64_t> replay;
  int agents = 0;
  int workers = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--schedules"))
      schedules = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--first"))
      first = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--workers"))
      workers = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--replay"))
      replay = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--agents"))
      agents = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr,
                   "usage: bench_gang_simulation [--schedules N] [--first SEED] [--workers W] | "
                   "--replay SEED [--agents N]\n");
      return 2;
    }
  }
  if (replay) {
    ringmaster::agent::sim::Options options;
    options.seed = *replay;
    options.agents = agents;
    options.trace = true;
    const auto result = ringmaster::agent::sim::run(options);
    std::printf("%s%s%s: %s after %u attempt(s), %llu events\n", result.schedule.c_str(),
                result.trace.c_str(), result.violation.empty() ? "ok" : result.violation.c_str(),
                result.outcome.c_str(), result.last_attempt,
                static_cast<unsigned long long>(result.events));
    return result.violation.empty() ? 0 : 1;
  }
  workers = std::max(1, workers);
  const auto started = std::chrono::steady_clock::now();
  std::vector<int> pipes;
  std::vector<pid_t> children;
  for (int w = 0; w < workers; ++w) {
    int fds[2];
    if (pipe(fds) != 0) return 1;
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      const Totals totals = runShare(first, schedules, w, workers);
      (void)!write(fds[1], &totals, sizeof totals);
      _exit(0);
    }
    close(fds[1]);
    pipes.push_back(fds[0]);
    children.push_back(pid);
  }
  Totals all;
  bool lost = false;
  for (size_t w = 0; w < pipes.size(); ++w) {
    Totals part;
    if (read(pipes[w], &part, sizeof part) != static_cast<ssize_t>(sizeof part)) lost = true;
    waitpid(children[w], nullptr, 0);
    all.schedules += part.schedules;
    all.violations += part.violations;
    all.events += part.events;
    all.messages += part.messages;
    all.restarted += part.restarted;
    all.succeeded += part.succeeded;
    all.failed += part.failed;
    all.stopped += part.stopped;
    all.none += part.none;
    all.virtual_seconds += part.virtual_seconds;
    if (part.violations && (!all.first_bad_seed || part.first_bad_seed < all.first_bad_seed))
      all.first_bad_seed = part.first_bad_seed;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf(
      "RESULT schedules=%llu violations=%llu agents=3-16 events=%llu messages=%llu "
      "virtual_hours=%.0f succeeded=%llu failed=%llu stopped=%llu undecided=%llu "
      "restarted=%llu workers=%d seconds=%.0f%s\n",
      (unsigned long long)all.schedules, (unsigned long long)all.violations,
      (unsigned long long)all.events, (unsigned long long)all.messages, all.virtual_seconds / 3600,
      (unsigned long long)all.succeeded, (unsigned long long)all.failed,
      (unsigned long long)all.stopped, (unsigned long long)all.none,
      (unsigned long long)all.restarted, workers, seconds,
      all.violations ? (" first_bad_seed=" + std::to_string(all.first_bad_seed)).c_str() : "");
  return lost ? 1 : 0;  // violations are the figure: the suite (gang_simulation_test) is the gate
}
