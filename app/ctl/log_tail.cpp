#include "log_tail.h"

#include <cstdio>

namespace ringmaster::ctl {

LogTail::LogTail(client::ClusterClient& cluster, std::string job_id,
                 const std::vector<std::pair<std::string, std::vector<int>>>& shares, bool prefix)
    : cluster_(cluster), job_id_(std::move(job_id)), prefix_(prefix) {
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
    std::printf("[rank %d] %.*s\n", rank, static_cast<int>(end - start), log.partial.data() + start);
    start = end + 1;
  }
  log.partial.erase(0, start);
  if (log.finished && !log.partial.empty()) {
    std::printf("[rank %d] %s\n", rank, log.partial.c_str());
    log.partial.clear();
  }
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
