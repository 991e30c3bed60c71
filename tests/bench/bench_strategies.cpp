// bench_strategies: the training strategies of resources/jobs/strategies side by side, each spec
// (digits, 4 ranks) trained through two real agents on loopback, twice: as written, and with one
// rank slowed to a third of its speed, the case asynchronous parameter servers and local SGD exist
// for. The straggler is rank 0 (a worker in every spec: parameter servers are the last ranks), held
// by SIGSTOP for 10 ms of every 15 (the benchmark does it from outside, as a busy or throttled host
// would), from its first step to the job's end.
//
// For each strategy it prints: seconds from the first step to a held-out accuracy of 0.93 (-1:
// never), the final accuracy, bytes sent per rank per step (mean over ranks and steps, as the
// ranks count them), the job's training throughput (samples/s: the sum over the ranks that
// compute a loss of the samples they trained on in the second half of their steps over the time
// that took; parameter servers and early pipeline stages compute none), the same with the
// straggler, and their ratio.
// Every spec runs 200 epochs here (3,200 steps; its own 10 take well under a second).
//
// Usage: bench_strategies [NAME...]   (default: every spec of the directory)
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "harness.h"

using namespace ringmaster::testing;
using nlohmann::json;

namespace {

constexpr double kTargetAccuracy = 0.93;
constexpr int kEpochs = 200;

struct Figures {
  bool ok = false;
  double time_to_target_s = -1;
  double final_accuracy = 0;
  double bytes_per_step = 0;
  double samples_per_s = 0;
};

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Holds `pid` stopped for 10 ms of every 15 until destroyed: it runs at a third of its speed.
class Straggler {
 public:
  explicit Straggler(pid_t pid)
      : thread_([this, pid] {
          while (!done_) {
            ::kill(pid, SIGSTOP);
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
            ::kill(pid, SIGCONT);
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
          }
        }) {}
  ~Straggler() {
    done_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

class Bench {
 public:
  bool start(std::string* error) {
    return cluster_.addAgent("a1", 2, error) && cluster_.addAgent("a2", 2, error);
  }

  Figures run(const std::string& name, bool slowed) {
    Figures figures;
    std::string spec = strategySpec(name);
    const size_t epochs = spec.find("epochs: 10");
    if (epochs == std::string::npos) {
      std::fprintf(stderr, "bench_strategies: %s.yaml has no 'epochs: 10' to raise\n",
                   name.c_str());
      return figures;
    }
    spec.replace(epochs, 10, "epochs: " + std::to_string(kEpochs));
    const std::string file = cluster_.writeSpec(name + (slowed ? "-slowed" : "") + ".yaml", spec);
    auto submitted = cluster_.ctl({"submit", file});
    if (submitted.exit_code != 0) {
      std::fprintf(stderr, "bench_strategies: submit %s: %s\n", name.c_str(),
                   submitted.err.c_str());
      return figures;
    }
    const std::string job = submitted.firstLine();
    std::unique_ptr<Straggler> straggler;
    const bool ended = waitUntil(
        [&] {
          json status = json::parse(cluster_.ctl({"status", job, "--json"}).out, nullptr, false);
          if (!status.is_object()) return false;
          if (slowed && !straggler) {
            for (const auto& r : status.value("ranks", json::array())) {
              if (r.value("rank", -1) == 0 && r.value("pid", 0) > 0) {
                const pid_t pid = r["pid"].get<pid_t>();
                const std::string comm = readFile("/proc/" + std::to_string(pid) + "/comm");
                std::fprintf(stderr, "bench_strategies: %s: slowing rank 0 (pid %d, %s)\n",
                             name.c_str(), pid, comm.substr(0, comm.find('\n')).c_str());
                straggler = std::make_unique<Straggler>(pid);
              }
            }
          }
          const std::string state = status.value("state", "");
          return state == "succeeded" || state == "failed" || state == "stopped";
        },
        std::chrono::minutes(5));
    straggler.reset();
    json status = json::parse(cluster_.ctl({"status", job, "--json"}).out, nullptr, false);
    if (!ended || !status.is_object() || status.value("state", "") != "succeeded") {
      std::fprintf(stderr, "bench_strategies: %s%s did not succeed:\n%s\n", name.c_str(),
                   slowed ? " (slowed)" : "", cluster_.ctl({"status", job}).out.c_str());
      return figures;
    }
    figures.ok = true;
    collect(job, &figures);
    return figures;
  }

 private:
  json metric(const std::string& job, const std::string& name) {
    json rows = json::parse(cluster_.ctl({"metrics", job, "--name", name, "--format", "json"}).out,
                            nullptr, false);
    return rows.is_array() ? rows : json::array();
  }

  void collect(const std::string& job, Figures* figures) {
    const json loss = metric(job, "loss");
    double first_step_time = 1e300;
    int last_step = 0;
    std::map<int, bool> computes_loss;
    for (const auto& row : loss) {
      first_step_time = std::min(first_step_time, row["time"].get<double>());
      last_step = std::max(last_step, row["step"].get<int>());
      computes_loss[row["rank"].get<int>()] = true;
    }
    int final_step = 0;
    for (const auto& row : metric(job, "accuracy")) {
      const int step = row["step"].get<int>();
      const double value = row["value"].get<double>();
      if (step >= final_step) {
        final_step = step;
        figures->final_accuracy = value;
      }
      const double at = row["time"].get<double>() - first_step_time;
      if (value >= kTargetAccuracy &&
          (figures->time_to_target_s < 0 || at < figures->time_to_target_s)) {
        figures->time_to_target_s = at;
      }
    }
    double bytes = 0;
    const json sent = metric(job, "bytes_sent");
    for (const auto& row : sent) bytes += row["value"].get<double>();
    figures->bytes_per_step = sent.empty() ? 0 : bytes / static_cast<double>(sent.size());
    // Per rank over the second half of its steps: samples a step (samples_per_sec x step_time of
    // the same row) times the steps made, over the time they took by the rows' clocks. Not a
    // median of per-step rates: a rank held up once every few steps has mostly fast steps.
    std::map<std::pair<int, int>, double> step_time;
    for (const auto& row : metric(job, "step_time")) {
      step_time[{row["rank"].get<int>(), row["step"].get<int>()}] = row["value"].get<double>();
    }
    struct Span {
      std::vector<double> samples_per_step;
      int first_step = -1, last_step = -1;
      double first_time = 0, last_time = 0;
    };
    std::map<int, Span> spans;
    for (const auto& row : metric(job, "samples_per_sec")) {
      const int rank = row["rank"].get<int>(), step = row["step"].get<int>();
      if (!computes_loss.count(rank) || step <= last_step / 2) continue;
      Span& span = spans[rank];
      auto took = step_time.find({rank, step});
      if (took != step_time.end()) {
        span.samples_per_step.push_back(row["value"].get<double>() * took->second);
      }
      const double time = row["time"].get<double>();
      if (span.first_step < 0 || step < span.first_step) {
        span.first_step = step;
        span.first_time = time;
      }
      if (step > span.last_step) {
        span.last_step = step;
        span.last_time = time;
      }
    }
    for (const auto& [rank, span] : spans) {
      if (span.last_time > span.first_time) {
        figures->samples_per_s += median(span.samples_per_step) *
                                  (span.last_step - span.first_step) /
                                  (span.last_time - span.first_time);
      }
    }
  }

  Cluster cluster_;
};

std::vector<std::string> allSpecs() {
  std::vector<std::string> names;
  for (const auto& entry :
       std::filesystem::directory_iterator(sourcePath("resources/jobs/strategies"))) {
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> names(argv + 1, argv + argc);
  if (names.empty()) names = allSpecs();
  Bench bench;
  std::string error;
  if (!bench.start(&error)) {
    std::fprintf(stderr, "bench_strategies: %s\n", error.c_str());
    return 1;
  }
  std::printf("%-22s %12s %9s %14s %12s %12s %8s\n", "strategy", "to 0.93 (s)", "accuracy",
              "bytes/step", "samples/s", "slowed", "ratio");
  std::string result = "RESULT";
  bool all_ok = true;
  for (const std::string& name : names) {
    const Figures plain = bench.run(name, false);
    const Figures slowed = bench.run(name, true);
    all_ok = all_ok && plain.ok && slowed.ok;
    const double ratio = plain.samples_per_s > 0 ? slowed.samples_per_s / plain.samples_per_s : 0;
    std::printf("%-22s %12.3f %9.3f %14.0f %12.0f %12.0f %8.2f\n", name.c_str(),
                plain.time_to_target_s, plain.final_accuracy, plain.bytes_per_step,
                plain.samples_per_s, slowed.samples_per_s, ratio);
    std::fflush(stdout);
    char pairs[512];
    std::snprintf(pairs, sizeof pairs,
                  " %s_to_target_s=%.3f %s_accuracy=%.3f %s_bytes_per_step=%.0f"
                  " %s_samples_per_s=%.0f %s_slowed_ratio=%.2f",
                  name.c_str(), plain.time_to_target_s, name.c_str(), plain.final_accuracy,
                  name.c_str(), plain.bytes_per_step, name.c_str(), plain.samples_per_s,
                  name.c_str(), ratio);
    result += pairs;
  }
  std::printf("%s\n", result.c_str());
  return all_ok ? 0 : 1;
}
