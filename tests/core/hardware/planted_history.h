#pragma once
// A history of generated runs, written as agents' journals would write it (each agent's records
// applied through store::Writer::applyJournal): 4 agents gpu00..gpu03 with 2 GPUs each, jobs of 2
// hosts (2 ranks per host), failures with their first failing rank, and GPU fault events. For the
// hardware report's tests and `ringmasterctl hardware` on a planted history.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ringmaster/store/writer.h"

namespace ringmaster::hardware {

inline std::string uuidOf(int host, int gpu) {
  return "GPU-" + std::to_string(host) + std::to_string(gpu) + "3f2c1a-9e0b-4d5e-8f60-0000000000" +
         std::to_string(host) + std::to_string(gpu);
}

inline std::string deviceOf(int host, int gpu) {
  return "GPU " + std::to_string(gpu) + " NVIDIA H100 80GB HBM3 (" + uuidOf(host, gpu) + ")";
}

// Journals of 4 agents, written run by run, then applied to the history.
class PlantedCluster {
 public:
  struct Run {
    std::vector<int> hosts;  // 2 ranks per host, on its GPUs 0 and 1
    bool fails = false;
    int culprit_rank = -1;
    std::string cause_kind = "exited";
    std::vector<std::pair<int, proto::GpuFaultSeen>> faults;  // (rank, fault)
    // Steps each rank reports (step_time and comm_wait, as the native trainer does): every rank
    // computes 50 ms a step, `slow_rank` that many times longer, and every step takes the
    // slowest's time (the others wait for it in the allreduce). Every 23rd step one rank in turn
    // is descheduled for 10x its compute: a busy host's hiccups, not a straggler.
    int steps = 0;
    int slow_rank = -1;
    double slow_factor = 1;
  };

  void add(const std::string& job, double time, const Run& run) {
    const int world = static_cast<int>(run.hosts.size()) * 2;
    const std::string leader = host(run.hosts[0]);
    for (size_t h = 0; h < run.hosts.size(); ++h) {
      const std::string agent = host(run.hosts[h]);
      proto::JournalRecord& a = next(agent, job, time, "agent:" + agent);
      a.mutable_job_accepted()->set_name("train");
      a.mutable_job_accepted()->set_world_size(world);
      a.mutable_job_accepted()->set_agent(leader);
      for (int local = 0; local < 2; ++local) {
        auto* assignment = a.mutable_job_accepted()->add_ranks();
        assignment->set_rank(static_cast<int>(h) * 2 + local);
        assignment->set_local_rank(local);
      }
      for (int local = 0; local < 2; ++local) {
        const int rank = static_cast<int>(h) * 2 + local;
        proto::JournalRecord& s = next(agent, job, time + 1, "rank:" + std::to_string(rank));
        s.mutable_rank_started()->set_rank(rank);
        s.mutable_rank_started()->set_local_rank(local);
        s.mutable_rank_started()->set_device(deviceOf(run.hosts[h], local));
      }
    }
    for (size_t h = 0; h < run.hosts.size(); ++h) {
      const std::string agent = host(run.hosts[h]);
      for (int local = 0; local < 2; ++local) {
        const int rank = static_cast<int>(h) * 2 + local;
        proto::JournalRecord& x = next(agent, job, time + 5, "rank:" + std::to_string(rank));
        x.mutable_rank_exited()->set_rank(rank);
        x.mutable_rank_exited()->set_state(
            run.fails && rank == run.culprit_rank ? proto::FAILED : proto::SUCCEEDED);
      }
    }
    for (int step = 0; step < run.steps; ++step) {
      auto compute = [&](int rank) {
        double seconds = 0.05 * (rank == run.slow_rank ? run.slow_factor : 1.0);
        if (step % 23 == 0 && rank == (step / 23) % world) seconds *= 10;
        return seconds;
      };
      double step_time = 0;
      for (int rank = 0; rank < world; ++rank) step_time = std::max(step_time, compute(rank));
      step_time += 0.005;  // the allreduce itself
      for (int rank = 0; rank < world; ++rank) {
        const std::string agent = host(run.hosts[static_cast<size_t>(rank / 2)]);
        proto::JournalRecord& m =
            next(agent, job, time + 1 + step * 0.01, "rank:" + std::to_string(rank));
        proto::MetricSample& sample = *m.mutable_metric();
        sample.set_rank(rank);
        sample.set_step(step);
        proto::MetricValue& total = *sample.add_values();
        total.set_name("step_time");
        total.set_value(step_time);
        proto::MetricValue& wait = *sample.add_values();
        wait.set_name("comm_wait");
        wait.set_value(step_time - compute(rank));
      }
    }
    for (const auto& [rank, fault] : run.faults) {
      const std::string agent = host(run.hosts[static_cast<size_t>(rank / 2)]);
      *next(agent, job, time + 2, "host:" + agent).mutable_gpu_fault() = fault;
    }
    if (run.fails) {
      proto::JournalRecord& f = next(leader, job, time + 3, "agent:" + leader);
      f.mutable_job_failure()->set_kind(run.cause_kind);
      f.mutable_job_failure()->set_rank(run.culprit_rank);
      f.mutable_job_failure()->set_agent(
          host(run.hosts[static_cast<size_t>(run.culprit_rank / 2)]));
      f.mutable_job_failure()->set_cause("rank " + std::to_string(run.culprit_rank) + " failed");
    }
    proto::JournalRecord& o = next(leader, job, time + 4, "agent:" + leader);
    o.mutable_job_outcome()->set_state(run.fails ? proto::FAILED : proto::SUCCEEDED);
    o.mutable_job_outcome()->set_attempts(1);
  }

