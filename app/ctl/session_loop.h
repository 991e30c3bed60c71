#pragma once
// ringmasterctl's side of a ClusterSession, the loop the desktop app's I/O thread runs too. The
// session runs on a thread of its own (every agent watched at once, journals followed into the
// history, reconnecting to an agent that drops out); what it reports is run, in order, by the
// handlers below on the command's thread, in runFor().

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ringmaster/client/cluster_session.h"

namespace ringmaster::ctl {

class SessionLoop : public client::SessionSink {
 public:
  static Result<std::unique_ptr<SessionLoop>> start(const client::ClientPaths& paths);
  ~SessionLoop() override;  // finish()

  client::ClusterSession& session() { return *session_; }

  // Called on the thread that calls runFor(); unset handlers drop what they would be given.
  std::function<void(const client::AgentStatus&)> on_status;
  std::function<void(const std::string& agent, const std::vector<proto::JournalRecord>&)>
      on_records;
  std::function<void(const Result<client::SubmittedJob>&)> on_submitted;
  std::function<void(const std::string& line)> on_submit_waiting;
  std::function<void(uint64_t token, int rank, const Result<proto::LogChunk>&)> on_log_chunk;

  // Sets on_status to say on stderr when one of these agents stops answering (or was not
  // answering already), and when it answers again: the session reconnects and goes on from its
  // cursor, so nothing is missed meanwhile.
  void reportDropouts(std::vector<std::string> agents);

  // Runs the handlers for what has arrived, waiting up to `ms` for the first of it.
  void runFor(int ms);
  // Stops the session and waits for it: the history then holds everything it pulled.
  void finish();

  // client::SessionSink, called on the session's thread.
  void agentStatus(const client::AgentStatus& status) override;
  void records(const std::string& agent, std::vector<proto::JournalRecord> records) override;
  void submitted(uint64_t token, const Result<client::SubmittedJob>& result) override;
  void submitWaiting(uint64_t token, const std::string& line) override;
  void stopped(uint64_t, const std::string&, const Result<int>&) override {}
  void logChunk(uint64_t token, const std::string& job_id, int rank,
                const Result<proto::LogChunk>& chunk) override;
  void runsListed(uint64_t, const Result<std::vector<client::RunSummary>>&) override {}
  void sessionError(const Status& error) override;  // on stderr

 private:
  SessionLoop() = default;
  void push(std::function<void()> handler);

  std::unique_ptr<client::ClusterSession> session_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<std::function<void()>> pending_;          // GUARDED_BY(mutex_)
  std::map<std::string, client::AgentStatus> latest_;  // by agent; on runFor()'s thread
};

}  // namespace ringmaster::ctl
