#include "log_tail.h"

#include <cstdio>

#include "ringmaster/metrics/line_parser.h"

namespace ringmaster::ctl {

LogTail::LogTail(client::ClusterClient& cluster, std::string job_id,
                 const std::vector<std::pair<std::string, std::vector<int>>>& shares, bool prefix,
                 bool compact_metrics)
    : cluster_(cluster),
      job_id_(std::move(job_id)),
      prefix_(prefix),
      compact_metrics_(compact_metrics) {
  for (const auto& [agent, ranks] : shares) {
    for (int rank : ranks) ranks_[rank].agent = agent;
  }
}

void LogTail::print(int rank, RankLog& log, const std::string& data) {
  if (!prefix_) {
    std::fwrite(data.data(), 1, data.size(), stdout);
    return;
  }
  log.partial += data;
  size_t start = 0, end;
  while ((end = log.partial.find('\n', start)) != std::string::npos) {
    printLine(rank, log, std::string_view(log.partial).substr(start, end - start));
    start = end + 1;
  }
  log.partial.erase(0, start);
  if (log.finished && !log.partial.empty()) {
    printLine(rank, log, log.partial);
    log.partial.clear();
  }
  showMetrics(rank, log, log.finished);
}

void LogTail::printLine(int rank, RankLog& log, std::string_view line) {
  if (compact_metrics_) {
    if (auto parsed = metrics::parseJsonMetricLine(line)) {
      // Newest value of every metric since the last display (an eval line's accuracy survives
      // the training lines that follow it).
      if (parsed->step) log.latest_step = *parsed->step;
      for (const auto& [name, v] : parsed->values) log.latest_metrics[name] = v;
      return;
    }
  }
  std::printf("[rank %d] %.*s\n", rank, static_cast<int>(line.size()), line.data());
}

void LogTail::showMetrics(int rank, RankLog& log, bool force) {
  const auto now = std::chrono::steady_clock::now();
  if (log.latest_metrics.empty() || (!force && now - log.shown_at < std::chrono::seconds(1))) {
    return;
  }
  // The figures a person watches, in this order; other metrics stay in the history.
  static const char* const kShown[] = {"loss",         "accuracy",      "mse", "samples_per_sec",
                                       "params_agree", "param_checksum"};
  std::string text = "step " + std::to_string(log.latest_step) + ":";
  char value[64];
  int shown = 0;
  for (const char* name : kShown) {
    auto it = log.latest_metrics.find(name);
    if (it == log.latest_metrics.end()) continue;
    std::snprintf(value, sizeof value,
                  std::string(name) == "param_checksum" ? " %s=%.0f" : " %s=%.4g", name,
                  it->second);
    text += value;
    ++shown;
  }
  for (auto it = log.latest_metrics.begin(); shown == 0 && it != log.latest_metrics.end(); ++it) {
    std::snprintf(value, sizeof value, " %s=%.4g", it->first.c_str(), it->second);
    text += value;
  }
  std::printf("[rank %d] %s\n", rank, text.c_str());
  log.latest_metrics.clear();
  log.shown_at = now;
}

bool LogTail::poll(uint32_t wait_ms) {
  bool any = false;
  errors_.clear();
  for (auto& [rank, log] : ranks_) {
    while (!log.finished) {
      auto chunk = cluster_.readLog(log.agent, job_id_, rank, log.offset, wait_ms);
      wait_ms = 0;  // only the first read waits
      if (!chunk.isOk()) {
        errors_[rank] = chunk.status();
        break;
      }
      log.offset = chunk->offset() + chunk->data().size();
      log.finished = chunk->finished();
      if (chunk->data().empty() && !log.finished) break;
      any = true;
      print(rank, log, chunk->data());
      if (log.offset >= chunk->size()) break;
    }
  }
  std::fflush(stdout);
  return any;
}

bool LogTail::allFinished() const {
  for (const auto& [rank, log] : ranks_) {
    if (!log.finished) return false;
  }
  return true;
}

}  // namespace ringmaster::ctl
