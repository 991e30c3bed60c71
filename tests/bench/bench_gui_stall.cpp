// bench_gui_stall: the longest gap in the GUI thread's event loop while a job streams metrics
// into its open dashboard through the real path: ranks printing JSON metric lines -> the agent
// (parsing, journal) -> CURVE -> the I/O thread (ClusterSession, SQLite batch writer) -> 40 ms
// batches -> DashboardView (JobData, charts, heatmap, rank table) drawn offscreen. Side by side
// with the same loop's longest gap while idle, measured in the same run. Two cases: 4 ranks, and
// 8 ranks (on this 2-core machine they compete with the app for the cores, as on a user's
// workstation) while the smoothing slider is dragged back and forth the whole time, a step every
// 16 ms, as a hand does. Both stream 50,000 samples/s. And, first, opening a past run of 10^5
// steps of 8 ranks from the history (tests/app/past_run.h): the time until its loss chart is
// drawn, the GUI's peak memory meanwhile and the longest gap in its event loop. And, last, an
// 8-rank job's dashboard open for 5 minutes (10 steps/s a rank): the GUI thread's share of a core
// and how much its memory grew. --past-run-only and --live-only [SECONDS] run one case alone,
// --stall-only the two streaming cases (after the past run).
// Qt's `slots` keyword macro would eat AgentProcess::slots(): this comes before any Qt header.
#include "harness.h"
// Qt and the app.
#include <sys/wait.h>
#include <unistd.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QSlider>
#include <QTabWidget>
#include <QTimer>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <vector>

#include "bridge/session_bridge.h"
#include "charts/metric_chart.h"
#include "dashboard/dashboard_view.h"
#include "past_run.h"
#include "theme.h"

using namespace ringmaster;

namespace {

constexpr int kValuesPerLine = 4;
// The ranks print metric lines at a fixed rate: 12,500 lines/s x 4 values = 50,000 samples/s
// through the agent (stdout parsing, journal), CURVE, the I/O thread and the GUI.
constexpr int kLinesPerSecond = 12500;
constexpr int kSeconds = 10;

// A command job of `ranks` ranks each running a python script.
job::JobSpec pythonJob(const std::string& name, const std::string& script, int ranks) {
  job::JobSpec spec;
  spec.name = name;
  spec.launcher = job::Launcher::kCommand;
  spec.command = {"/usr/bin/python3", "-c", script};
  spec.world_size = ranks;
  spec.text = "name: " + name + "\n";
  return spec;
}

job::JobSpec meteredJob(int ranks) {
  const std::string script =
      "import sys, time, random\n"
      "rate, seconds = " +
      std::to_string(kLinesPerSecond / ranks) + ", " + std::to_string(kSeconds) +
      "\n"
      "start = time.time(); step = 0\n"
      "while step < rate * seconds:\n"
      "    due = int((time.time() - start) * rate) + 1\n"
      "    out = []\n"
      "    while step < min(due, rate * seconds):\n"
      "        out.append('{\"step\": %d, \"loss\": %.5f, \"samples_per_sec\": %.1f, "
      "\"step_time\": %.5f, \"comm_time\": %.5f}' % (step, 2.0 / (1 + step * 1e-3) + "
      "random.random() * 0.1, 9000 + random.random() * 500, 0.01 + random.random() * 0.002, "
      "random.random() * 0.002))\n"
      "        step += 1\n"
      "    sys.stdout.write('\\n'.join(out) + '\\n'); sys.stdout.flush()\n"
      "    time.sleep(0.005)\n";
  return pythonJob("gui-stall", script, ranks);
}

// With --trace: times every outermost event delivery, to name what a long gap was spent on
// (receiver class, object name, event type, ms). The deliveries since the last tick of the gap
// timer are kept, and the longest gaps are printed with what they were made of.
class TracingApplication : public QApplication {
 public:
  using QApplication::QApplication;
  bool trace = false;
  struct Gap {
    double ms = 0;
    std::string parts;
  };
  std::vector<Gap> longest;

