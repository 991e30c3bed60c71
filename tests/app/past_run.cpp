#include "past_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "ringmaster/metrics/line_parser.h"
#include "ringmaster/store/store.h"

namespace ringmaster::testing {
namespace {

constexpr size_t kBatch = 20000;  // records per applyJournal of one host

// One host's journal: records gather here and go to the history in batches.
class HostJournal {
 public:
  HostJournal(store::Writer* writer, std::string agent)
      : writer_(writer), agent_(std::move(agent)) {}

  proto::JournalRecord& add(const std::string& job, double time, const std::string& source) {
    proto::JournalRecord& r = records_.emplace_back();
    r.set_seq(++seq_);
    r.set_time(time);
    r.set_job(job);
    r.set_attempt(1);
    r.set_source(source);
    return r;
  }
  Status flushIfFull() { return records_.size() >= kBatch ? flush() : Status::ok(); }
  Status flush() {
    if (records_.empty()) return Status::ok();
    Status applied = writer_->applyJournal(agent_, "journal-" + agent_, records_, seq_ + 1);
    records_.clear();
    return applied;
  }

 private:
  store::Writer* writer_;
  std::string agent_;
  uint64_t seq_ = 0;
  std::vector<proto::JournalRecord> records_;
};

}  // namespace

std::string pastRunHost(int index) {
  char name[16];
  std::snprintf(name, sizeof name, "gpu%02d", index + 1);
  return name;
}

Status writePastRun(const std::string& db, const PastRun& run) {
  auto writer = store::Writer::open(db);
  if (!writer.isOk()) return writer.status();
  const int world = run.world;
  const int hosts = (world + kPastRunRanksPerHost - 1) / kPastRunRanksPerHost;
  std::vector<HostJournal> journals;
  for (int h = 0; h < hosts; ++h) journals.emplace_back(writer->get(), pastRunHost(h));
  const std::string& job = run.job_id;
  for (int h = 0; h < hosts; ++h) {
    HostJournal& j = journals[h];
    proto::JobAccepted* a = j.add(job, run.start, "agent:" + pastRunHost(h)).mutable_job_accepted();
    a->set_name(world >= 64 ? "llm-pretrain-" + std::to_string(world)
                            : "resnet-" + std::to_string(world));
    a->set_launcher(proto::TORCHRUN);
    a->set_world_size(world);
    a->set_agent(pastRunHost(h));
    const int first = h * kPastRunRanksPerHost;
    const int last = std::min(world, first + kPastRunRanksPerHost);
    for (int rank = first; rank < last; ++rank) {
      proto::RankAssignment* ra = a->add_ranks();
      ra->set_rank(rank);
      ra->set_local_rank(rank - first);
    }
    for (int rank = first; rank < last; ++rank) {
      proto::RankStarted* s =
          j.add(job, run.start + 1, "rank:" + std::to_string(rank)).mutable_rank_started();
      s->set_rank(rank);
      s->set_local_rank(rank - first);
      s->set_pid(40000 + rank);
      s->set_device("GPU " + std::to_string(rank - first));
    }
  }
  std::mt19937_64 rng(world);
  std::normal_distribution<double> noise(0, 1);
  std::vector<double> compute(world);
  double t = run.start + 2;
  for (int step = 1; step <= run.steps; ++step) {
    const bool second_half = step > run.steps / 2;
    double slowest = 0;
    for (int r = 0; r < world; ++r) {
      compute[r] = 0.20 * (1 + 0.03 * noise(rng)) * (r == run.slow_rank && second_half ? 2 : 1);
      slowest = std::max(slowest, compute[r]);
    }
    const double step_time = slowest + 0.02;
    t += step_time;
    for (int r = 0; r < world; ++r) {
      proto::MetricSample* m = journals[r / kPastRunRanksPerHost]
                                   .add(job, t, "rank:" + std::to_string(r))
                                   .mutable_metric();
      m->set_rank(r);
      m->set_step(step);
      auto value = [&](const char* name, double v) {
        proto::MetricValue* mv = m->add_values();
        mv->set_name(name);
        mv->set_value(v);
      };
      value("loss",
            0.35 + 2.0 * std::exp(-step / (run.steps / 4.3)) + 0.004 * r + 0.04 * noise(rng));
      value("samples_per_sec", 256 / step_time);
      value("step_time", step_time);
      value("comm_wait", step_time - compute[r]);
      value("lr", 3e-4 * std::min(1.0, step / 30.0));
      if (run.checkpoint_every > 0 && step % run.checkpoint_every == 0) {
        value(metrics::kCheckpointMetric, 1);
      }
    }
    if (step % 5 == 0) {
      for (int h = 0; h < hosts; ++h) {
        proto::HealthSample* health =
            journals[h].add("", t, "agent:" + pastRunHost(h)).mutable_health();
        health->set_cpu_percent(35 + 10 * std::sin(step / 20.0 + h));
        health->set_memory_used_bytes(uint64_t{180} << 30);
        health->set_memory_total_bytes(uint64_t{1024} << 30);
        for (int g = 0; g < kPastRunRanksPerHost; ++g) {
          proto::GpuHealth* gpu = health->add_gpus();
          gpu->set_index(g);
          const bool slow = h * kPastRunRanksPerHost + g == run.slow_rank && second_half;
          gpu->set_utilization_percent(slow ? 97 : 88 + 4 * std::sin(step / 9.0 + g));
          gpu->set_memory_used_bytes(uint64_t{61} << 30);
          gpu->set_memory_total_bytes(uint64_t{80} << 30);
          gpu->set_temperature_c(slow ? 84 : 66 + g);
          gpu->set_power_w(slow ? 690 : 520 + 10 * g);
        }
      }
    }
    for (HostJournal& j : journals) RM_RETURN_IF_ERROR(j.flushIfFull());
  }
  for (int h = 0; h < hosts; ++h) {
    HostJournal& j = journals[h];
    const int first = h * kPastRunRanksPerHost;
    const int last = std::min(world, first + kPastRunRanksPerHost);
    for (int rank = first; rank < last; ++rank) {
      proto::RankExited* e =
          j.add(job, t + 1, "rank:" + std::to_string(rank)).mutable_rank_exited();
      e->set_rank(rank);
      e->set_state(proto::SUCCEEDED);
    }
    proto::JobFinished* f = j.add(job, t + 1, "agent:" + pastRunHost(h)).mutable_job_finished();
    f->set_state(proto::SUCCEEDED);
    f->set_agent(pastRunHost(h));
    f->set_ranks(last - first);
    if (h == 0) {
      proto::JobOutcome* o = j.add(job, t + 1.5, "agent:" + pastRunHost(h)).mutable_job_outcome();
      o->set_state(proto::SUCCEEDED);
      o->set_attempts(1);
    }
    RM_RETURN_IF_ERROR(j.flush());
  }
  return Status::ok();
}

}  // namespace ringmaster::testing
