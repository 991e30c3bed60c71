// bench_log_search: searching a rank's 200 MB log from the app, against grep over the same file
// in the same run. The rank prints 2.4 million training-log lines (three of them the text sought:
// near the start, the middle and the end) through a real agent; the app's log pane opens it
// (showing its last 8 MB) and searches the whole log: LogSearch pages it from the agent in 4 MB
// chunks through the session's I/O thread and scans them on a worker thread. Measured: time to
// the first match, time to the end of the search, and the longest gap in the GUI thread's event
// loop meanwhile (a 1 ms timer), beside `grep -c -i -F` reading the agent's log file directly
// (no network, no CURVE: the floor for one pass over the bytes).
// Qt's `slots` keyword macro would eat AgentProcess::slots(): this comes before any Qt header.
#include "harness.h"
// Qt and the app.
#include <QApplication>
#include <QElapsedTimer>
#include <QLabel>
#include <QLineEdit>
#include <QTest>
#include <QTimer>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "bridge/session_bridge.h"
#include "dashboard/log_pane.h"

using namespace ringmaster;

namespace {

constexpr int kLines = 2'400'000;  // of 87 bytes: 200 MB

// The pane's status line (the one label that is not "Rank").
QString statusOf(const gui::LogPane& pane) {
  for (const QLabel* label : pane.findChildren<QLabel*>()) {
    if (label->text() != "Rank") return label->text();
  }
  return {};
}

// Runs the event loop until `done` (or `limit_ms`); returns the longest gap between two ticks
// of a 1 ms timer: how long the GUI thread could not react.
double runUntil(const std::function<bool()>& done, int limit_ms) {
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
  while (!done() && clock.elapsed() < limit_ms) {
    QApplication::processEvents(QEventLoop::WaitForMoreEvents, 5);
  }
  return worst;
}

double millisecondsOf(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  testing::Cluster cluster;
  std::string error;
  if (!cluster.addAgent("bench", 1, &error)) {
    std::fprintf(stderr, "bench_log_search: %s\n", error.c_str());
    return 1;
  }
  const std::string script =
      "import sys\n"
      "n = " +
      std::to_string(kLines) +
      "\n"
      "marks = {n // 100: 'early', n // 2: 'middle', n - 10: 'late'}\n"
      "out = sys.stdout\n"
      "for i in range(n):\n"
      "    if i in marks: out.write('RuntimeError: CUDA error: an illegal memory access (%s)\\n' "
      "% marks[i])\n"
      "    out.write('step %9d loss %.6f lr 0.000300 samples/s 10234.5 grad_norm 1.2345 "
      "epoch 3 ok\\n' % (i, 1.0 / (1 + i)))\n";
  const std::string spec = cluster.writeSpec(
      "log.yaml", "name: big-log\nlauncher: command\ncommand: [/usr/bin/python3, -c, \"" + [&] {
        std::string escaped;
        for (char c : script) {
          if (c == '\n') {
            escaped += "\\n";
          } else if (c == '"' || c == '\\') {
            escaped += '\\';
            escaped += c;
          } else {
            escaped += c;
          }
        }
        return escaped;
      }() + "\"]\nplacement:\n  - {agent: bench, ranks: 1}\n");
  auto submitted = cluster.ctl({"submit", spec, "--wait"}, 600000);
  if (submitted.exit_code != 0) {
    std::fprintf(stderr, "bench_log_search: the job failed: %s\n", submitted.err.c_str());
    return 1;
  }
  const std::string job = submitted.firstLine();
  std::string log_file;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(cluster.dir())) {
    const std::string path = entry.path().string();
    if (path.find(job) != std::string::npos && entry.path().filename() == "rank-0.log") {
      log_file = path;
    }
  }
  if (log_file.empty()) {
    std::fprintf(stderr, "bench_log_search: no rank-0.log of %s under %s\n", job.c_str(),
                 cluster.dir().c_str());
    return 1;
  }
  const double size_mb = std::filesystem::file_size(log_file) / 1048576.0;

  // The peer: one pass of grep over the file (cached in memory, as the agent's read is), which
  // must count the same three lines.
  const std::string grep = "grep -c -i -F 'cuda error' '" + log_file + "'";
  double grep_ms = 1e9;
  for (int i = 0; i < 4; ++i) {  // the first also warms the page cache
    std::string count;
    const double ms = millisecondsOf([&] {
      FILE* out = popen(grep.c_str(), "r");
      char line[64] = {};
      if (out && std::fgets(line, sizeof line, out)) count = line;
      if (out) pclose(out);
    });
    if (count != "3\n") {
      std::fprintf(stderr, "bench_log_search: %s printed '%s', not 3\n", grep.c_str(),
                   count.c_str());
      return 1;
    }
    if (i > 0) grep_ms = std::min(grep_ms, ms);
  }

  gui::SessionBridge bridge;
  client::ClientPaths paths;
  paths.cluster_file = cluster.clusterPath();
  paths.db_file = cluster.dbPath();
  paths.config_dir = cluster.configDir();
  if (Status started = bridge.start(paths); !started.isOk()) {
    std::fprintf(stderr, "bench_log_search: %s\n", started.toString().c_str());
    return 1;
  }
  gui::LogPane pane(&bridge, QString::fromStdString(job));
  gui::RankInfo info;
  info.rank = 0;
  info.agent = "bench";
  pane.setRanks({{0, info}});
  pane.resize(1200, 700);
  pane.show();
  pane.showRank(0);
  QElapsedTimer clock;
  clock.start();
  const double open_gap = runUntil([&] { return pane.text().contains("(late)"); }, 120000);
  const double open_ms = clock.elapsed();

  auto* search = pane.findChild<QLineEdit*>();
  search->setText("cuda error");
  double first_ms = -1;
  clock.restart();
  QTest::keyClick(search, Qt::Key_Return);
  const double search_gap = runUntil(
      [&] {
        const QString status = statusOf(pane);
        if (first_ms < 0 && status.startsWith("match 1 of")) first_ms = clock.elapsed();
        return status.contains("matches in the whole log") || status.contains("not found") ||
               status.contains("stopped");
      },
      300000);
  const double end_ms = clock.elapsed();
  const QString status = statusOf(pane);
  const bool ok = status.startsWith("match 1 of 3; 3 matches in the whole log") &&
                  pane.text().contains("(early)");
  std::printf(
      "log of %.0f MB (%d lines); the pane showed its last 8 MB in %.0f ms (longest GUI "
      "gap %.1f ms)\n",
      size_mb, kLines, open_ms, open_gap);
  std::printf(
      "search of the whole log: first match in %.0f ms, end in %.0f ms (%.0f MB/s), "
      "longest GUI gap %.1f ms; grep -c -i -F on the agent's file: %.0f ms\n",
      first_ms, end_ms, size_mb / (end_ms / 1000.0), search_gap, grep_ms);
  std::printf("status: %s\n", status.toStdString().c_str());
  std::printf(
      "RESULT log_mb=%.0f first_match_ms=%.0f search_ms=%.0f grep_ms=%.0f ratio_vs_grep=%.3f "
      "search_max_stall_ms=%.1f open_ms=%.0f open_max_stall_ms=%.1f ok=%d\n",
      size_mb, first_ms, end_ms, grep_ms, grep_ms / end_ms, search_gap, open_ms, open_gap, ok);
  bridge.stop();
  return ok ? 0 : 1;
}