  bool notify(QObject* receiver, QEvent* event) override {
    if (!trace || depth_ > 0) return QApplication::notify(receiver, event);
    ++depth_;
    QElapsedTimer timer;
    timer.start();
    const int type = event->type();
    const std::string what = std::string(receiver->metaObject()->className()) + " '" +
                             receiver->objectName().toStdString() + "' event " +
                             std::to_string(type);
    const bool result = QApplication::notify(receiver, event);
    --depth_;
    const double ms = timer.nsecsElapsed() / 1e6;
    if (ms >= 1) since_tick_.push_back({ms, what});
    return result;
  }

  // Called by the gap timer on each tick with the gap that just ended.
  void tick(double gap_ms) {
    if (trace && gap_ms >= 20) {
      std::sort(since_tick_.begin(), since_tick_.end(),
                [](auto& a, auto& b) { return a.ms > b.ms; });
      Gap gap{gap_ms, {}};
      for (const auto& part : since_tick_) {
        char line[256];
        std::snprintf(line, sizeof line, "\n    %5.1f ms %s", part.ms, part.what.c_str());
        gap.parts += line;
      }
      longest.push_back(std::move(gap));
      std::sort(longest.begin(), longest.end(), [](auto& a, auto& b) { return a.ms > b.ms; });
      if (longest.size() > 5) longest.pop_back();
    }
    since_tick_.clear();
  }

 private:
  struct Part {
    double ms;
    std::string what;
  };
  int depth_ = 0;
  std::vector<Part> since_tick_;
};

// Runs the event loop for `ms` (or until `done`), returning the longest gap between two ticks
// of a 1 ms timer, in ms: how long the GUI thread was unable to react. A gap counts in
// `*before` instead while `phase_two` was false at its start (e.g. until the dashboard is open).
double longestGap(int ms, const std::function<bool()>& done = {},
                  const std::function<bool()>& phase_two = {}, double* before = nullptr) {
  QElapsedTimer clock;
  clock.start();
  qint64 last = clock.nsecsElapsed();
  bool second = !phase_two;
  double worst = 0;
  QTimer tick;
  tick.setTimerType(Qt::PreciseTimer);
  QObject::connect(&tick, &QTimer::timeout, [&] {
    const qint64 now = clock.nsecsElapsed();
    const double gap = static_cast<double>(now - last) / 1e6;
    double& into = second || !before ? worst : *before;
    into = std::max(into, gap);
    static_cast<TracingApplication*>(QCoreApplication::instance())->tick(gap);
    last = now;
    second = second || phase_two();
  });
  tick.start(1);
  while (clock.elapsed() < ms && !(done && done())) {
    QApplication::processEvents(QEventLoop::WaitForMoreEvents, 5);
  }
  return worst;
}

// The app's main window as far as opening a dashboard goes: a tab widget shown at a desktop size
// before anything is measured, to which a dashboard is added as a tab and made current
// (MainWindow::openDashboard). Showing a new top-level window instead would also time what
// opening a dashboard in the app never does: the first paint of a new window's backing store
// (5.6 MB at 1400x1000, every page of it faulted in: 35-99 ms on a 2-core AMD EPYC VM).
class HostWindow {
 public:
  HostWindow() {
    tabs_.addTab(new QWidget, "Cluster");
    tabs_.resize(1400, 1000);
    tabs_.show();
  }
  // Shows `view` as the current tab; the tab goes when the view is deleted.
  void open(QWidget* view, const QString& title) {
    tabs_.setCurrentIndex(tabs_.addTab(view, title));
  }

