#include "log_tail.h"

#include <cstdio>

#include "ringmaster/metrics/line_parser.h"
#include "terminal_safe.h"

namespace ringmaster::ctl {

namespace {
constexpr auto kFollowMs = std::chrono::milliseconds(200);
constexpr auto kRetryMs = std::chrono::milliseconds(1000);
}  // namespace

LogTail::LogTail(client::ClusterSession& session, std::string job_id,
                 const std::vector<std::pair<std::string, std::vector<int>>>& shares, bool prefix,
                 bool compact_metrics, uint32_t attempt)
    : session_(session),
      job_id_(std::move(job_id)),
      prefix_(prefix),
      compact_metrics_(compact_metrics),
      attempt_(attempt) {
  for (const auto& [agent, ranks] : shares) {
    for (int rank : ranks) ranks_[rank].cursor = client::LogCursor(agent, rank);
  }
}

void LogTail::setStream(client::LogStream stream) {
  for (auto& [rank, log] : ranks_) log.cursor.setStream(stream);
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
  const bool finished = log.cursor.complete();
  if (finished && !log.partial.empty()) {
    printLine(rank, log, log.partial);
    log.partial.clear();
  }
  showMetrics(rank, log, finished);
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
  std::printf("[rank %d] %s\n", rank, terminalSafe(line).c_str());
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
  std::printf("[rank %d] %s\n", rank, terminalSafe(text).c_str());  // names are the job's
  log.latest_metrics.clear();
  log.shown_at = now;
}

void LogTail::request() {
  const auto now = std::chrono::steady_clock::now();
  for (auto& [rank, log] : ranks_) {
    if (!log.cursor.wantsRead() || now < log.next_read) continue;
    log.cursor.sent(
        session_.postReadLog(log.cursor.agent(), job_id_, rank, log.cursor.offset(), attempt_));
  }
}

void LogTail::onChunk(uint64_t token, int rank, const Result<proto::LogChunk>& chunk) {
  auto found = ranks_.find(rank);
  if (found == ranks_.end()) return;
  RankLog& log = found->second;
  auto taken = log.cursor.take(token, chunk);
  if (!taken) return;
  const auto now = std::chrono::steady_clock::now();
  if (!taken->isOk()) {
    errors_[rank] = taken->status();
    log.next_read = now + kRetryMs;
    return;
  }
  errors_.erase(rank);
  if (!(*taken)->empty() || log.cursor.complete()) print(rank, log, **taken);
  std::fflush(stdout);
  log.next_read = log.cursor.caughtUp() ? now + kFollowMs : now;
}

bool LogTail::allFinished() const {
  for (const auto& [rank, log] : ranks_) {
    if (!log.cursor.complete()) return false;
  }
  return true;
}

bool LogTail::caughtUp() const {
  for (const auto& [rank, log] : ranks_) {
    if (log.cursor.reading() || !(log.cursor.caughtUp() || errors_.count(rank))) return false;
  }
  return true;
}

}  // namespace ringmaster::ctl
