// bench_allreduce: float32 allreduce bus bandwidth through ringmaster::comm (Gloo backend) against
// raw Gloo called directly (same algorithm, same TCP transport, same reduction function) and
// torch.distributed's gloo backend, for 2 and 4 ranks and 1..64 MiB, in one run.
//
//   busbw = algbw * 2(n-1)/n, algbw = bytes / time
//
// Ranks are threads of this process with one Gloo TCP device each, over loopback. Raw Gloo runs on
// the communicator's own Gloo context (same connections, same device thread, same calling
// thread). The communicator's float32 allreduce between hosts goes over its own TCP ring
// (comm/tcp/tcp_ring.h), so the ratio is that ring against Gloo's; with RINGMASTER_TCP_RING=0 the
// communicator takes Gloo's ring too and the two differ only in the code path (on a 2-core
// machine, two separate sets of threads and sockets drift apart by 10% and more for scheduling
// reasons alone: hence the same connections). torch ranks are
// processes (tests/bench/torch_allreduce_peer.py run by /usr/bin/python3). Each repetition starts
// after a barrier and counts the slowest rank's time (15 or more repetitions, up to 128 for small
// buffers).
//
// How the comparison with raw Gloo is made stable on a small, shared machine: the communicator
// and raw Gloo alternate within every repetition (A B, then B A, ...), so that load from other
// processes hits both alike and neither always runs first; each repetition gives one ratio
// (raw Gloo's time / ours, two runs made back to back), and the figure per size is the median
// of those ratios. Its spread is printed beside it: the interquartile range and min..max of
// the per-repetition ratios, and a distribution-free 95% confidence interval of the median (from
// order statistics). A gap is real when that interval lies below the goal, noise when it
// straddles it. On 2 cores single repetitions scatter widely (a 1 MiB allreduce's median time is
// several times its best, for raw Gloo as for us: more threads than cores), so one size's
// interval is several % wide; a cost the comm layer added would show at every size, and the
// ratio pooled over all sizes has an interval of about +-1..3%.
//
// Usage: bench_allreduce [--reps N] [--sizes MIB,...] [--ranks N,...] [--no-torch]
//                        [--peer-script PATH] [--algorithms]
//   --reps N      at least N repetitions per size (default 15)
//   --sizes, --ranks  measure only these sizes (MiB) and rank counts (default 1..64 and 2,4),
//                 e.g. to profile one case under perf or callgrind
//   --no-torch    skip the torch.distributed peer
//   --peer-script the peer script (default: tests/bench/torch_allreduce_peer.py in the source tree)
//   --shared-memory  ranks on one host: the communicator's shared-memory path against Open MPI's
//                 MPI_Allreduce (mpirun, vader; each run alone) and, in a second pass, back to
//                 back with the same communicator over TCP, 4 KB to 64 MB
//                 (RESULT mode=shared_memory ... ratio_vs_mpi_r<ranks>_<size>)
//   --algorithms  instead of the comparison, measures the candidate allreduce algorithms
//                 (Gloo ring and bcube through the communicator, Gloo's AllreduceRingChunked and
//                 AllreduceHalvingDoubling) to back the choice documented in communicator.h.
// Prints a table and one final line "RESULT key=value ...": among others
// ratio_vs_gloo_r<ranks>_<size>MB (the median ratio) and ratio_ci_vs_gloo_r<ranks>_<size>MB (its
// 95% interval, "low..high") for every size and rank count, the same pooled over sizes
// (ratio_vs_gloo_r<ranks>, ratio_vs_gloo_pooled), gap_cells_vs_gloo (sizes and rank counts whose
// whole interval lies below 0.95) and min_ratio_vs_gloo, the lowest median (biased low: the
// minimum of 14 noisy medians).

#include <fcntl.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "comm/gloo/gloo_communicator.h"  // White-box: raw Gloo on the communicator's context.
#include "ringmaster/comm/communicator.h"
#include "ringmaster/comm/store.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using ringmaster::comm::Communicator;
using ringmaster::comm::GlooOptions;

constexpr size_t kMiB = size_t{1} << 20;
// What is measured; main() narrows them with --sizes and --ranks (sorted, for profiling one case).
std::vector<size_t> benchSizes = {1 * kMiB,  2 * kMiB,  4 * kMiB, 8 * kMiB,
                                  16 * kMiB, 32 * kMiB, 64 * kMiB};
std::vector<int> benchRankCounts = {2, 4};

// Repetitions at each size: at least `minReps`, more for smaller buffers (2 GiB of traffic per
// size, at most 128 repetitions). On the 2-core build machine, single repetitions scatter by
// +-10..30% (interquartile range of the paired ratio), so the 95% interval of a median is about
// +-2..6% at 128 repetitions and +-4..10% at 32: the cheap small sizes get many.
int repsFor(size_t bytes, int minReps) {
  const size_t byVolume = (2048 * kMiB) / bytes;
  return static_cast<int>(std::max<size_t>(minReps, std::min<size_t>(byVolume, 128)));
}

