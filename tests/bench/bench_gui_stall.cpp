// bench_gui_stall: the longest gap in the GUI thread's event loop while metrics stream into an
// open dashboard through the real path: an agent's journal -> CURVE -> the I/O thread
// (ClusterSession, SQLite batch writer) -> 40 ms batches -> DashboardView (JobData, charts,
// heatmap, rank table) drawn offscreen. Side by side with the same loop's longest gap while idle
// (the window shown, nothing streaming), measured in the same run.
// Qt's `slots` keyword macro would eat AgentProcess::slots(): these come before any Qt header.
#include "harness.h"
#include "journal.h"
// Qt and the app.
#include <QApplication>
#include <QElapsedTimer>
#include <QTimer>
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "bridge/session_bridge.h"
#include "charts/metric_chart.h"
#include "dashboard/dashboard_view.h"

using namespace ringmaster;

namespace {

constexpr int kRanks = 8;
constexpr const char* kJob = "bench-job";
const char* const kNames[] = {"loss", "samples_per_sec", "step_time", "comm_time"};
constexpr int kValuesPerRecord = 4;

proto::JournalRecord metricRecord(uint64_t i) {
  proto::JournalRecord record;
  record.set_job(kJob);
  record.set_attempt(1);
  const int rank = static_cast<int>(i % kRanks);
  record.set_source("rank:" + std::to_string(rank));
  record.set_time(1.7e9 + static_cast<double>(i) * 1e-4);
  auto* sample = record.mutable_metric();
  sample->set_rank(rank);
  sample->set_step(static_cast<int64_t>(i / kRanks));
  const double noise = static_cast<double>((i * 2654435761u) % 1000) / 1000.0;
  const double values[kValuesPerRecord] = {
      2.0 / (1.0 + static_cast<double>(i) * 1e-4) + 0.1 * noise, 9000 + 500 * noise,
      0.01 + 0.002 * noise + (rank == 5) * 0.01, 0.002 * noise};
  for (int k = 0; k < kValuesPerRecord; ++k) {
    auto* value = sample->add_values();
    value->set_name(kNames[k]);
    value->set_value(values[k]);
  }
  return record;
}

// Runs the event loop for `ms` (or until `done`), returning the longest gap between two ticks
// of a 1 ms timer, in ms: how long the GUI thread was unable to react.
double longestGap(int ms, const std::function<bool()>& done = {}) {
  QElapsedTimer clock;
  clock.start();
  qint64 last = clock.nsecsElapsed();
  double worst = 0;
  QTimer tick;
  tick.setTimerType(Qt::PreciseTimer);
  QObject::connect(&tick, &QTimer::timeout, [&] {
    const qint64 now = clock.nsecsElapsed();
    worst = std::max(worst, static_cast<double>(now - last) / 1e6);
    last = now;
  });
  tick.start(1);
  while (clock.elapsed() < ms && !(done && done())) {
    QApplication::processEvents(QEventLoop::WaitForMoreEvents, 5);
  }
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t records = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 400000;
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  testing::Cluster cluster;
  {
    auto journal = agent::Journal::open(cluster.dir() + "/agents/bench/journal");
    if (!journal.isOk()) {
      std::fprintf(stderr, "bench_gui_stall: %s\n", journal.status().toString().c_str());
      return 1;
    }
    proto::JournalRecord accepted;
    accepted.set_job(kJob);
    accepted.set_attempt(1);
    accepted.set_source("agent:bench");
    accepted.set_time(1.7e9);
    accepted.mutable_job_accepted()->set_name("bench");
    accepted.mutable_job_accepted()->set_world_size(kRanks);
    for (int r = 0; r < kRanks; ++r) {
      auto* a = accepted.mutable_job_accepted()->add_ranks();
      a->set_rank(r);
      a->set_local_rank(r);
    }
    (*journal)->append(accepted);
    for (uint64_t i = 0; i < records; ++i) {
      proto::JournalRecord record = metricRecord(i);
      (*journal)->append(record);
    }
    (*journal)->flush();
  }
  std::string error;
  if (!cluster.addAgent("bench", kRanks, &error)) {
    std::fprintf(stderr, "bench_gui_stall: %s\n", error.c_str());
    return 1;
  }
  client::ClientPaths paths;
  paths.cluster_file = cluster.clusterPath();
  paths.db_file = cluster.dbPath();
  paths.config_dir = cluster.configDir();

  gui::SessionBridge bridge;
  gui::DashboardView view(&bridge, kJob, true);
  QObject::connect(&bridge, &gui::SessionBridge::records, &view, &gui::DashboardView::ingest);
  view.resize(1400, 1000);
  view.show();
  const double idle_gap = longestGap(2000);

  Status started = bridge.start(paths);
  if (!started.isOk()) {
    std::fprintf(stderr, "bench_gui_stall: %s\n", started.toString().c_str());
    return 1;
  }
  QElapsedTimer clock;
  clock.start();
  // From the first delivered record to the last.
  qint64 first_ns = -1;
  QObject::connect(&bridge, &gui::SessionBridge::records, [&] {
    if (first_ns < 0) first_ns = clock.nsecsElapsed();
  });
  const uint64_t expected = records + 1;
  const double stream_gap =
      longestGap(110000, [&] { return bridge.deliveredRecords() >= expected; });
  const double seconds =
      static_cast<double>(clock.nsecsElapsed() - std::max<qint64>(first_ns, 0)) / 1e9;
  const uint64_t delivered = bridge.deliveredRecords();
  view.refreshNow();
  const double samples_per_s =
      static_cast<double>(delivered) * kValuesPerRecord / std::max(seconds, 1e-9);
  const auto* loss = view.job().metric("loss");
  const size_t loss_points = loss && loss->count(0) ? loss->at(0).size() : 0;
  std::printf("streamed %llu records (%d values each, %d ranks) in %.2f s into an open dashboard\n",
              static_cast<unsigned long long>(delivered), kValuesPerRecord, kRanks, seconds);
  std::printf("GUI event loop: longest gap %.1f ms while streaming, %.1f ms idle\n", stream_gap,
              idle_gap);
  std::printf("rank 0 loss points in the dashboard: %zu\n", loss_points);
  std::printf(
      "RESULT max_stall_ms=%.1f samples_per_s=%.0f idle_max_stall_ms=%.1f ratio_vs_idle=%.2f "
      "records=%llu seconds=%.2f\n",
      stream_gap, samples_per_s, idle_gap, stream_gap / std::max(idle_gap, 1e-3),
      static_cast<unsigned long long>(delivered), seconds);
  bridge.stop();
  return delivered >= expected ? 0 : 1;
}