 private:
  QTabWidget tabs_;
};

struct CaseResult {
  double stream_gap = 0, open_gap = 0, idle_gap = 0, seconds = 0, samples_per_s = 0;
  size_t points = 0;
  uint64_t expected = 0, records = 0;
  int slider_moves = 0;
  bool ok = false;
};

// One case: a cluster of one agent with `ranks` slots, the job, its open dashboard; with `drag`,
// the smoothing slider moves a step every 16 ms from the moment the dashboard is loaded.
CaseResult runCase(TracingApplication& app, HostWindow& window, int ranks, bool drag) {
  CaseResult result;
  testing::Cluster cluster;
  std::string error;
  // Up to 3,125 metric lines a second per rank: above an agent's default of 1,000. The ranks run
  // at nice 10, as those of the app's local agent do (client::startLocalAgent).
  if (!cluster.addAgent("bench", ranks, &error,
                        {"--rank-metric-rate", "10000", "--rank-nice", "10"})) {
    std::fprintf(stderr, "bench_gui_stall: %s\n", error.c_str());
    return result;
  }
  client::ClientPaths paths;
  paths.cluster_file = cluster.clusterPath();
  paths.db_file = cluster.dbPath();
  paths.config_dir = cluster.configDir();

  gui::SessionBridge bridge;
  Status started = bridge.start(paths);
  if (!started.isOk()) {
    std::fprintf(stderr, "bench_gui_stall: %s\n", started.toString().c_str());
    return result;
  }
  // The window of a user watching the job: the dashboard, at a desktop size.
  QString job_id;
  std::unique_ptr<gui::DashboardView> view;
  QObject::connect(&bridge, &gui::SessionBridge::submitted,
                   [&](uint64_t, const Result<client::SubmittedJob>& submitted) {
                     if (!submitted.isOk()) {
                       std::fprintf(stderr, "bench_gui_stall: %s\n",
                                    submitted.status().toString().c_str());
                       std::exit(1);
                     }
                     job_id = QString::fromStdString(submitted->job_id);
                     view = std::make_unique<gui::DashboardView>(&bridge, job_id, true);
                     QObject::connect(&bridge, &gui::SessionBridge::records, view.get(),
                                      &gui::DashboardView::ingest);
                     window.open(view.get(), job_id);
                   });
  QTimer dragger;
  int direction = 1;
  QObject::connect(&dragger, &QTimer::timeout, [&] {
    if (!view || !view->loaded()) return;
    auto* slider = view->findChild<QSlider*>("smoothing");
    if (!slider) return;
    if (slider->value() + direction > slider->maximum() ||
        slider->value() + direction < slider->minimum()) {
      direction = -direction;
    }
    slider->setValue(slider->value() + direction);
    ++result.slider_moves;
  });
  if (drag) dragger.start(16);
  longestGap(500);  // the previous case's teardown: its tab goes and the window repaints
  app.longest.clear();
  result.idle_gap = longestGap(2000);
  bridge.submit(meteredJob(ranks));
  QElapsedTimer clock;
  clock.start();
  const uint64_t before = bridge.deliveredRecords();
  // Opening the dashboard (building the view, loading the job) is one action of the user's;
  // the goal is about the stream into the open dashboard, so the two are told apart.
  result.stream_gap = longestGap((kSeconds + 60) * 1000,
                                 [&] { return view && view->loaded() && view->job().finished(); },
                                 [&] { return view && view->loaded(); }, &result.open_gap);
  dragger.stop();
  result.seconds = clock.nsecsElapsed() / 1e9;
  for (const auto& gap : app.longest)
    std::printf("gap of %.1f ms, deliveries of 1 ms or more:%s\n", gap.ms, gap.parts.c_str());
  result.records = bridge.deliveredRecords() - before;
  if (!view) return result;
  view->refreshNow();
  const auto* loss = view->job().metric("loss");
  for (int r = 0; r < ranks; ++r) result.points += loss && loss->count(r) ? loss->at(r).size() : 0;
  result.expected = static_cast<uint64_t>(ranks) * (kLinesPerSecond / ranks) * kSeconds;
  result.samples_per_s = static_cast<double>(result.points) * kValuesPerLine / result.seconds;
  std::printf(
      "%d ranks printed %d metric lines/s each (%d values per line) for %d s%s; the open "
      "dashboard received %zu of %llu loss points in %.1f s\n",
      ranks, kLinesPerSecond / ranks, kValuesPerLine, kSeconds,
      drag ? (", the smoothing slider moved " + std::to_string(result.slider_moves) + " times")
                 .c_str()
           : "",
      result.points, static_cast<unsigned long long>(result.expected), result.seconds);
  std::printf(
      "GUI event loop: longest gap %.1f ms while streaming into the open dashboard, %.1f ms "
      "while opening it, %.1f ms idle\n",
      result.stream_gap, result.open_gap, result.idle_gap);
  view.reset();
  bridge.stop();
  result.ok = result.points == result.expected && (!drag || result.slider_moves > 100);
  return result;
}

constexpr int kPastRunSteps = 100000;
constexpr int kLiveSeconds = 300;
constexpr int kPastRunRanks = 8;

// A field of /proc/self/status ("VmRSS", "VmHWM") in MB.
double statusMb(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) / 1024;
  }
  return 0;
}