// The goal for the communicator against raw Gloo (the median ratio at every size and rank count).
constexpr double kGoalRatio = 0.95;

// torch runs apart from the rest, so its figures are rough anyway; fewer repetitions keep the
// run short.
constexpr int kMaxTorchReps = 16;

double busbw(size_t bytes, double seconds, int ranks) {
  return static_cast<double>(bytes) / seconds * 2.0 * (ranks - 1) / ranks / 1e9;
}

void sumFloat(void* c, const void* a, const void* b, size_t n) { gloo::sum<float>(c, a, b, n); }

// The same choice GlooCommunicator makes with GlooOptions::Algorithm::kAuto.
bool autoPicksBcube(size_t bytes, int ranks) {
  return ranks > 2 && bytes < ringmaster::comm::kGlooRingMinBytes;
}

// One rank of raw Gloo: Gloo's collectives called directly, on a context of its own or on one
// borrowed from a communicator.
class RawGloo {
 public:
  RawGloo(int rank, int size, gloo::rendezvous::Store& store) {
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto device = gloo::transport::tcp::CreateDevice(attr);
    context_ = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context_->setTimeout(std::chrono::seconds(60));
    context_->connectFullMesh(store, device);
  }

  // Shares the communicator's connections; tags start far above the communicator's.
  explicit RawGloo(const Communicator& comm)
      : context_(dynamic_cast<const ringmaster::comm::gloo::GlooCommunicator&>(comm).glooContext()),
        tag_(1u << 30) {}

  void allreduce(float* data, size_t count, bool bcube) {
    gloo::AllreduceOptions opts(context_);
    opts.setOutput(data, count);
    opts.setReduceFunction(&sumFloat);
    opts.setAlgorithm(bcube ? gloo::AllreduceOptions::Algorithm::BCUBE
                            : gloo::AllreduceOptions::Algorithm::RING);
    opts.setTag(tag_++);
    opts.setTimeout(std::chrono::seconds(60));
    gloo::allreduce(opts);
  }

  void barrier() {
    gloo::BarrierOptions opts(context_);
    opts.setTag(tag_++);
    gloo::barrier(opts);
  }

  const std::shared_ptr<gloo::rendezvous::Context>& context() const { return context_; }

 private:
  std::shared_ptr<gloo::rendezvous::Context> context_;
  uint32_t tag_ = 0;
};

// A candidate the benchmark times on every rank: prepare(bytes) once per size, then run().
struct Candidate {
  std::string name;
  std::function<void(float* data, size_t bytes)> prepare;
  std::function<void()> run;
  std::function<void()> barrier;
};

// The q-quantile (0..1) of `values`, interpolating linearly between order statistics.
double quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double pos = q * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  if (lo + 1 >= values.size()) return values.back();
  return values[lo] + (pos - static_cast<double>(lo)) * (values[lo + 1] - values[lo]);
}

// Summary of a sample of per-repetition ratios.
struct Spread {
  double median = NAN, p25 = NAN, p75 = NAN, min = NAN, max = NAN;
  // Distribution-free 95% confidence interval of the median: the k-th smallest and k-th largest
  // values, k the largest with P(Binomial(n, 1/2) < k) <= 2.5%. It assumes nothing about the
  // shape of the noise, only that repetitions are independent.
  double ciLow = NAN, ciHigh = NAN;
};

Spread spreadOf(std::vector<double> values) {
  Spread s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  s.median = quantile(values, 0.5);
  s.p25 = quantile(values, 0.25);
  s.p75 = quantile(values, 0.75);
  s.min = values.front();
  s.max = values.back();
  // cdf = P(B <= k - 1) for B ~ Binomial(n, 1/2); the pmf in logarithms, as 2^-n underflows
  // for the pooled samples (thousands of repetitions).
  auto pmf = [n](size_t j) {
    const double nd = static_cast<double>(n), jd = static_cast<double>(j);
    return std::exp(std::lgamma(nd + 1) - std::lgamma(jd + 1) - std::lgamma(nd - jd + 1) -
                    nd * std::log(2.0));
  };
  double cdf = 0;
  size_t k = 0;
  while (k < n / 2 && cdf + pmf(k) <= 0.025) {
    cdf += pmf(k);
    ++k;
  }
  if (k == 0) return s;  // Too few repetitions for a 95% interval.
  s.ciLow = values[k - 1];
  s.ciHigh = values[n - k];
  return s;
}

// Seconds per repetition (the slowest rank's), [candidate][size][repetition].
struct Timings {
  std::vector<std::vector<std::vector<double>>> perRep;

