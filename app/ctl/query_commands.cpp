// keys, agents, status, metrics, stop, runs, sync.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "ctl.h"
#include "ringmaster/client/job_liveness.h"
#include "ringmaster/hardware/gpu_faults.h"
#include "ringmaster/hardware/hardware_report.h"
#include "ringmaster/job/device_plan.h"
#include "ringmaster/job/job_model.h"
#include "ringmaster/slurm/job_state.h"
#include "ringmaster/util/wall_clock.h"
#include "table.h"
#include "terminal_safe.h"

namespace ringmaster::ctl {
namespace {

using nlohmann::json;

std::string exitText(const store::RankRow& r) {
  if (r.state == "running" || r.state == "pending") return "-";
  if (r.signal) return "signal " + std::to_string(r.signal);
  return std::to_string(r.exit_code);
}

json rankJson(const store::RankRow& r) {
  return {{"rank", r.rank},
          {"local_rank", r.local_rank},
          {"agent", r.agent},
          {"pid", r.pid},
          {"state", r.state},
          {"exit_code", r.exit_code},
          {"signal", r.signal},
          {"error", r.error},
          {"last_step", r.last_step},
          {"started_at", r.started_at},
          {"finished_at", r.finished_at},
          {"device", r.device}};
}

// JSON has no NaN or infinity (nlohmann would write null, hiding a diverged loss): they are
// written as the strings Python's json module prints for them.
json metricValueJson(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return value;
}

// The DEVICE column: the UUID stays in the history and --json, a CPU reason is printed once above
// the table.
std::string deviceCell(const std::string& device) {
  return device.empty() ? "-" : job::shortDevice(device);
}

json jobJson(const store::JobRow& j) {
  return {{"job", j.job_id},
          {"name", j.name},
          {"launcher", j.launcher},
          {"state", j.state},
          {"world_size", j.world_size},
          {"attempt", j.attempt},
          {"submitted_at", j.submitted_at},
          {"finished_at", j.finished_at},
          {"restarts_left", j.restarts_left}};
}

std::string jobDuration(const store::JobRow& j) {
  if (j.submitted_at <= 0) return "-";
  double end = j.finished_at > 0 ? j.finished_at : unixSeconds();
  return formatDuration(std::max(0.0, end - j.submitted_at));
}

// The cluster when it can be opened; otherwise the history alone is still useful.
struct History {
  std::unique_ptr<client::ClusterClient> cluster;
  std::unique_ptr<store::Reader> local;
  std::unique_ptr<store::BatchWriter> local_writer;
  store::Reader* store = nullptr;
  store::BatchWriter* writer = nullptr;  // the process's one writer of the history
  std::set<std::string> silent_agents;   // did not answer the sync
};

bool openHistory(const Globals& globals, History* h) {
  auto paths = client::ClientPaths::resolve(globals.cluster_file, globals.db_file);
  auto cluster = client::ClusterClient::open(paths);
  if (cluster.isOk()) {
    h->cluster = std::move(*cluster);
    syncQuietly(*h->cluster, {}, &h->silent_agents);
    auto store = h->cluster->history();
    auto writer = h->cluster->writer();
    if (!store.isOk() || !writer.isOk()) {
      printError((store.isOk() ? writer.status() : store.status()).message());
      return false;
    }
    h->store = *store;
    h->writer = *writer;
    return true;
  }
  printError(cluster.status().message() + " (showing the history only)");
  auto store = store::Reader::open(paths.db_file);
  if (!store.isOk()) {
    printError(store.status().message());
    return false;
  }
  auto writer = store::BatchWriter::open(paths.db_file);
  if (!writer.isOk()) {
    printError(writer.status().message());
    return false;
  }
  h->local = std::move(*store);
  h->local_writer = std::move(*writer);
  h->store = h->local.get();
  h->writer = h->local_writer.get();
  return true;
}

// Each silent agent with the time of the newest evidence from it in the history: its latest
// health sample (1 Hz while it answered) or the last time a client recorded it.
std::map<std::string, double> silentSince(store::Reader& store,
                                          const std::set<std::string>& silent) {
  std::map<std::string, double> since;
  if (silent.empty()) return since;
  for (const std::string& agent : silent) since[agent] = 0;
  if (auto health = store.latestHealth(); health.isOk()) {
    for (const auto& row : *health) {
      if (since.count(row.agent)) since[row.agent] = std::max(since[row.agent], row.time);
    }
  }
  if (auto agents = store.agents(); agents.isOk()) {
    for (const auto& row : *agents) {
      if (since.count(row.name)) since[row.name] = std::max(since[row.name], row.last_seen);
    }
  }
  return since;
}

client::ShownJob shownJob(const store::JobRow& job, const std::vector<store::RankRow>& ranks,
                          const std::map<std::string, double>& silent_since) {
  std::vector<client::RankLastKnown> known;
  for (const auto& r : ranks) {
    known.push_back({r.rank, r.agent, r.state == "running" || r.state == "pending", r.last_step});
  }
  return client::showJob(job.state, job.finished_at, known, silent_since,
                         client::launcherReportsSteps(job.launcher));
}

}  // namespace

int runKeys(const Globals& globals) {
  auto paths = client::ClientPaths::resolve(globals.cluster_file, globals.db_file);
  auto keys = client::loadClientKeys(paths);
  if (!keys.isOk()) {
    printError(keys.status().message());
    return kExitFailure;
  }
  std::printf("%s\n", keys->public_key.c_str());
  return kExitOk;
}

namespace {
// A field NVML could not read on this GPU is null in JSON, not a zero that reads as a value.
template <typename T>
json orNull(bool present, const T& value) {
  return present ? json(value) : json(nullptr);
}
}  // namespace

int runAgents(const Globals& globals, const std::vector<std::string>& names, bool as_json) {
  auto cluster = openCluster(globals);
  if (!cluster) return kExitFailure;
  auto inventories = cluster->inventories(names, 5000);
  Table table({"AGENT", "ENDPOINT", "STATUS", "SLOTS FREE", "CPUS", "MEMORY", "GPUS", "CPU%",
               "MEM USED", "LOAD", "NET RX/TX", "JOBS"});
  json out = json::array();
  bool all_ok = true;
  std::vector<std::string> faults;  // "gpu01 GPU 2 critical: clocks held at ...", under the table
  for (const auto& [name, inventory] : inventories) {
    std::string endpoint;
    for (const auto& a : cluster->agents()) {
      if (a.name == name) endpoint = a.endpoint;
    }
    if (!inventory.isOk()) {
      all_ok = false;
      table.add({name, endpoint, "error: " + inventory.status().message()});
      out.push_back(
          {{"agent", name}, {"endpoint", endpoint}, {"error", inventory.status().message()}});
      continue;
    }
    const auto& inv = *inventory;
    const auto& h = inv.health();
    std::string gpus = std::to_string(inv.gpus_size());
    if (inv.gpus_size() > 0) gpus += " x " + inv.gpus(0).name();
    table.add(
        {name, endpoint, "ok", std::to_string(inv.slots_free()) + "/" + std::to_string(inv.slots()),
         std::to_string(inv.cpus()), formatBytes(static_cast<double>(inv.memory_total_bytes())),
         gpus, formatNumber(static_cast<int>(h.cpu_percent() * 10) / 10.0),
         formatBytes(static_cast<double>(h.memory_used_bytes())), formatNumber(h.load1()),
         formatBytes(h.net_rx_bytes_per_s()) + "/s " + formatBytes(h.net_tx_bytes_per_s()) + "/s",
         std::to_string(inv.running_jobs_size())});
    json gpu_health = json::array();
    for (const auto& g : h.gpus()) {
      json gpu_faults = json::array();
      for (const hardware::GpuFault& fault : hardware::gpuFaults(g)) {
        gpu_faults.push_back({{"severity", hardware::severityName(fault.severity)},
                              {"kind", fault.kind},
                              {"text", fault.text}});
        if (fault.severity == hardware::FaultSeverity::kNotice) continue;
        faults.push_back(name + " GPU " + std::to_string(g.index()) + " " +
                         hardware::severityName(fault.severity) + ": " + fault.text);
      }
      gpu_health.push_back(
          {{"index", g.index()},
           {"utilization_percent", g.utilization_percent()},
           {"memory_used_bytes", g.memory_used_bytes()},
           {"temperature_c", g.temperature_c()},
           {"power_w", g.power_w()},
           {"sm_clock_mhz", orNull(g.has_sm_clock_mhz(), g.sm_clock_mhz())},
           {"sm_clock_max_mhz", orNull(g.has_sm_clock_max_mhz(), g.sm_clock_max_mhz())},
           {"memory_clock_mhz", orNull(g.has_memory_clock_mhz(), g.memory_clock_mhz())},
           {"memory_clock_max_mhz", orNull(g.has_memory_clock_max_mhz(), g.memory_clock_max_mhz())},
           {"throttle_reasons",
            orNull(g.has_throttle_reasons(), hardware::throttleReasonsText(g.throttle_reasons()))},
           {"pcie",
            {{"generation", orNull(g.has_pcie_generation(), g.pcie_generation())},
             {"width", orNull(g.has_pcie_width(), g.pcie_width())},
             {"generation_max", orNull(g.has_pcie_generation_max(), g.pcie_generation_max())},
             {"width_max", orNull(g.has_pcie_width_max(), g.pcie_width_max())}}},
           {"ecc_uncorrected",
            {{"volatile", orNull(g.has_ecc_volatile_uncorrected(), g.ecc_volatile_uncorrected())},
             {"aggregate",
              orNull(g.has_ecc_aggregate_uncorrected(), g.ecc_aggregate_uncorrected())}}},
           {"faults", gpu_faults}});
    }
    out.push_back({{"agent", name},
                   {"endpoint", endpoint},
                   {"hostname", inv.hostname()},
                   {"slots", inv.slots()},
                   {"slots_free", inv.slots_free()},
                   {"cpus", inv.cpus()},
                   {"memory_total_bytes", inv.memory_total_bytes()},
                   {"gpus", inv.gpus_size()},
                   {"health",
                    {{"cpu_percent", h.cpu_percent()},
                     {"memory_used_bytes", h.memory_used_bytes()},
                     {"load1", h.load1()},
                     {"net_rx_bytes_per_s", h.net_rx_bytes_per_s()},
                     {"net_tx_bytes_per_s", h.net_tx_bytes_per_s()},
                     {"gpus", gpu_health}}},
                   {"running_jobs",
                    std::vector<std::string>(inv.running_jobs().begin(), inv.running_jobs().end())},
                   {"version", inv.version()}});
  }
  if (as_json) {
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("%s", table.render().c_str());
    for (const std::string& fault : faults) std::printf("%s\n", terminalSafe(fault).c_str());
    if (inventories.empty()) {
      printError("no agents in " + cluster->paths().cluster_file +
                 ": add one with `ringmasterctl cluster add NAME tcp://HOST:PORT --key=KEY` (its "
                 "key: `ringmaster-agent pubkey --state-dir DIR` on its host), or install one over "
                 "ssh with "
                 "installer/install-agent.sh; `ringmasterctl demo` starts a local one");
    }
  }
  return all_ok ? kExitOk : kExitFailure;
}

namespace {

// The jobs `status` shows: the one named, or every job that is not over (submitted, running,
// restarting, between attempts too, and one its leader decided to fail or stop whose ranks are
// still ending), or else the most recent one. Prints why not and returns the exit code.
std::optional<int> jobsToShow(History& h, const std::string& job_ref,
                              std::vector<store::JobRow>* jobs) {
  if (!job_ref.empty()) {
    auto job = h.store->job(job_ref);
    if (!job.isOk()) {
      printError(job.status().message());
      return job.status().code() == ErrorCode::kNotFound ? kExitBadInput : kExitFailure;
    }
    jobs->push_back(*job);
    return std::nullopt;
  }
  auto all = h.store->jobs();
  if (!all.isOk()) {
    printError(all.status().message());
    return kExitFailure;
  }
  for (const auto& j : *all) {
    if (j.fold.outcome() == proto::RANK_STATE_UNSPECIFIED && j.finished_at == 0) {
      jobs->push_back(j);
    }
  }
  if (jobs->empty() && !all->empty()) jobs->push_back(all->front());
  return std::nullopt;
}

// Agents that answer but cannot write their journal (a full disk): they hold their jobs'
// records in memory, and say so in their inventory. Asked only when a job is not over.
std::map<std::string, std::string> journalErrors(History& h,
                                                 const std::vector<store::JobRow>& jobs) {
  std::map<std::string, std::string> errors;
  const bool any_going = std::any_of(
      jobs.begin(), jobs.end(), [](const store::JobRow& j) { return !job::isOverState(j.state); });
  if (!h.cluster || !any_going || h.silent_agents.size() >= h.cluster->agents().size()) {
    return errors;
  }
  std::vector<std::string> answering;
  for (const auto& a : h.cluster->agents()) {
    if (!h.silent_agents.count(a.name)) answering.push_back(a.name);
  }
  for (const auto& [agent, inventory] : h.cluster->inventories(answering, 1500)) {
    if (inventory.isOk() && !inventory->journal_error().empty()) {
      errors[agent] = inventory->journal_error();
    }
  }
  return errors;
}

// One job as `status` shows it: the history's row and ranks, with what the silence of their
// agents makes unknown laid over them.
struct JobStatus {
  store::JobRow row;  // state and finished_at as shown
  std::vector<store::RankRow> ranks;
  std::string last_known_state;  // the history's state, before liveness
  client::JobLiveness liveness;
  std::optional<job::HangWatch> hang;
  std::optional<store::SlurmJobRow> slurm;
  int restarts_left = -1;
  std::optional<proto::JobDecision> waiting;  // the leader's wait, while the job is waiting

