#pragma once
// Everything a dashboard shows about one job, built from journal records as they arrive and from
// a history snapshot (a job that ran while the app was closed, or a past run): the ranks and
// their states, the lifecycle events, every point of every metric series of every rank, and the
// health of the job's hosts. Qt-free, so that tests and benchmarks drive it directly.
//
// Replays are harmless: a metric point at or before a series' last step (of the same attempt)
// is skipped, an event already seen (same source and seq) too.
//
// Not thread-safe: the GUI thread owns it.

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

// The generated protobuf code has Inventory::slots(), which Qt's `slots` keyword macro would eat:
// hide the macro while core's headers are parsed, whatever was included before.
#pragma push_macro("slots")
#undef slots
#include "ringmaster/client/cluster_session.h"
#include "ringmaster/hardware/checkpoint_economics.h"
#pragma pop_macro("slots")
#include "ringmaster/job/job_model.h"
#include "ringmaster/metrics/line_parser.h"
#include "ringmaster/metrics/series.h"

namespace ringmaster::gui {

struct RankInfo {
  int rank = 0;
  int local_rank = -1;
  std::string agent;
  std::string device;  // what it trains on (proto::RankStarted.device)
  int pid = 0;
  std::string state = "pending";  // pending | running | succeeded | failed | stopped
  int exit_code = 0;
  int signal = 0;
  std::string error;
  std::string log_tail;  // the end of its log once it exited, kept in the history
  int64_t step = -1;
  double samples_per_sec = std::numeric_limits<double>::quiet_NaN();
  double last_update = 0;  // unix seconds of the rank's newest record
  double started = 0, finished = 0;
};

struct JobEvent {
  double time = 0;
  // job_accepted | rank_started | rank_exited | job_finished | job_failure | job_restart |
  // job_outcome | hang_suspected | hang_hung | hang_cleared | gpu_fault (a fault of a GPU under
  // one of its ranks) | checkpoint (a "checkpoint" metric) |
  // agent_silent | agent_back (what this client saw: addClientEvent)
  std::string kind;
  std::string agent;
  std::string detail;
  uint32_t attempt = 0;
  int rank = -1;         // the rank it is about, -1 for the job
  bool problem = false;  // a rank failed, or an attempt did (job_failure: its root cause)
};

// One chart line's data: a metric of one rank, or the job total (rank kJobTotal).
inline constexpr int kJobTotal = -1;

// The mean of a rate series (samples/s, one point per step) over its points at or after
// `from_time`: the harmonic mean, i.e. the samples of those steps over their time when steps do
// equal work, not the mean of the rates (which fast steps inflate). NaN when none is positive.
double meanRate(const metrics::Series& series, double from_time = 0);
// step_time - comm_wait per rank (native workers report both): the time a rank spent working.
// With synchronous allreduce every rank's step time equals the slowest one's, so this, not the
// step time, shows which rank holds the others back.
inline constexpr const char* kBusyTime = "busy_time";

// A metric across ranks, one point per step that every rank reported: their mean, and the
// lowest and highest value (the band around the mean).
struct RankSpread {
  metrics::Series mean, min, max;
};

// A checkpoint every rank of an attempt saved at one step: when the first said so, and the
// longest any rank took to write it ("checkpoint_seconds"; 0 when no rank said).
struct CheckpointMark {
  uint32_t attempt = 0;
  int64_t step = 0;
  double time = 0;
  double seconds = 0;
};

class JobData {
 public:
  explicit JobData(std::string job_id);

  // A record of this job (record.job() == jobId()).
  void ingest(const std::string& agent, const proto::JournalRecord& record);
  // A host health record of one of the job's agents.
  void ingestHealth(const std::string& agent, const proto::JournalRecord& record);
  void ingestSnapshot(const client::JobSnapshot& snapshot);
  // The job as the history has it, read on the calling thread (a long run's take seconds: a
  // worker's, then adopted by a view on its own), its metric rows one at a time into the series
  // rather than all at once into a snapshot. `options.metrics` is ignored.
  static Result<std::unique_ptr<JobData>> fromHistory(store::Reader& history,
                                                      const std::string& job_id,
                                                      client::SnapshotOptions options = {});
  // An event this client saw rather than an agent recorded (an agent stopped answering, or
  // answered again): kept for as long as this view lives, not in the history.
  void addClientEvent(JobEvent event);

  const std::string& jobId() const { return job_id_; }
  const std::string& name() const { return name_; }
  // The spec's `description:` (known once the history's snapshot came); "" when it has none.
  const std::string& description() const { return description_; }
  const std::string& launcher() const { return launcher_; }
  int worldSize() const { return model_.worldSize(); }
  uint32_t attempt() const { return model_.attempt(); }
  // The job's lifecycle (the one model the history and ringmasterctl say in words).
  const job::JobModel& model() const { return model_; }
  // submitted | running | succeeded | failed | stopped
  std::string state() const;
  bool finished() const;
  double startTime() const { return start_time_; }
  double endTime() const;  // 0 while running
  int64_t maxStep() const { return max_step_; }
  // A job on Slurm: Slurm's job id and its newest state (from the snapshot, then as it changes).
  const std::optional<store::SlurmJobRow>& slurm() const { return slurm_; }
  void setSlurm(const store::SlurmJobRow& row);

  const std::map<int, RankInfo>& ranks() const { return ranks_; }
  const std::vector<JobEvent>& events() const { return events_; }
  // The first failure of the newest attempt, which is what a person should look at first.
  std::optional<JobEvent> firstProblem() const;
  // The agents' hang watch of the running attempt: a suspected hang (or, with on_hang: warn, a
  // confirmed one) until progress resumes; nullopt when none.
  std::optional<JobEvent> hangWatch() const;
  static bool isHangWatch(const JobEvent& event);
  std::vector<std::string> agents() const;  // in rank order, no repeats