  double best(size_t c, size_t s) const {
    return *std::min_element(perRep[c][s].begin(), perRep[c][s].end());
  }
  double median(size_t c, size_t s) const { return quantile(perRep[c][s], 0.5); }
  // Per repetition, time(other) / time(c): c's speed relative to `other`, each repetition
  // comparing two runs made back to back, so that load from elsewhere mostly cancels.
  std::vector<double> pairedSpeedups(size_t c, size_t other, size_t s) const {
    std::vector<double> ratios;
    for (size_t rep = 0; rep < perRep[c][s].size(); ++rep) {
      ratios.push_back(perRep[other][s][rep] / perRep[c][s][rep]);
    }
    return ratios;
  }
};

// Times `candidates` on `ranks` threads at every size, interleaving them within each repetition
// (in alternating order).
using MakeCandidates = std::function<std::vector<Candidate>(int rank)>;

Timings timeCandidates(int ranks, int minReps, const MakeCandidates& make) {
  size_t numCandidates = 0;
  const int maxReps = repsFor(benchSizes.front(), minReps);
  // samples[c][s][rep * ranks + rank]
  std::vector<std::vector<std::vector<double>>> samples;
  std::mutex setup;
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        std::vector<Candidate> candidates = make(r);
        {
          std::lock_guard lock(setup);
          if (samples.empty()) {
            numCandidates = candidates.size();
            samples.assign(numCandidates,
                           std::vector<std::vector<double>>(
                               benchSizes.size(), std::vector<double>(maxReps * ranks, 0.0)));
          }
        }
        std::vector<float> buffer(benchSizes.back() / sizeof(float), 0.0f);
        // Warm the connections up with the largest size first: socket buffers and TCP windows
        // grow, and the first sizes measured are not penalised for coming first.
        for (auto& c : candidates) {
          c.prepare(buffer.data(), benchSizes.back());
          for (int i = 0; i < 3; ++i) c.run();
        }
        for (size_t s = 0; s < benchSizes.size(); ++s) {
          for (auto& c : candidates) {
            c.prepare(buffer.data(), benchSizes[s]);
            c.run();  // Warm-up.
          }
          const int reps = repsFor(benchSizes[s], minReps);
          for (int rep = 0; rep < reps; ++rep) {
            for (size_t k = 0; k < candidates.size(); ++k) {
              auto& c = candidates[rep % 2 == 0 ? k : candidates.size() - 1 - k];
              const size_t index = rep % 2 == 0 ? k : candidates.size() - 1 - k;
              c.barrier();
              const auto start = Clock::now();
              c.run();
              samples[index][s][rep * ranks + r] =
                  std::chrono::duration<double>(Clock::now() - start).count();
            }
          }
        }
        for (auto& c : candidates) c.barrier();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d failed: %s\n", r, e.what());
        failed = true;
      }
    });
  }
  for (auto& t : threads) t.join();
  if (failed) std::exit(1);
  Timings timings;
  timings.perRep.assign(numCandidates, std::vector<std::vector<double>>(benchSizes.size()));
  for (size_t c = 0; c < numCandidates; ++c) {
    for (size_t s = 0; s < benchSizes.size(); ++s) {
      for (int rep = 0; rep < repsFor(benchSizes[s], minReps); ++rep) {
        double slowest = 0;
        for (int r = 0; r < ranks; ++r) slowest = std::max(slowest, samples[c][s][rep * ranks + r]);
        timings.perRep[c][s].push_back(slowest);
      }
    }
  }
  return timings;
}

std::unique_ptr<Communicator> connectCommunicator(int rank, int ranks,
                                                  ringmaster::comm::KeyValueStore& store,
                                                  const std::string& prefix,
                                                  GlooOptions::Algorithm algorithm,
                                                  bool shared_memory = false) {
  GlooOptions options;
  options.sharedMemory = shared_memory;  // the comparison with raw Gloo is about TCP
  options.rank = rank;
  options.size = ranks;
  options.store = &store;
  options.storePrefix = prefix;
  options.hostname = "127.0.0.1";
  options.timeout = std::chrono::seconds(60);
  options.allreduceAlgorithm = algorithm;
  auto comm = ringmaster::comm::createGlooCommunicator(options);
  if (!comm.isOk()) throw std::runtime_error(comm.status().toString());
  return std::move(*comm);
}

void check(const ringmaster::Status& status) {
  if (!status.isOk()) throw std::runtime_error(status.toString());
}

Candidate communicatorCandidate(std::string name, std::shared_ptr<Communicator> comm) {
  auto state = std::make_shared<std::pair<float*, size_t>>();
  return Candidate{std::move(name),
                   [state](float* data, size_t bytes) {
                     *state = {data, bytes / sizeof(float)};
                   },
                   [state, comm] { check(comm->allreduce(state->first, state->second)); },
                   [comm] { check(comm->barrier()); }};
}