// Writes the past run into `dir`/history.db in a child process, so that none of the memory that
// took counts in this (the GUI's) process.
bool writePastRunInChild(const std::string& dir) {
  const pid_t child = fork();
  if (child == 0) {
    const Status written = testing::writePastRun(dir + "/history.db", {.job_id = "past-run",
                                                                       .world = kPastRunRanks,
                                                                       .steps = kPastRunSteps,
                                                                       .slow_rank = 5,
                                                                       .checkpoint_every = 1000});
    if (!written.isOk()) std::fprintf(stderr, "bench_gui_stall: %s\n", written.message().c_str());
    _exit(written.isOk() ? 0 : 1);
  }
  int status = 0;
  return child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

struct PastRunResult {
  double open_s = 0, loaded_s = 0, peak_rss_mb = 0, rss_before_mb = 0, rss_after_mb = 0,
         stall_ms = 0;
  bool ok = false;
};

// Opens the past run's dashboard as the History tab does, and waits until its loss chart is drawn.
PastRunResult openPastRun(HostWindow& window, const std::string& dir) {
  PastRunResult result;
  std::ofstream(dir + "/cluster.yaml").flush();  // no agents
  client::ClientPaths paths{dir + "/cluster.yaml", dir + "/history.db", dir + "/config"};
  gui::SessionBridge bridge;
  if (Status started = bridge.start(paths); !started.isOk()) {
    std::fprintf(stderr, "bench_gui_stall: %s\n", started.toString().c_str());
    return result;
  }
  longestGap(500);  // the session's start is not the opening
  result.rss_before_mb = statusMb("VmRSS");
  std::ofstream("/proc/self/clear_refs") << "5";  // VmHWM from here on
  QElapsedTimer clock;
  clock.start();
  gui::DashboardView view(&bridge, "past-run", /*live=*/false);
  window.open(&view, "past-run");
  auto drawn = [&] {
    if (result.loaded_s == 0 && view.loaded()) result.loaded_s = clock.nsecsElapsed() / 1e9;
    const gui::MetricChart* loss = view.loaded() ? view.chart("loss") : nullptr;
    return loss && loss->drawnPointCount() > 0;
  };
  result.stall_ms = longestGap(120000, drawn);
  result.open_s = clock.nsecsElapsed() / 1e9;
  result.ok = drawn();
  result.peak_rss_mb = statusMb("VmHWM");
  result.rss_after_mb = statusMb("VmRSS");
  const auto* loss = view.job().metric("loss");
  std::printf(
      "past run of %d steps x %d ranks (%zu loss points): read from the history %.2f s after "
      "opening it, loss chart drawn at %.2f s, longest GUI gap %.1f ms; RSS %.0f MB before, "
      "peak %.0f MB, %.0f MB after\n",
      kPastRunSteps, kPastRunRanks, loss && loss->count(0) ? loss->at(0).size() * loss->size() : 0,
      result.loaded_s, result.open_s, result.stall_ms, result.rss_before_mb, result.peak_rss_mb,
      result.rss_after_mb);
  bridge.stop();
  return result;
}

// Fields of /proc/self/task/<tid>/stat: a thread's CPU seconds (user + system).
double threadCpuSeconds(pid_t tid) {
  std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // Fields after the command's closing parenthesis: state is 3rd, utime 14th, stime 15th.
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::vector<std::string> field;
  for (std::string f; fields >> f;) field.push_back(f);
  if (field.size() < 13) return 0;
  return (std::stod(field[11]) + std::stod(field[12])) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double guiThreadCpuSeconds() { return threadCpuSeconds(getpid()); }

// The charts' drawing thread (chart_drawing_thread.h), which takes the lines off the GUI thread;
// 0 before it has started.
double drawingThreadCpuSeconds() {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    if (std::getline(comm, name) && name == "chart-drawing") {
      return threadCpuSeconds(std::stoi(task.path().filename().string()));
    }
  }
  return 0;
}

// An 8-rank job as a fast GPU job reports: every rank a step every 0.1 s (loss, samples/s,
// step time, communication wait, learning rate), a checkpoint every 1,000 steps.
job::JobSpec steadyJob(int ranks, int seconds) {
  const std::string script =
      "import sys, time, random, os\n"
      "rank = int(os.environ.get('RANK', '0')); start = time.time(); step = 0\n"
      "while time.time() - start < " +
      std::to_string(seconds) +
      ":\n"
      "    step += 1\n"
      "    line = {'step': step, 'loss': 2.0 / (1 + step * 1e-3) + random.random() * 0.05,\n"
      "            'samples_per_sec': 2500 + random.random() * 100, 'step_time': 0.1,\n"
      "            'comm_wait': 0.01 + random.random() * 0.005, 'lr': 3e-4}\n"
      "    if step % 1000 == 0: line['checkpoint'] = 1\n"
      "    print(str(line).replace(\"'\", '\"'), flush=True)\n"
      "    time.sleep(max(0, start + step * 0.1 - time.time()))\n";
  return pythonJob("steady", script, ranks);
}

struct LiveResult {
  double cpu_share = 0, drawing_cpu_share = 0, rss_growth_mb = 0, seconds = 0;
  size_t points = 0;
  bool ok = false;
};

// The dashboard of an 8-rank job open for `seconds` (after 20 s to settle): the GUI thread's
// share of a core and how much its memory grew meanwhile.
LiveResult watchLiveJob(HostWindow& window, int seconds) {
  LiveResult result;
  constexpr int kRanks = 8, kSettleSeconds = 20;
  testing::Cluster cluster;
  std::string error;
  if (!cluster.addAgent("bench", kRanks, &error, {"--rank-nice", "10"})) {
    std::fprintf(stderr, "bench_gui_stall: %s\n", error.c_str());
    return result;
  }
  client::ClientPaths paths{cluster.clusterPath(), cluster.dbPath(), cluster.configDir()};
  gui::SessionBridge bridge;
  if (Status started = bridge.start(paths); !started.isOk()) {
    std::fprintf(stderr, "bench_gui_stall: %s\n", started.toString().c_str());
    return result;
  }
  std::unique_ptr<gui::DashboardView> view;
  QObject::connect(&bridge, &gui::SessionBridge::submitted,
                   [&](uint64_t, const Result<client::SubmittedJob>& submitted) {
                     if (!submitted.isOk()) return;
                     const QString job_id = QString::fromStdString(submitted->job_id);
                     view = std::make_unique<gui::DashboardView>(&bridge, job_id, true);
                     QObject::connect(&bridge, &gui::SessionBridge::records, view.get(),
                                      &gui::DashboardView::ingest);
                     window.open(view.get(), job_id);
                   });
  bridge.submit(steadyJob(kRanks, seconds + kSettleSeconds + 10));
  // A plain event loop, as the app's: longestGap()'s 1 ms timer would cost a share of its own.
  auto runFor = [](int ms) {
    QEventLoop loop;
    QTimer::singleShot(ms, &loop, &QEventLoop::quit);
    loop.exec();
  };
  runFor((kSettleSeconds + 10) * 1000);
  if (!view || !view->loaded()) return result;
  const double cpu_before = guiThreadCpuSeconds(), rss_before = statusMb("VmRSS");
  const double drawing_before = drawingThreadCpuSeconds();
  QElapsedTimer clock;
  clock.start();
  runFor(seconds * 1000);
  result.seconds = clock.nsecsElapsed() / 1e9;
  result.cpu_share = (guiThreadCpuSeconds() - cpu_before) / result.seconds;
  result.drawing_cpu_share = (drawingThreadCpuSeconds() - drawing_before) / result.seconds;
  result.rss_growth_mb = statusMb("VmRSS") - rss_before;
  result.points = view->job().points();
  result.ok = !view->job().finished() && result.points > 0;
  std::printf(
      "an %d-rank job live (10 steps/s a rank, 5 values a step) for %.0f s: the GUI thread used "
      "%.1f%% of a core (the charts' drawing thread %.1f%% more), its RSS grew %.1f MB; %zu "
      "points held\n",
      kRanks, result.seconds, 100 * result.cpu_share, 100 * result.drawing_cpu_share,
      result.rss_growth_mb, result.points);
  view.reset();
  bridge.stop();
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  const std::vector<std::string> args(argv + 1, argv + argc);
  auto flag = [&](const char* name) { return std::find(args.begin(), args.end(), name); };
  if (flag("--live-only") != args.end()) {  // [SECONDS]: the live case alone
    TracingApplication app(argc, argv);
    gui::applyDarkTheme(app);  // the app's style and palette, as it starts
    HostWindow window;
    const auto seconds = flag("--live-only") + 1;
    const LiveResult live =
        watchLiveJob(window, seconds != args.end() ? std::stoi(*seconds) : kLiveSeconds);
    std::printf(
        "RESULT live_gui_cpu_percent=%.1f live_drawing_cpu_percent=%.1f live_rss_growth_mb=%.1f\n",
        100 * live.cpu_share, 100 * live.drawing_cpu_share, live.rss_growth_mb);
    return live.ok ? 0 : 1;
  }
  // Written before Qt starts its threads: the child forked to write it only has this one.
  const std::string past_dir =
      (std::filesystem::temp_directory_path() / ("bench_gui_stall_" + std::to_string(getpid())))
          .string();
  std::filesystem::create_directories(past_dir);
  if (!writePastRunInChild(past_dir)) return 1;
  TracingApplication app(argc, argv);
  gui::applyDarkTheme(app);  // the app's style and palette, as it starts
  app.trace = flag("--trace") != args.end();
  HostWindow window;
  const PastRunResult past = openPastRun(window, past_dir);
  std::filesystem::remove_all(past_dir);
  if (flag("--past-run-only") != args.end()) {
    std::printf(
        "RESULT past_run_open_s=%.2f past_run_peak_rss_mb=%.0f past_run_open_stall_ms=%.1f\n",
        past.open_s, past.peak_rss_mb, past.stall_ms);
    return past.ok ? 0 : 1;
  }
  const CaseResult four = runCase(app, window, 4, false);
  const CaseResult eight = runCase(app, window, 8, true);
  if (flag("--stall-only") != args.end()) {  // the two streaming cases alone (about 1 minute)
    std::printf(
        "RESULT max_stall_ms=%.1f open_stall_ms=%.1f idle_max_stall_ms=%.1f "
        "max_stall_ms_8ranks_dragging=%.1f open_stall_ms_8ranks=%.1f slider_moves=%d\n",
        four.stream_gap, four.open_gap, four.idle_gap, eight.stream_gap, eight.open_gap,
        eight.slider_moves);
    return four.ok && eight.ok ? 0 : 1;
  }
  const LiveResult live = watchLiveJob(window, kLiveSeconds);
  std::printf(
      "RESULT max_stall_ms=%.1f open_stall_ms=%.1f samples_per_s=%.0f idle_max_stall_ms=%.1f "
      "ratio_vs_idle=%.2f max_stall_ms_8ranks_dragging=%.1f open_stall_ms_8ranks=%.1f "
      "samples_per_s_8ranks=%.0f slider_moves=%d points=%zu points_8ranks=%zu "
      "past_run_open_s=%.2f past_run_peak_rss_mb=%.0f past_run_open_stall_ms=%.1f "
      "live_gui_cpu_percent=%.1f live_drawing_cpu_percent=%.1f live_rss_growth_mb=%.1f\n",
      four.stream_gap, four.open_gap, four.samples_per_s, four.idle_gap,
      four.stream_gap / std::max(four.idle_gap, 1e-3), eight.stream_gap, eight.open_gap,
      eight.samples_per_s, eight.slider_moves, four.points, eight.points, past.open_s,
      past.peak_rss_mb, past.stall_ms, 100 * live.cpu_share, 100 * live.drawing_cpu_share,
      live.rss_growth_mb);
  return four.ok && eight.ok && past.ok && live.ok ? 0 : 1;
}