  void applyTo(store::Writer& history) {
    for (auto& [agent, records] : journals_) {
      ASSERT_TRUE(history.applyJournal(agent, "j-" + agent, records, records.size() + 1).isOk());
    }
  }

  static std::string host(int h) { return "gpu0" + std::to_string(h); }

 private:
  proto::JournalRecord& next(const std::string& agent, const std::string& job, double time,
                             const std::string& source) {
    auto& records = journals_[agent];
    proto::JournalRecord& r = records.emplace_back();
    r.set_seq(records.size());
    r.set_time(time);
    r.set_job(job);
    r.set_attempt(1);
    r.set_source(source);
    return r;
  }
  std::map<std::string, std::vector<proto::JournalRecord>> journals_;
};

// 36 runs of 2 hosts each, every pair of hosts in turn; with `bad`, GPU 1 of gpu02 fails the
// runs it is in, but one, with its own rank first; and one run elsewhere fails by bad luck.
inline void plantRuns(PlantedCluster& cluster, bool bad) {
  const std::vector<std::vector<int>> pairs = {{0, 1}, {2, 3}, {0, 2}, {1, 3}, {0, 3}, {1, 2}};
  int bad_runs = 0;
  for (int i = 0; i < 36; ++i) {
    PlantedCluster::Run run;
    run.hosts = pairs[static_cast<size_t>(i) % pairs.size()];
    const bool on_bad = run.hosts[0] == 2 || run.hosts[1] == 2;
    if (bad && on_bad && i % 3 == 1 && bad_runs < 5) {
      ++bad_runs;
      run.fails = bad_runs != 3;                     // 4 of the 5 chosen runs on it fail
      run.culprit_rank = run.hosts[0] == 2 ? 1 : 3;  // the rank on host 2's GPU 1
      if (bad_runs == 4) run.cause_kind = "hung";
    }
    if (i == 6) {  // bad luck on hosts 0 and 1
      run.fails = true;
      run.culprit_rank = 0;
    }
    cluster.add("job-" + std::to_string(100 + i), 1000 + 100.0 * i, run);
  }
}

// 12 runs of 2 hosts that report their steps; with `slow`, GPU 0 of gpu03 computes 1.6x as
// long as the others in every run it is in (6 of them): it fails nothing, it holds them back.
inline void plantStepRuns(PlantedCluster& cluster, bool slow) {
  const std::vector<std::vector<int>> pairs = {{0, 1}, {2, 3}, {0, 2}, {1, 3}, {0, 3}, {1, 2}};
  for (int i = 0; i < 12; ++i) {
    PlantedCluster::Run run;
    run.hosts = pairs[static_cast<size_t>(i) % pairs.size()];
    run.steps = 400;
    if (slow && (run.hosts[0] == 3 || run.hosts[1] == 3)) {
      run.slow_rank = run.hosts[0] == 3 ? 0 : 2;  // the rank on gpu03's GPU 0
      run.slow_factor = 1.6;
    }
    cluster.add("job-" + std::to_string(200 + i), 5000 + 100.0 * i, run);
  }
}

}  // namespace ringmaster::hardware