Candidate rawCandidate(std::string name, std::shared_ptr<RawGloo> raw, int ranks) {
  auto state = std::make_shared<std::pair<float*, size_t>>();
  return Candidate{std::move(name),
                   [state](float* data, size_t bytes) {
                     *state = {data, bytes / sizeof(float)};
                   },
                   [state, raw, ranks] {
                     raw->allreduce(state->first, state->second,
                                    autoPicksBcube(state->second * sizeof(float), ranks));
                   },
                   [raw] { raw->barrier(); }};
}

// Gloo's older algorithm classes bind one buffer at construction; prepare() builds a new one.
template <typename Algorithm>
Candidate classicCandidate(std::string name, std::shared_ptr<RawGloo> raw) {
  auto algorithm = std::make_shared<std::unique_ptr<gloo::Algorithm>>();
  return Candidate{std::move(name),
                   [algorithm, raw](float* data, size_t bytes) {
                     algorithm->reset();
                     *algorithm =
                         std::make_unique<Algorithm>(raw->context(), std::vector<float*>{data},
                                                     static_cast<int>(bytes / sizeof(float)));
                   },
                   [algorithm] { (*algorithm)->run(); }, [raw] { raw->barrier(); }};
}

// --- torch.distributed peer ---------------------------------------------------------------------

int freeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

// Seconds per allreduce of one size in the torch peers (slowest rank per repetition).
struct TorchTiming {
  double best = NAN;
  double median = NAN;
};

// Runs `ranks` torch peers; returns their timings per size, or an empty vector (with `why`) when
// torch is unavailable or the peers fail.
std::vector<TorchTiming> runTorch(int ranks, int reps, const std::string& script,
                                  std::string* why) {
  if (access(script.c_str(), R_OK) != 0) {
    *why = "peer script not found: " + script;
    return {};
  }
  const int port = freeLoopbackPort();
  std::string sizes, repsList;
  for (size_t s : benchSizes) {
    sizes += (sizes.empty() ? "" : ",") + std::to_string(s);
    repsList += (repsList.empty() ? "" : ",") +
                std::to_string(std::min(repsFor(s, reps), std::max(reps, kMaxTorchReps)));
  }
  int pipeFds[2];
  if (pipe(pipeFds) != 0) {
    *why = "pipe failed";
    return {};
  }
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry(*e);
      if (entry.rfind("RANK=", 0) == 0 || entry.rfind("WORLD_SIZE=", 0) == 0 ||
          entry.rfind("MASTER_", 0) == 0 || entry.rfind("OMP_NUM_THREADS=", 0) == 0) {
        continue;
      }
      env.push_back(entry);
    }
    env.push_back("RANK=" + std::to_string(r));
    env.push_back("WORLD_SIZE=" + std::to_string(ranks));
    env.push_back("MASTER_ADDR=127.0.0.1");
    env.push_back("MASTER_PORT=" + std::to_string(port));
    env.push_back("OMP_NUM_THREADS=1");
    std::vector<std::string> args = {"/usr/bin/python3", script,  "--sizes", sizes,
                                     "--reps",           repsList};
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (r == 0) {
      posix_spawn_file_actions_adddup2(&actions, pipeFds[1], STDOUT_FILENO);
    } else {
      posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    }
    posix_spawn_file_actions_addclose(&actions, pipeFds[0]);
    posix_spawn_file_actions_addclose(&actions, pipeFds[1]);
    pid_t pid = 0;
    if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data()) == 0) {
      pids.push_back(pid);
    }
    posix_spawn_file_actions_destroy(&actions);
  }
  close(pipeFds[1]);

  // Read rank 0's output; a watchdog kills the peers if they take too long.
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    const auto deadline = Clock::now() + std::chrono::seconds(75);
    while (!done && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!done) {
      for (pid_t pid : pids) kill(pid, SIGKILL);
    }
  });
  std::string output;
  char chunk[4096];
  ssize_t n;
  while ((n = read(pipeFds[0], chunk, sizeof(chunk))) > 0) output.append(chunk, n);
  close(pipeFds[0]);
  bool ok = static_cast<int>(pids.size()) == ranks;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  done = true;
  watchdog.join();

  std::map<size_t, TorchTiming> bySize;
  size_t pos = 0;
  while ((pos = output.find("TORCH size=", pos)) != std::string::npos) {
    size_t size = 0;
    TorchTiming timing;
    // median_s is optional, so that an older peer script still gives the best repetition.
    if (std::sscanf(output.c_str() + pos, "TORCH size=%zu best_s=%lf median_s=%lf", &size,
                    &timing.best, &timing.median) >= 2) {
      bySize[size] = timing;
    }
    pos += 1;
  }
  std::vector<TorchTiming> timings;
  for (size_t s : benchSizes) {
    if (bySize.count(s) == 0) {
      *why = output.find("TORCH_UNAVAILABLE") != std::string::npos
                 ? output.substr(output.find("TORCH_UNAVAILABLE"))
                 : std::string("torch peers failed") + (ok ? "" : " (non-zero exit)");
      while (!why->empty() && (why->back() == '\n' || why->back() == '\r')) why->pop_back();
      return {};
    }
    timings.push_back(bySize[s]);
  }
  return timings;
}

