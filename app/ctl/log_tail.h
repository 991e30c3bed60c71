#pragma once
// Streams rank logs from their agents to stdout, whole lines at a time, optionally prefixed
// "[rank R] " so that several ranks can share one terminal. Reads go through a ClusterSession
// (SessionLoop) and each rank's place is a client::LogCursor, as in the desktop app's log pane.

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ringmaster/client/cluster_session.h"
#include "ringmaster/client/log_cursor.h"

namespace ringmaster::ctl {

class LogTail {
 public:
  // prefix: "[rank R] " before every line. compact_metrics: JSON metric lines are not echoed;
  // each rank's newest metrics are shown as one "step N: name=value ..." line at most once a
  // second (and at the end), which keeps a live terminal readable.
  // attempt: the logs of that attempt (0: the newest).
  LogTail(client::ClusterSession& session, std::string job_id,
          const std::vector<std::pair<std::string, std::vector<int>>>& shares, bool prefix,
          bool compact_metrics = false, uint32_t attempt = 0);

  // Sends a read for every rank that has none on its way and may have something new: at once
  // while behind, every kFollowMs once caught up, every kRetryMs after an error.
  void request();
  // The answer to a read (SessionLoop::on_log_chunk): prints what is new.
  void onChunk(uint64_t token, int rank, const Result<proto::LogChunk>& chunk);

  // Prints only this stream of every rank (before the first request()).
  void setStream(client::LogStream stream);

  bool allFinished() const;  // every rank exited and its log was printed to the end
  bool caughtUp() const;     // every rank read up to what its agent had (or failed to read)
  // The last error reading each rank's log (e.g. an unreachable agent), cleared by a good read.
  const std::map<int, Status>& errors() const { return errors_; }

 private:
  struct RankLog {
    client::LogCursor cursor;
    std::string partial;
    std::chrono::steady_clock::time_point next_read{};
    std::map<std::string, double> latest_metrics;  // compact mode: not yet shown
    int64_t latest_step = 0;
    std::chrono::steady_clock::time_point shown_at;
  };
  void print(int rank, RankLog& log, const std::string& data);
  void printLine(int rank, RankLog& log, std::string_view line);
  void showMetrics(int rank, RankLog& log, bool force);

  client::ClusterSession& session_;
  std::string job_id_;
  bool prefix_;
  bool compact_metrics_;
  uint32_t attempt_;
  std::map<int, RankLog> ranks_;
  std::map<int, Status> errors_;
};

}  // namespace ringmaster::ctl
