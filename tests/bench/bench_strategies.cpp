// bench_strategies: the training strategies of resources/jobs/strategies side by side, each spec
// (Fashion-MNIST, the demo's 1.33 M-parameter MLP, 4 ranks) trained as written through two real
// agents of 2 ranks each, twice: as it is, and with one rank slowed to a third of its speed, the
// case asynchronous parameter servers and local SGD exist for. The straggler is rank 0 (a worker
// in every spec: parameter servers are the last ranks), held by SIGSTOP for 10 ms of every 15
// (the benchmark does it from outside, as a busy or throttled host would), from its first step to
// the job's end.
//
// The agents stand for two hosts: with --link RATE (root only) each runs in a network namespace
// of its own, joined to the other through veth pairs shaped by tc's tbf to RATE each way (e.g.
// 1gbit, 10gbit): the ranks average over Gloo's TCP, and every byte between the two agents'
// ranks crosses a real rate-limited link, as on two hosts. Without it the agents are on loopback
// and the four ranks, on one host, average in shared memory.
//
// For each strategy it prints: seconds from the first step to a test accuracy of 0.87 (-1:
// never), the final accuracy, bytes sent per rank per step (mean over ranks and steps, as the
// ranks count them), the job's training throughput (samples/s: the sum over the ranks that
// compute a loss of the samples they trained on in the second half of their steps over the time
// that took; parameter servers and early pipeline stages compute none), the same with the
// straggler, and their ratio.
//
// Usage: bench_strategies [--link RATE] [--no-straggler] [--keep-history FILE] [NAME...]
//        (default: loopback, every spec of the directory, plain and slowed; --keep-history copies
//        the runs' history there at the end, for the app's Compare: ringmaster --db FILE)
#include <signal.h>
#include <unistd.h>

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
#include "namespace_network.h"

using namespace ringmaster::testing;
using nlohmann::json;

namespace {

constexpr double kTargetAccuracy = 0.87;
constexpr char kFashionMnist[] = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";

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
  bool start(const std::string& link_rate, std::string* error) {
    if (link_rate.empty()) {
      return cluster_.addAgent("a1", 2, error) && cluster_.addAgent("a2", 2, error);
    }
    return network_.create("rmlink", 2, 10, link_rate, error) &&
           cluster_.addAgent("a1", 2, error, {}, network_.host(0)) &&
           cluster_.addAgent("a2", 2, error, {}, network_.host(1));
  }

  Figures run(const std::string& name, bool slowed) {
    Figures figures;
    const std::string spec = readFile(sourcePath("resources/jobs/strategies/" + name + ".yaml"));
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
        std::chrono::minutes(30));
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

  // The history file (and its write-ahead log) copied to `path`.
  bool keepHistory(const std::string& path) {
    std::error_code error;
    for (const char* suffix : {"", "-wal"}) {
      const std::string from = cluster_.dbPath() + suffix;
      if (!std::filesystem::exists(from)) continue;
      std::filesystem::copy_file(from, path + suffix,
                                 std::filesystem::copy_options::overwrite_existing, error);
      if (error) {
        std::fprintf(stderr, "bench_strategies: %s: %s\n", path.c_str(), error.message().c_str());
        return false;
      }
    }
    return true;
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

  NamespaceNetwork network_;  // before the cluster: its agents end before their network goes
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
  std::vector<std::string> names;
  std::string link_rate;
  bool straggler = true;
  std::string keep_history;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--link" && i + 1 < argc) {
      link_rate = argv[++i];
    } else if (arg == "--no-straggler") {
      straggler = false;
    } else if (arg == "--keep-history" && i + 1 < argc) {
      keep_history = argv[++i];
    } else if (arg.rfind("--", 0) == 0) {
      std::fprintf(stderr,
                   "usage: bench_strategies [--link RATE] [--no-straggler] [--keep-history FILE] "
                   "[NAME...]\n");
      return 2;
    } else {
      names.push_back(arg);
    }
  }
  if (names.empty()) names = allSpecs();
  if (::access(kFashionMnist, R_OK) != 0) {
    std::printf("skipped: no Fashion-MNIST (apt-get install dataset-fashion-mnist)\n");
    return 77;
  }
  Bench bench;
  std::string error;
  if (!bench.start(link_rate, &error)) {
    std::fprintf(stderr, "bench_strategies: %s\n", error.c_str());
    return link_rate.empty() ? 1 : 77;
  }
  std::printf("link: %s\n", link_rate.empty() ? "loopback" : link_rate.c_str());
  std::printf("%-22s %12s %9s %14s %12s %12s %8s\n", "strategy", "to 0.87 (s)", "accuracy",
              "bytes/step", "samples/s", "slowed", "ratio");
  std::string result = "RESULT link=" + (link_rate.empty() ? std::string("loopback") : link_rate);
  bool all_ok = true;
  for (const std::string& name : names) {
    const Figures plain = bench.run(name, false);
    const Figures slowed = straggler ? bench.run(name, true) : Figures{};
    all_ok = all_ok && plain.ok && (!straggler || slowed.ok);
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
  if (!keep_history.empty() && !bench.keepHistory(keep_history)) all_ok = false;
  return all_ok ? 0 : 1;
}