std::string fmt(double value, int digits = 3) {
  if (!std::isfinite(value)) return "nan";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, value);
  return buf;
}

std::string sizeLabel(size_t bytes) { return std::to_string(bytes / kMiB) + "mb"; }

// Whether a median ratio meets the goal, judged by its 95% confidence interval: "gap" only when
// the whole interval lies below the goal, "noise" when the interval straddles it.
const char* verdict(const Spread& ratio) {
  if (ratio.ciLow >= kGoalRatio) return "met";
  if (ratio.ciHigh < kGoalRatio) return "GAP";
  return std::isnan(ratio.ciLow) ? "?" : "noise";
}

std::string range(double lo, double hi) { return fmt(lo) + ".." + fmt(hi); }

int runComparison(int reps, bool withTorch, const std::string& script) {
  double minRatio = 1e30, minBestRatio = 1e30, minRatioVsTorch = 1e30;
  bool torchAvailable = withTorch;
  int gapCells = 0;
  std::vector<double> pooled;  // Every per-repetition ratio, all sizes and rank counts.
  std::map<std::string, std::string> headline;

  for (int ranks : benchRankCounts) {
    ringmaster::comm::InMemoryStore store;
    const Timings timings = timeCandidates(ranks, reps, [&](int r) {
      std::shared_ptr<Communicator> comm =
          connectCommunicator(r, ranks, store, "bench/", GlooOptions::Algorithm::kAuto);
      auto raw = std::make_shared<RawGloo>(*comm);
      return std::vector<Candidate>{communicatorCandidate("ringmaster", comm),
                                    rawCandidate("gloo", raw, ranks)};
    });
    std::string why;
    std::vector<TorchTiming> torch;
    if (withTorch) torch = runTorch(ranks, reps, script, &why);
    if (withTorch && torch.empty()) {
      torchAvailable = false;
      std::printf("torch.distributed peer unavailable: %s\n", why.c_str());
    }

    std::printf(
        "\n%d ranks, float32 allreduce over loopback TCP: busbw GB/s (median, best repetition);"
        " ratio = ringmaster vs raw Gloo\n",
        ranks);
    std::printf("%6s %6s %6s %6s %6s | %4s %6s %12s %12s %12s %5s %6s | %6s %6s %6s %s\n", "size",
                "ours", "gloo", "best", "gloo", "reps", "ratio", "95% CI", "p25..p75", "min..max",
                "goal", "best/", "torch", "(best)", "vs", "algorithm");
    std::vector<double> pooledHere;
    for (size_t s = 0; s < benchSizes.size(); ++s) {
      const size_t bytes = benchSizes[s];
      const double ours = busbw(bytes, timings.best(0, s), ranks);
      const double gloo = busbw(bytes, timings.best(1, s), ranks);
      const double oursMedian = busbw(bytes, timings.median(0, s), ranks);
      const double glooMedian = busbw(bytes, timings.median(1, s), ranks);
      const double theirs = torch.empty() ? NAN : busbw(bytes, torch[s].best, ranks);
      const double theirsMedian = torch.empty() ? NAN : busbw(bytes, torch[s].median, ranks);
      const std::vector<double> ratios = timings.pairedSpeedups(0, 1, s);
      pooledHere.insert(pooledHere.end(), ratios.begin(), ratios.end());
      const Spread ratio = spreadOf(ratios);
      const double bestRatio = ours / gloo;
      minRatio = std::min(minRatio, ratio.median);
      minBestRatio = std::min(minBestRatio, bestRatio);
      if (ratio.ciHigh < kGoalRatio) ++gapCells;
      if (!torch.empty()) minRatioVsTorch = std::min(minRatioVsTorch, ours / theirs);
      std::printf("%4zuMB %6s %6s %6s %6s | %4zu %6s %12s %12s %12s %5s %6s | %6s %6s %6s %s\n",
                  bytes / kMiB, fmt(oursMedian, 2).c_str(), fmt(glooMedian, 2).c_str(),
                  fmt(ours, 2).c_str(), fmt(gloo, 2).c_str(), ratios.size(),
                  fmt(ratio.median).c_str(), range(ratio.ciLow, ratio.ciHigh).c_str(),
                  range(ratio.p25, ratio.p75).c_str(), range(ratio.min, ratio.max).c_str(),
                  verdict(ratio), fmt(bestRatio, 2).c_str(), fmt(theirsMedian, 2).c_str(),
                  fmt(theirs, 2).c_str(), fmt(ours / theirs, 2).c_str(),
                  autoPicksBcube(bytes, ranks) ? "bcube" : "ring");
      const std::string cell =
          "r" + std::to_string(ranks) + "_" + std::to_string(bytes / kMiB) + "MB";
      headline["ratio_vs_gloo_" + cell] = fmt(ratio.median);
      headline["ratio_ci_vs_gloo_" + cell] = range(ratio.ciLow, ratio.ciHigh);
      if (bytes == 64 * kMiB || bytes == kMiB) {
        const std::string key = sizeLabel(bytes) + "_" + std::to_string(ranks) + "ranks";
        headline["busbw_" + key] = fmt(ours);
        headline["gloo_busbw_" + key] = fmt(gloo);
        headline["ratio_vs_gloo_" + key] = fmt(ratio.median);
        headline["torch_busbw_" + key] = fmt(theirs);
        headline["ratio_vs_torch_" + key] = fmt(ours / theirs);
      }
    }
    // A cost the comm layer adds shows at every size; pooled, the interval is a few times
    // narrower than any one size's.
    const Spread all = spreadOf(pooledHere);
    std::printf("%6s all sizes pooled: ratio %s, 95%% CI %s (%zu repetitions)\n", "",
                fmt(all.median).c_str(), range(all.ciLow, all.ciHigh).c_str(), pooledHere.size());
    headline["ratio_vs_gloo_r" + std::to_string(ranks)] = fmt(all.median);
    headline["ratio_ci_vs_gloo_r" + std::to_string(ranks)] = range(all.ciLow, all.ciHigh);
    pooled.insert(pooled.end(), pooledHere.begin(), pooledHere.end());
    std::fflush(stdout);
  }

  const Spread all = spreadOf(pooled);
  std::printf(
      "\nratio: median over repetitions of raw Gloo's time / ringmaster's time, the two run back\n"
      "to back (alternating which goes first) in each repetition; 95%% CI: of that median;\n"
      "p25..p75, min..max: of the per-repetition ratios; goal (median ratio >= %.2f): met when\n"
      "the whole interval is above, GAP when it is below, noise when it straddles the goal;\n"
      "best/: ratio of the best repetitions. torch: median and best busbw; vs: our best / torch's\n"
      "best. torch runs on its own, not interleaved, so it carries the machine's drift.\n"
      "All sizes and rank counts pooled: ratio %s, 95%% CI %s.\n\n",
      kGoalRatio, fmt(all.median).c_str(), range(all.ciLow, all.ciHigh).c_str());
  std::string result = "RESULT";
  result += " min_ratio_vs_gloo=" + fmt(minRatio);
  result += " min_best_ratio_vs_gloo=" + fmt(minBestRatio);
  result += " min_ratio_vs_torch=" + fmt(torchAvailable ? minRatioVsTorch : NAN);
  result += std::string(" torch_available=") + (torchAvailable ? "1" : "0");
  result += " ratio_vs_gloo_pooled=" + fmt(all.median);
  result += " ratio_ci_vs_gloo_pooled=" + range(all.ciLow, all.ciHigh);
  result += " gap_cells_vs_gloo=" + std::to_string(gapCells);
  for (const auto& [key, value] : headline) result += " " + key + "=" + value;
  result += " min_reps=" + std::to_string(reps);
  std::printf("%s\n", result.c_str());
  return 0;
}

