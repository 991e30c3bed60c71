#pragma once
// Streams rank logs from their agents to stdout, whole lines at a time, optionally prefixed
// "[rank R] " so that several ranks can share one terminal.

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ringmaster/client/cluster_client.h"

namespace ringmaster::ctl {

class LogTail {
 public:
  // prefix: "[rank R] " before every line. compact_metrics: JSON metric lines are not echoed;
  // each rank's newest metrics are shown as one "step N: name=value ..." line at most once a
  // second (and at the end), which keeps a live terminal readable.
  LogTail(client::ClusterClient& cluster, std::string job_id,
          const std::vector<std::pair<std::string, std::vector<int>>>& shares, bool prefix,
          bool compact_metrics = false);

  // Prints what is new (everything there is, in chunks); returns true when anything was.
  // `wait_ms` > 0 long-polls the first unfinished rank's agent.
  bool poll(uint32_t wait_ms = 0);
  bool allFinished() const;
  // Errors of the last poll (e.g. an unreachable agent), by rank.
  const std::map<int, Status>& errors() const { return errors_; }

 private:
  struct RankLog {
    std::string agent;
    uint64_t offset = 0;
    std::string partial;
    bool finished = false;
    std::map<std::string, double> latest_metrics;  // compact mode: not yet shown
    int64_t latest_step = 0;
    std::chrono::steady_clock::time_point shown_at;
  };
  void print(int rank, RankLog& log, const std::string& data);
  void printLine(int rank, RankLog& log, std::string_view line);
  void showMetrics(int rank, RankLog& log, bool force);

  client::ClusterClient& cluster_;
  std::string job_id_;
  bool prefix_;
  bool compact_metrics_;
  std::map<int, RankLog> ranks_;
  std::map<int, Status> errors_;
};

}  // namespace ringmaster::ctl
