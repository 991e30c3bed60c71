#include "rank_truth.h"

#include <filesystem>
#include <map>

#include "harness.h"
#include "ringmaster/job/rank_phase.h"
#include "ringmaster/util/wall_clock.h"

namespace ringmaster::testing {
namespace {

struct Worker {
  std::string agent_dir, copy, phase_file;
  int attempt = 0;
};

// NUL-separated NAME=VALUE pairs.
std::map<std::string, std::string> environmentOf(const std::string& environ) {
  std::map<std::string, std::string> vars;
  for (size_t at = 0; at < environ.size();) {
    size_t end = environ.find('\0', at);
    if (end == std::string::npos) end = environ.size();
    const std::string entry = environ.substr(at, end - at);
    if (const size_t eq = entry.find('='); eq != std::string::npos) {
      vars[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
    at = end + 1;
  }
  return vars;
}

// The job's workers by pid.
std::map<int, Worker> workersOf(const std::string& job_id) {
  std::map<int, Worker> workers;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string environ = readFile(entry.path().string() + "/environ");
    if (environ.find("RINGMASTER_JOB_ID=" + job_id + '\0') == std::string::npos) continue;
    auto vars = environmentOf(environ);
    if (vars["RINGMASTER_PHASE_FILE"].empty()) continue;  // not a native worker
    Worker w;
    w.agent_dir = vars["RINGMASTER_AGENT_DIR"];
    w.attempt = std::atoi(vars["RINGMASTER_ATTEMPT"].c_str());
    w.copy = vars["RINGMASTER_ATTEMPT"] + "@" + vars["MASTER_ADDR"] + ":" + vars["MASTER_PORT"];
    w.phase_file = vars["RINGMASTER_PHASE_FILE"];
    workers[std::stoi(name)] = w;
  }
  return workers;
}

}  // namespace

RankTruth::RankTruth(std::string job_id) : job_id_(std::move(job_id)) {
  thread_ = std::thread([this] { watch(); });
}

RankTruth::~RankTruth() {
  stop_ = true;
  thread_.join();
}

void RankTruth::watch() {
  std::map<int, uint64_t> steps;  // by pid
  while (!stop_) {
    const double now = unixSeconds();
    for (const auto& [pid, worker] : workersOf(job_id_)) {
      auto phase = job::readPhase(worker.phase_file);
      if (!phase.isOk()) continue;
      auto [it, first] = steps.emplace(pid, phase->step);
      if (first || phase->step <= it->second) continue;
      it->second = phase->step;
      std::lock_guard<std::mutex> lock(mutex_);
      advances_.push_back({now, worker.agent_dir, worker.attempt, worker.copy});
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

std::vector<RankTruth::Advance> RankTruth::advances() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return advances_;
}

double RankTruth::firstAdvance(const std::string& agent_dir, int attempt, double since) const {
  for (const Advance& a : advances()) {
    if (a.agent_dir == agent_dir && a.attempt >= attempt && a.time >= since) return a.time;
  }
  return 0;
}

double RankTruth::lastAdvance(const std::string& agent_dir) const {
  double last = 0;
  for (const Advance& a : advances()) {
    if (a.agent_dir == agent_dir) last = a.time;
  }
  return last;
}

std::string RankTruth::twoCopiesAdvancing(double window) const {
  const std::vector<Advance> all = advances();  // in time order
  for (size_t i = 0; i < all.size(); ++i) {
    for (size_t j = i + 1; j < all.size() && all[j].time - all[i].time <= window; ++j) {
      if (all[j].copy == all[i].copy) continue;
      return "copy " + all[i].copy + " advanced under " + all[i].agent_dir + " at " +
             std::to_string(all[i].time) + " and copy " + all[j].copy + " under " +
             all[j].agent_dir + " at " + std::to_string(all[j].time);
    }
  }
  return "";
}

int RankTruth::processes() const { return static_cast<int>(workersOf(job_id_).size()); }

}  // namespace ringmaster::testing