  // Metric names in the order they first appeared.
  const std::vector<std::string>& metricNames() const { return metric_names_; }
  // rank (or kJobTotal) -> series of that metric; nullptr when the job never reported it.
  const std::map<int, metrics::Series>* metric(const std::string& name) const;
  // The metric's spread across ranks; nullptr for a one-rank job or a metric it never reported.
  const RankSpread* spread(const std::string& name) const;
  // The newest step any rank had reported by `time` (unix seconds); nullopt when none had.
  std::optional<double> stepAt(double time) const;

  // Health series of the job's hosts: agent -> ("cpu %", "memory %", "net rx MB/s",
  // "net tx MB/s", "gpu0 util %", "gpu0 memory %", "gpu0 °C", "gpu0 W", ...) -> series (x: time).
  const std::map<std::string, std::map<std::string, metrics::Series>>& health() const {
    return health_;
  }

  // Every checkpoint, by attempt and step.
  const std::vector<CheckpointMark>& checkpoints() const { return checkpoints_; }
  // Every host's record in the history (from the snapshot), for checkpoint economics.
  const std::vector<store::HostRecord>& hostRecords() const { return host_records_; }
  // What checkpoint economics needs of this job at `now`: its ranks, the newest checkpoint of the
  // running attempt (or its start), the median write time, the time and steps between the
  // attempt's last two checkpoints, what its restarts took, and its hosts' failure rate from the
  // history.
  hardware::CheckpointInputs checkpointInputs(double now) const;

  // Bumped on every change, so views redraw only when something happened.
  uint64_t version() const { return version_; }
  uint64_t points() const { return points_; }

 private:
  // A snapshot in three parts: the job, its ranks and events; its metrics (each row of a
  // snapshot's, or each series read from the history); then what is derived from every rank's
  // points, and the health.
  void beginSnapshot(const client::JobSnapshot& snapshot);
  void ingestStoredMetric(const store::MetricRow& row);
  // `scratch` holds the points as read, so that the series is allocated once, at its size: grown a
  // point at a time and then shrunk, a 10^5-point series had three allocations, and every page of
  // each was faulted in (a third of a long run's opening on a 2-core VM).
  Status readSeries(store::Reader& history, const store::SeriesRow& row,
                    std::vector<metrics::Series::Point>* scratch);
  // A stored point (a series' newest, read whole) moves its rank's row on.
  void noteStoredPoint(uint32_t attempt, int rank, const std::string& name, int64_t step,
                       double time, double value);
  void endSnapshot(const client::JobSnapshot& snapshot);
  metrics::Series& seriesOf(const std::string& name, int rank);  // created when new
  // Appends unless the point is a replay (at or before the series' last step and time).
  bool appendNew(metrics::Series& series, double step, double time, double value);
  void addPoint(const std::string& name, int rank, double step, double time, double value);
  static JobEvent eventFrom(const store::EventRow& row);
  void copyRank(int rank);  // the model's view of the rank into ranks_
  void addEvent(const std::string& key, JobEvent event);
  void addCheckpoint(double step, double time, uint32_t attempt, double seconds = 0);
  // A metric of `attempt` at `time`: the attempt's first step is the end of the restart before it.
  void noteAttemptPoint(uint32_t attempt, double time);
  // The median of the job's restarts: from an attempt's failure to the next one's first step. 0
  // when it has not restarted.
  double restartSeconds() const;
  void addHealth(const std::string& agent, double time, const proto::HealthSample& sample);
  void deriveBusyTime();  // after a snapshot, whose metrics arrive one name at a time
  void deriveJobTotal();  // after a snapshot, whose points arrive one rank at a time
  void deriveSpreads();   // likewise
  void readDescription(const std::string& spec_yaml);
  void addToSpread(const std::string& name, double step, double time, double value);

  std::string job_id_, name_, launcher_, description_;
  bool description_read_ = false;
  job::JobModel model_;
  double start_time_ = 0;
  int64_t max_step_ = -1;
  std::optional<store::SlurmJobRow> slurm_;
  std::map<int, RankInfo> ranks_;
  std::vector<JobEvent> events_;
  std::map<uint32_t, double> first_point_time_;  // by attempt
  std::set<std::string> event_keys_;
  std::vector<std::string> metric_names_;
  std::map<std::string, std::map<int, metrics::Series>> metrics_;
  // samples_per_sec of each step until every rank reported it: then the job total gets a point.
  std::map<int64_t, std::pair<double, int>> pending_totals_;
  // Per metric, each step's values until every rank reported it: then a point of its spread.
  struct StepValues {
    double sum = 0, min = 0, max = 0, time = 0;
    int count = 0;
    void add(double value, double at);
    void appendTo(RankSpread* spread, double step) const;  // its mean, min and max
  };
  std::map<std::string, std::map<int64_t, StepValues>> pending_spreads_;
  // Calls `visit` for every step any rank (not the job total) reported of a metric, in step
  // order, with what the ranks reported at it.
  static void forEachStep(const std::map<int, metrics::Series>& by_rank,
                          const std::function<void(int64_t step, const StepValues&)>& visit);
  std::map<std::string, RankSpread> spreads_;
  std::map<std::string, std::map<std::string, metrics::Series>> health_;
  std::vector<CheckpointMark> checkpoints_;
  std::vector<store::HostRecord> host_records_;
  uint64_t version_ = 0;
  uint64_t points_ = 0;
  // Between beginSnapshot and endSnapshot the per-step sums wait for derive*(): a snapshot's
  // points come rank by rank, so they would complete only with the last rank.
  bool in_snapshot_ = false;
};

}  // namespace ringmaster::gui