int runAlgorithms(int reps) {
  std::string result = "RESULT mode=algorithms";
  for (int ranks : benchRankCounts) {
    ringmaster::comm::InMemoryStore store;
    gloo::rendezvous::HashStore rawStore;
    std::vector<std::string> names;
    const Timings timings = timeCandidates(ranks, reps, [&](int r) {
      // Every candidate on its own connections, so that none disturbs another's slots.
      std::shared_ptr<Communicator> ring =
          connectCommunicator(r, ranks, store, "ring/", GlooOptions::Algorithm::kRing);
      std::shared_ptr<Communicator> bcube =
          connectCommunicator(r, ranks, store, "bcube/", GlooOptions::Algorithm::kBcube);
      gloo::rendezvous::PrefixStore chunkedStore("chunked", rawStore);
      gloo::rendezvous::PrefixStore hdStore("hd", rawStore);
      auto chunked = std::make_shared<RawGloo>(r, ranks, chunkedStore);
      auto hd = std::make_shared<RawGloo>(r, ranks, hdStore);
      return std::vector<Candidate>{
          communicatorCandidate("ring", ring), communicatorCandidate("bcube", bcube),
          classicCandidate<gloo::AllreduceRingChunked<float>>("ring_chunked", chunked),
          classicCandidate<gloo::AllreduceHalvingDoubling<float>>("halving_doubling", hd)};
    });
    names = {"ring", "bcube", "ring_chunked", "halving_doubling"};
    std::printf("\n%d ranks, float32 allreduce, busbw GB/s (best repetition, slowest rank)\n",
                ranks);
    std::printf("%8s", "size");
    for (const auto& n : names) std::printf(" %17s", n.c_str());
    std::printf("\n");
    for (size_t s = 0; s < benchSizes.size(); ++s) {
      std::printf("%6zuMB", benchSizes[s] / kMiB);
      for (size_t c = 0; c < names.size(); ++c) {
        const double value = busbw(benchSizes[s], timings.best(c, s), ranks);
        std::printf(" %17s", fmt(value).c_str());
        result += " " + names[c] + "_" + sizeLabel(benchSizes[s]) + "_" + std::to_string(ranks) +
                  "ranks=" + fmt(value);
      }
      std::printf("\n");
    }
    std::fflush(stdout);
  }
  std::printf("\n%s\n", result.c_str());
  return 0;
}