  std::string rankState(const store::RankRow& r) const {
    const bool unknown =
        std::binary_search(liveness.unknown_ranks.begin(), liveness.unknown_ranks.end(), r.rank);
    if (unknown) return "unknown";
    return client::showRankState(r.state, r.last_step, client::launcherReportsSteps(row.launcher));
  }
};

Result<JobStatus> jobStatus(const Globals& globals, History& h, store::JobRow row,
                            const std::map<std::string, double>& silent_since) {
  JobStatus status;
  status.slurm = catchUpSlurmJob(globals, *h.store, *h.writer, row.job_id);
  if (status.slurm) {
    if (auto again = h.store->job(row.job_id); again.isOk()) row = *again;
  }
  RM_ASSIGN_OR_RETURN(status.ranks, h.store->ranks(row.job_id));
  // What the history last heard is not what is true now when the agents that would tell are
  // silent: their ranks are unknown, and so is the job when no agent of a going rank answers.
  const client::ShownJob shown = shownJob(row, status.ranks, silent_since);
  status.liveness = shown.liveness;
  status.last_known_state = row.state;
  row.state = shown.state;
  row.finished_at = shown.clock_stop;  // an unknown job's clock stops at the last evidence
  job::JobModel model(row.job_id);
  model.applyStored(store::storedJobOf(row, status.ranks));
  status.hang = model.hang();
  status.restarts_left = model.restartsLeft();
  if (model.phase() == job::JobPhase::kWaiting) status.waiting = model.decision();
  status.row = std::move(row);
  return status;
}

json statusJson(const JobStatus& s, const std::map<std::string, std::string>& journal_errors) {
  json entry = jobJson(s.row);
  if (s.liveness.job_unknown) entry["finished_at"] = 0;
  if (s.hang) {
    entry["hang"] = {{"stage", s.hang->stage},
                     {"rank", s.hang->rank},
                     {"agent", s.hang->agent},
                     {"cause", s.hang->cause},
                     {"since", s.hang->since}};
  }
  if (!journal_errors.empty()) entry["agent_journal_errors"] = journal_errors;
  if (s.waiting) {
    entry["waiting"] = {{"reason", s.waiting->reason()},
                        {"until", s.waiting->wait_until()},
                        {"lost_agents", std::vector<std::string>(s.waiting->waiting_for().begin(),
                                                                 s.waiting->waiting_for().end())}};
  }
  if (s.liveness.anyUnknown()) {
    entry["last_known_state"] = s.last_known_state;
    entry["reason"] = s.liveness.describe();
    entry["silent_agents"] = s.liveness.silent;
  }
  if (s.slurm) {
    entry["slurm"] = {{"cluster", s.slurm->cluster},
                      {"job_id", s.slurm->slurm_job_id},
                      {"state", s.slurm->state},
                      {"reason", s.slurm->reason},
                      {"job_dir", s.slurm->job_dir}};
  }
  entry["ranks"] = json::array();
  for (const auto& r : s.ranks) {
    json rank = rankJson(r);
    if (const std::string shown = s.rankState(r); shown != r.state) {
      rank["state"] = shown;
      if (shown == "unknown") rank["last_known_state"] = r.state;
    }
    entry["ranks"].push_back(rank);
  }
  return entry;
}

void printStatus(const JobStatus& s, const std::map<std::string, std::string>& journal_errors) {
  const store::JobRow& j = s.row;
  const std::string restarts =
      j.state == "restarting" ? " (" + std::to_string(s.restarts_left) + " restart(s) left)" : "";
  std::printf("job %s (%s, %s) %s%s, attempt %u, %d rank(s), %s\n", j.job_id.c_str(),
              j.name.c_str(), j.launcher.c_str(), j.state.c_str(), restarts.c_str(), j.attempt,
              j.world_size, jobDuration(j).c_str());
  if (s.slurm) std::printf("%s\n", slurmRowText(*s.slurm).c_str());
  if (s.waiting) {
    std::printf("%s\n", terminalSafe("waiting until " + formatTime(s.waiting->wait_until()) + ": " +
                                     s.waiting->reason())
                            .c_str());
  }
  if (s.liveness.anyUnknown()) std::printf("%s\n", s.liveness.describe().c_str());
  if (!job::isOverState(j.state)) {
    for (const auto& [agent, error] : journal_errors) {
      std::printf("%s\n", terminalSafe("agent " + agent + " cannot write its journal: " + error +
                                       " (its jobs' records wait in its memory until it can)")
                              .c_str());
    }
  }
  if (s.hang) {
    std::printf("%s %s\n", s.hang->stage == "hung" ? "hung:" : "suspected hang:",
                terminalSafe(s.hang->cause).c_str());
  }
  for (const auto& r : s.ranks) {
    // Backend auto put the job on the CPU: say why, once.
    if (const std::string why = job::cpuReasonOf(r.device); !why.empty()) {
      std::printf("on the CPU: %s\n", why.c_str());
      break;
    }
  }
  Table table({"RANK", "AGENT", "DEVICE", "PID", "STATE", "EXIT", "LAST STEP", "ERROR"});
  for (const auto& r : s.ranks) {
    table.add({std::to_string(r.rank), r.agent, deviceCell(r.device),
               r.pid ? std::to_string(r.pid) : "-", s.rankState(r), exitText(r),
               r.last_step >= 0 ? std::to_string(r.last_step) : "-", r.error});
  }
  std::printf("%s", table.render().c_str());
}

}  // namespace

int runStatus(const Globals& globals, const std::string& job_ref, bool as_json) {
  History h;
  if (!openHistory(globals, &h)) return kExitFailure;
  std::vector<store::JobRow> jobs;
  if (const std::optional<int> failed = jobsToShow(h, job_ref, &jobs)) return *failed;
  const std::map<std::string, double> silent_since = silentSince(*h.store, h.silent_agents);
  const std::map<std::string, std::string> journal_errors = journalErrors(h, jobs);
  json out = json::array();
  for (store::JobRow& row : jobs) {
    auto status = jobStatus(globals, h, std::move(row), silent_since);
    if (!status.isOk()) {
      printError(status.status().message());
      return kExitFailure;
    }
    if (as_json) {
      out.push_back(statusJson(*status, journal_errors));
    } else {
      printStatus(*status, journal_errors);
    }
  }
  if (as_json) std::printf("%s\n", (job_ref.empty() ? out : out.at(0)).dump(2).c_str());
  if (!as_json && jobs.empty()) std::printf("no jobs yet\n");
  return kExitOk;
}

int runMetrics(const Globals& globals, const MetricsFlags& flags) {
  if (flags.format != "csv" && flags.format != "json") {
    printError("--format must be csv or json, not '" + flags.format + "'");
    return kExitBadInput;
  }
  History h;
  if (!openHistory(globals, &h)) return kExitFailure;
  auto job = h.store->job(flags.job);
  if (!job.isOk()) {
    printError(job.status().message());
    return kExitBadInput;
  }
  catchUpSlurmJob(globals, *h.store, *h.writer, job->job_id);
  store::MetricQuery query;
  query.job_id = job->job_id;
  query.rank = flags.rank;
  if (!flags.name.empty()) query.name = flags.name;
  auto rows = h.store->metrics(query);
  if (!rows.isOk()) {
    printError(rows.status().message());
    return kExitFailure;
  }
  if (flags.format == "json") {
    json out = json::array();
    for (const auto& m : *rows) {
      out.push_back({{"job", m.job_id},
                     {"attempt", m.attempt},
                     {"rank", m.rank},
                     {"step", m.step},
                     {"name", m.name},
                     {"value", metricValueJson(m.value)},
                     {"time", m.time}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  std::string out = "job,attempt,rank,step,name,value,time\n";
  char line[512];
  for (const auto& m : *rows) {
    std::snprintf(line, sizeof line, "%s,%u,%d,%lld,%s,%.17g,%.6f\n", m.job_id.c_str(), m.attempt,
                  m.rank, static_cast<long long>(m.step), m.name.c_str(), m.value, m.time);
    out += line;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

namespace {

// With stop --wait: syncs until no rank of the job's newest attempt is pending or running, or
// until the timeout. Returns the ranks still going then ("2 on a1").
std::vector<store::RankRow> waitForRanksToEnd(const Globals& globals,
                                              client::ClusterClient& cluster,
                                              const std::string& job_id, bool on_slurm,
                                              double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  std::vector<store::RankRow> going;
  while (true) {
    auto store = cluster.history();
    auto writer = cluster.writer();
    if (!store.isOk() || !writer.isOk()) return going;
    if (on_slurm) {
      catchUpSlurmJob(globals, **store, **writer, job_id);
    } else {
      client::SyncOptions options;
      options.timeout_ms = 2000;
      options.request_timeout_ms = 1500;
      static_cast<void>(cluster.sync({}, options));  // an agent that does not answer: its
                                                     // ranks stay going, and the wait says so
    }
    going.clear();
    if (auto ranks = (*store)->ranks(job_id); ranks.isOk()) {
      for (auto& rank : *ranks) {
        const auto status = job::rankStatusNamed(rank.state);
        if (status &&
            (*status == job::RankStatus::kPending || *status == job::RankStatus::kRunning)) {
          going.push_back(std::move(rank));
        }
      }
    }
    if (going.empty() || std::chrono::steady_clock::now() >= deadline) return going;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace

int runStop(const Globals& globals, const StopFlags& flags) {
  const std::string& job_ref = flags.job;
  const auto started = std::chrono::steady_clock::now();
  auto cluster = openCluster(globals);
  if (!cluster) return kExitFailure;
  syncQuietly(*cluster);
  std::string job_id = job_ref;
  std::optional<store::SlurmJobRow> slurm;
  if (auto store = cluster->history(); store.isOk()) {
    if (auto job = (*store)->job(job_ref); job.isOk()) job_id = job->job_id;
    if (auto row = (*store)->slurmJob(job_id); row.isOk()) slurm = *row;
  }
  auto signalled = cluster->stop(job_id);
  if (!signalled.isOk()) {
    printError(signalled.status().message());
    return kExitFailure;
  }
  if (slurm) {
    std::printf("stopping %s: scancel %s on %s\n", job_id.c_str(), slurm->slurm_job_id.c_str(),
                slurm->cluster.c_str());
  } else {
    std::printf("stopping %s: %d rank(s) signalled\n", job_id.c_str(), *signalled);
  }
  if (!flags.wait) return kExitOk;
  std::fflush(stdout);
  const std::vector<store::RankRow> going =
      waitForRanksToEnd(globals, *cluster, job_id, slurm.has_value(), flags.timeout_s);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (going.empty()) {
    std::printf("stopped %s: no rank runs any more (%.1fs)\n", job_id.c_str(), took);
    return kExitOk;
  }
  std::map<std::string, int> by_agent;
  for (const auto& rank : going) ++by_agent[rank.agent];
  std::string where;
  for (const auto& [agent, count] : by_agent) {
    where += (where.empty() ? "" : ", ") + std::to_string(count) + " on " + agent;
  }
  printError(job_id + ": " + std::to_string(going.size()) + " rank(s) still running after " +
             formatDuration(flags.timeout_s) + " (" + where + ")");
  return kExitFailure;
}

int runRestart(const Globals& globals, const RestartFlags& flags) {
  if (flags.exclude && !flags.rank && flags.agent.empty()) {
    printError("--exclude needs --rank or --agent: which host to leave out");
    return kExitBadInput;
  }
  auto cluster = openCluster(globals);
  if (!cluster) return kExitFailure;
  auto job = findJob(*cluster, flags.job);
  if (!job) return kExitBadInput;
  std::string agent = flags.agent;
  std::string reason = agent.empty() ? "" : "agent " + agent;
  if (flags.rank) {
    auto ranks = (*cluster->history())->ranks(job->job_id);
    if (ranks.isOk()) {
      for (const auto& r : *ranks) {
        if (r.rank == *flags.rank) agent = r.agent;
      }
    }
    if (agent.empty()) {
      printError("job " + job->job_id + " has no rank " + std::to_string(*flags.rank) +
                 " in its newest attempt");
      return kExitBadInput;
    }
    reason = "rank " + std::to_string(*flags.rank) + " on " + agent;
  }
  auto report = cluster->restart(job->job_id, flags.exclude ? agent : "", reason);
  if (!report.isOk()) {
    printError(report.status().message());
    return report.status().code() == ErrorCode::kInvalidArgument ? kExitBadInput : kExitFailure;
  }
  const std::string without = flags.exclude ? " without " + agent : "";
  if (report->was_running) {
    std::printf(
        "restarting %s: its agents stop attempt %u and start the next%s from the newest "
        "checkpoint\n",
        job->job_id.c_str(), job->attempt, without.c_str());
  } else {
    std::printf("%s was over: attempt %u started%s from the newest checkpoint\n",
                job->job_id.c_str(), report->attempt, without.c_str());
  }
  return kExitOk;
}

int runKill(const Globals& globals, const std::string& job_ref, int rank) {
  auto cluster = openCluster(globals);
  if (!cluster) return kExitFailure;
  syncQuietly(*cluster);
  auto job = findJob(*cluster, job_ref);
  if (!job) return kExitBadInput;
  if (Status killed = cluster->killRank(job->job_id, rank); !killed.isOk()) {
    printError(killed.message());
    return kExitFailure;
  }
  std::printf(
      "rank %d of %s killed (SIGKILL): it fails as a crash would; with restarts left the job "
      "comes back from its newest checkpoint\n",
      rank, job->job_id.c_str());
  return kExitOk;
}

int runRuns(const Globals& globals, bool as_json, bool with_archived, bool with_link_tests) {
  History h;
  if (!openHistory(globals, &h)) return kExitFailure;
  auto jobs = h.store->jobs();
  if (!jobs.isOk()) {
    printError(jobs.status().message());
    return kExitFailure;
  }
  // Archived runs are left out as the History tab leaves them out; with --archived they are
  // listed and say so (an ARCHIVED column, an "archived" key), and only then: the output
  // without the flag stays what scripts already read.
  if (!with_archived) {
    std::erase_if(*jobs, [](const store::JobRow& j) { return j.archived; });
  }
  // A preflight of 64 agents runs 2,016 link tests: their figures are its report's
  // (`preflight --history`), not runs to list among the training runs.
  if (!with_link_tests) {
    const size_t link_tests =
        std::erase_if(*jobs, [](const store::JobRow& j) { return store::isPreflightJob(j.name); });
    if (link_tests > 0) {
      std::fprintf(stderr,
                   "ringmasterctl: %zu preflight link test(s) not listed (--link-tests lists "
                   "them; their figures: ringmasterctl preflight --history)\n",
                   link_tests);
    }
  }
  if (as_json) {
    json out = json::array();
    for (const auto& j : *jobs) {
      json row = jobJson(j);
      if (with_archived) row["archived"] = j.archived;
      out.push_back(std::move(row));
    }
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  std::vector<std::string> header = {"JOB",   "NAME",    "LAUNCHER",  "STATE",
                                     "RANKS", "ATTEMPT", "SUBMITTED", "DURATION"};
  if (with_archived) header.push_back("ARCHIVED");
  Table table(header);
  for (const auto& j : *jobs) {
    std::vector<std::string> row = {j.job_id,
                                    j.name,
                                    j.launcher,
                                    j.state,
                                    std::to_string(j.world_size),
                                    std::to_string(j.attempt),
                                    formatTime(j.submitted_at),
                                    jobDuration(j)};
    if (with_archived) row.push_back(j.archived ? "yes" : "");
    table.add(row);
  }
  std::printf("%s", table.render().c_str());
  return kExitOk;
}

namespace {

json entityJson(const hardware::HardwareEntity& e) {
  return {{"kind", e.kind},
          {"id", e.id},
          {"host", e.host},
          {"gpu_index", e.gpu_index},
          {"gpu_name", e.gpu_name},
          {"runs", e.runs},
          {"failed", e.failed},
          {"succeeded", e.succeeded},
          {"hangs", e.hangs},
          {"failed_first", e.failed_first},
          {"held_back", e.held_back},
          {"held_back_ratio", e.held_back_ratio},
          {"held_back_jobs", e.held_back_jobs},
          {"critical_faults", e.critical_faults},
          {"xids", e.xids},
          {"memory_faults", e.memory_faults},
          {"last_fault", e.last_fault},
          {"failed_jobs", e.failed_jobs},
          {"p_value", e.p_value},
          {"outlier", e.outlier}};
}

std::string countCell(int n) { return n == 0 ? "" : std::to_string(n); }

}  // namespace

int runHardware(const Globals& globals, bool as_json, std::optional<double> since_days) {
  History h;
  if (!openHistory(globals, &h)) return kExitFailure;
  const double since = since_days ? unixSeconds() - *since_days * 86400.0 : 0;
  auto runs = hardware::hardwareRuns(*h.store, since);
  if (!runs.isOk()) {
    printError(runs.status().message());
    return kExitFailure;
  }
  const hardware::HardwareReport report = hardware::hardwareReport(*runs);
  if (as_json) {
    json entities = json::array();
    for (const auto& e : report.entities) entities.push_back(entityJson(e));
    json outliers = json::array();
    for (const auto& outlier : report.outliers) {
      outliers.push_back({{"text", outlier.text}, {"id", report.entities[outlier.entity].id}});
    }
    json out = {{"since", since},          {"runs", report.runs},
                {"failed", report.failed}, {"succeeded", report.succeeded},
                {"entities", entities},    {"outliers", outliers}};
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  if (report.runs == 0) {
    std::printf("no runs in the history%s: the hardware report reads the runs' hosts and GPUs\n",
                since_days ? " in that time" : "");
    return kExitOk;
  }
  Table table(
      {"HOST / GPU", "RUNS", "FAILED", "FAILED FIRST", "HUNG", "HELD BACK", "GPU FAULTS", ""});
  // Each host, then its GPUs under it.
  std::vector<const hardware::HardwareEntity*> rows;
  for (const auto& host : report.entities) {
    if (host.kind != "host") continue;
    rows.push_back(&host);
    for (const auto& gpu : report.entities) {
      if (gpu.kind == "gpu" && gpu.host == host.id) rows.push_back(&gpu);
    }
  }
  for (const hardware::HardwareEntity* row : rows) {
    const hardware::HardwareEntity& e = *row;
    const std::string name = (e.kind == "host" ? "" : "  ") + hardware::entityLabel(e);
    const std::string faults =
        e.kind == "host" ? ""
                         : countCell(e.critical_faults) +
                               (e.xids > 0 ? " (" + std::to_string(e.xids) + " XID)" : "");
    char held_back[32] = "";
    if (e.held_back > 0) {
      std::snprintf(held_back, sizeof held_back, "%d (%.2fx)", e.held_back, e.held_back_ratio);
    }
    table.add({name, std::to_string(e.runs), countCell(e.failed), countCell(e.failed_first),
               countCell(e.hangs), held_back, faults, e.outlier ? "<- outlier" : ""});
  }
  std::printf("%s", table.render().c_str());
  std::printf("\n%d run%s, %d failed, %d succeeded%s\n", report.runs, report.runs == 1 ? "" : "s",
              report.failed, report.succeeded, since_days ? " (in that time)" : "");
  if (report.outliers.empty()) {
    std::printf("no host or GPU stands out\n");
    return kExitOk;
  }
  for (const auto& outlier : report.outliers) {
    std::printf("%s\n", terminalSafe(outlier.text).c_str());
  }
  for (const auto& e : report.entities) {
    if (!e.outlier || e.failed_jobs.empty()) continue;
    std::string jobs;
    for (const auto& id : e.failed_jobs) jobs += " " + id;
    std::printf("  failed runs on %s:%s\n",
                e.kind == "host" ? e.id.c_str() : hardware::shortGpuUuid(e.id).c_str(),
                jobs.c_str());
  }
  return kExitOk;
}

int runSync(const Globals& globals) {
  auto cluster = openCluster(globals);
  if (!cluster) return kExitFailure;
  client::SyncOptions options;
  options.timeout_ms = 0;
  auto report = cluster->sync({}, options);
  if (!report.isOk()) {
    printError(report.status().message());
    return kExitFailure;
  }
  for (const auto& [agent, error] : report->agent_errors) printError(error.message());
  for (const auto& damage : report->damage) printError(damage.describe());
  std::printf("synced %llu record(s) from %zu agent(s)\n",
              static_cast<unsigned long long>(report->records),
              cluster->agents().size() - report->agent_errors.size());
  // Jobs on Slurm that were not over when last seen: from their job directories.
  auto store = cluster->history();
  auto writer = cluster->writer();
  Result<std::vector<store::SlurmJobRow>> slurm_jobs =
      !store.isOk()    ? Result<std::vector<store::SlurmJobRow>>(store.status())
      : !writer.isOk() ? Result<std::vector<store::SlurmJobRow>>(writer.status())
                       : (*store)->slurmJobs();
  if (slurm_jobs.isOk()) {
    int caught_up = 0;
    for (const auto& row : *slurm_jobs) {
      if (slurm::isFinished(slurm::phaseOf(row.state))) continue;
      if (auto now = catchUpSlurmJob(globals, **store, **writer, row.job_id)) {
        ++caught_up;
        std::printf("%s\n", slurmRowText(*now).c_str());
      }
    }
    if (caught_up) std::printf("caught up %d job(s) on Slurm\n", caught_up);
  }
  // Lost records are never a success, even when every agent answered.
  return report->agent_errors.empty() && report->damage.empty() ? kExitOk : kExitFailure;
}

}  // namespace ringmaster::ctl