// Open MPI's MPI_Allreduce at `sizes` on `ranks` processes of mpi_allreduce_peer (beside this
// program), best and median per size; empty (with `why`) when it cannot run.
std::vector<TorchTiming> runMpi(int ranks, const std::vector<size_t>& sizes, int reps,
                                std::string* why) {
  char self[4096] = {};
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string peer = std::string(self, length > 0 ? static_cast<size_t>(length) : 0);
  peer = peer.substr(0, peer.rfind('/') + 1) + "mpi_allreduce_peer";
  if (access(peer.c_str(), X_OK) != 0 || access("/usr/bin/mpirun", X_OK) != 0) {
    *why = "no mpirun or no " + peer;
    return {};
  }
  std::string sizeList, repsList;
  for (size_t s : sizes) {
    sizeList += (sizeList.empty() ? "" : ",") + std::to_string(s);
    repsList += (repsList.empty() ? "" : ",") + std::to_string(repsFor(s, reps));
  }
  const std::string command = "/usr/bin/mpirun --allow-run-as-root --oversubscribe -np " +
                              std::to_string(ranks) + " " + peer + " " + sizeList + " " + repsList +
                              " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  char chunk[4096];
  size_t n;
  while (pipe && (n = std::fread(chunk, 1, sizeof chunk, pipe)) > 0) output.append(chunk, n);
  const int status = pipe ? pclose(pipe) : -1;
  std::map<size_t, TorchTiming> bySize;
  for (size_t pos = 0; (pos = output.find("MPI size=", pos)) != std::string::npos; ++pos) {
    size_t size = 0;
    TorchTiming timing;
    if (std::sscanf(output.c_str() + pos, "MPI size=%zu best_s=%lf median_s=%lf", &size,
                    &timing.best, &timing.median) == 3) {
      bySize[size] = timing;
    }
  }
  std::vector<TorchTiming> timings;
  for (size_t s : sizes) {
    if (bySize.count(s) == 0) {
      *why = "mpirun failed (status " + std::to_string(status) + "): " + output.substr(0, 300);
      return {};
    }
    timings.push_back(bySize[s]);
  }
  return timings;
}

std::string bytesLabel(size_t bytes) {
  return bytes >= kMiB ? std::to_string(bytes / kMiB) + "MB" : std::to_string(bytes / 1024) + "KB";
}

// --shared-memory: ranks on one host, the communicator's shared-memory path against the same
// communicator over TCP (interleaved, as in the comparison) and against Open MPI's
// MPI_Allreduce (processes under mpirun, its vader shared-memory transport; run apart). Ranks are
// bound to a core each where they fit, as mpirun binds its own.
int runSharedMemory(int reps) {
  benchSizes = {4 * 1024, 64 * 1024, kMiB, 16 * kMiB, 64 * kMiB};
  std::string result = "RESULT mode=shared_memory";
  double minVsMpi = 1e30;
  for (int ranks : benchRankCounts) {
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    // with_tcp: the shared-memory path and TCP back to back (the paired ratio); without, the
    // shared-memory path alone, as mpirun's processes run: between two TCP allreduces, Gloo's
    // device threads take the cores from 4 ranks on 2 (4 KB: 0.18 GB/s instead of 0.91).
    const auto measure = [&](bool with_tcp) {
      ringmaster::comm::InMemoryStore store;
      return timeCandidates(ranks, reps, [&](int r) {
        // As mpirun binds its ranks when they fit the cores (--bind-to core, its default for two
        // ranks): two threads that share a core for a whole run take turns at every barrier.
        if (ranks <= cores) {
          cpu_set_t set;
          CPU_ZERO(&set);
          CPU_SET(r, &set);
          pthread_setaffinity_np(pthread_self(), sizeof set, &set);
        }
        std::shared_ptr<Communicator> shm =
            connectCommunicator(r, ranks, store, "shm/", GlooOptions::Algorithm::kAuto, true);
        if (!dynamic_cast<ringmaster::comm::gloo::GlooCommunicator&>(*shm).usesSharedMemory()) {
          throw std::runtime_error("the shared-memory path was not set up");
        }
        std::vector<Candidate> candidates{communicatorCandidate("shm", shm)};
        if (with_tcp) {
          candidates.push_back(communicatorCandidate(
              "tcp",
              connectCommunicator(r, ranks, store, "tcp/", GlooOptions::Algorithm::kAuto, false)));
        }
        return candidates;
      });
    };
    const Timings alone = measure(false);
    const Timings timings = measure(true);
    std::string why;
    const std::vector<TorchTiming> mpi = runMpi(ranks, benchSizes, reps, &why);
    if (mpi.empty()) std::printf("MPI peer unavailable: %s\n", why.c_str());
    std::printf("\n%d ranks on one host, float32 allreduce: busbw GB/s (median / best)\n", ranks);
    std::printf("%7s %15s %15s %15s | %8s %8s\n", "size", "shared memory", "tcp", "open mpi",
                "vs tcp", "vs mpi");
    for (size_t s = 0; s < benchSizes.size(); ++s) {
      const size_t bytes = benchSizes[s];
      const auto pair = [&](double median, double best) {
        return fmt(busbw(bytes, median, ranks), 2) + " / " + fmt(busbw(bytes, best, ranks), 2);
      };
      const double vsTcp = spreadOf(timings.pairedSpeedups(0, 1, s)).median;
      const double vsMpi = mpi.empty() ? NAN : mpi[s].median / alone.median(0, s);
      if (!mpi.empty()) minVsMpi = std::min(minVsMpi, vsMpi);
      std::printf("%7s %15s %15s %15s | %8s %8s\n", bytesLabel(bytes).c_str(),
                  pair(alone.median(0, s), alone.best(0, s)).c_str(),
                  pair(timings.median(1, s), timings.best(1, s)).c_str(),
                  mpi.empty() ? "-" : pair(mpi[s].median, mpi[s].best).c_str(),
                  fmt(vsTcp, 2).c_str(), fmt(vsMpi, 2).c_str());
      const std::string cell = "r" + std::to_string(ranks) + "_" + bytesLabel(bytes);
      result += " ratio_vs_tcp_" + cell + "=" + fmt(vsTcp);
      result += " ratio_vs_mpi_" + cell + "=" + fmt(vsMpi);
      result += " shm_busbw_" + cell + "=" + fmt(busbw(bytes, alone.median(0, s), ranks));
    }
    std::fflush(stdout);
  }
  std::printf(
      "\nshared memory: measured alone, as Open MPI is; vs tcp: median over repetitions of the "
      "TCP\n"
      "path's time / the shared-memory path's, the two back to back in a second pass; vs mpi:\n"
      "Open MPI's median time / ours (each run apart).\n");
  result += " min_ratio_vs_mpi=" + fmt(minVsMpi == 1e30 ? NAN : minVsMpi);
  std::printf("\n%s\n", result.c_str());
  return 0;
}

// Parses "a,b,c" into positive numbers; false on anything else.
template <typename T>
bool parseList(const std::string& text, std::vector<T>* out) {
  out->clear();
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    char* end = nullptr;
    const long value = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || value <= 0) return false;
    out->push_back(static_cast<T>(value));
    pos = comma + 1;
  }
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 15;
  bool withTorch = true;
  bool algorithms = false;
  bool sharedMemory = false;
  std::string script = std::string(RM_SOURCE_DIR) + "/tests/bench/torch_allreduce_peer.py";
  bool ok = true;
  for (int i = 1; i < argc && ok; ++i) {
    const std::string arg = argv[i];
    if (arg == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--sizes" && i + 1 < argc) {
      std::vector<size_t> mib;
      ok = parseList(argv[++i], &mib);
      benchSizes.clear();
      for (size_t m : mib) benchSizes.push_back(m * kMiB);
    } else if (arg == "--ranks" && i + 1 < argc) {
      ok = parseList(argv[++i], &benchRankCounts) && benchRankCounts.front() >= 2;
    } else if (arg == "--no-torch") {
      withTorch = false;
    } else if (arg == "--peer-script" && i + 1 < argc) {
      script = argv[++i];
    } else if (arg == "--algorithms") {
      algorithms = true;
    } else if (arg == "--shared-memory") {
      sharedMemory = true;
    } else {
      ok = false;
    }
  }
  if (!ok) {
    std::fprintf(stderr,
                 "usage: %s [--reps N] [--sizes MIB,...] [--ranks N,...] [--no-torch]"
                 " [--peer-script PATH] [--algorithms | --shared-memory]\n",
                 argv[0]);
    return 2;
  }
  const auto start = Clock::now();
  const int rc = algorithms     ? runAlgorithms(reps)
                 : sharedMemory ? runSharedMemory(reps)
                                : runComparison(reps, withTorch, script);
  std::fprintf(stderr, "bench_allreduce took %.1f s\n",
               std::chrono::duration<double>(Clock::now() - start).count());
  return rc;
}
