#include "session_loop.h"

#include <chrono>
#include <cstdio>

namespace ringmaster::ctl {

Result<std::unique_ptr<SessionLoop>> SessionLoop::start(const client::ClientPaths& paths) {
  std::unique_ptr<SessionLoop> loop(new SessionLoop);
  RM_ASSIGN_OR_RETURN(loop->session_, client::ClusterSession::open(paths, loop.get()));
  client::ClusterSession* session = loop->session_.get();
  SessionLoop* sink = loop.get();
  loop->thread_ = std::thread([session, sink] {
    if (Status ended = session->run(); !ended.isOk()) {
      sink->sessionError(Status(ended.code(), "the session stopped: " + ended.message()));
    }
  });
  return loop;
}

void SessionLoop::sessionError(const Status& error) {
  std::fprintf(stderr, "ringmasterctl: %s\n", error.message().c_str());
}

SessionLoop::~SessionLoop() { finish(); }

void SessionLoop::finish() {
  if (!session_) return;
  session_->stop();
  if (thread_.joinable()) thread_.join();
  session_.reset();
}

void SessionLoop::reportDropouts(std::vector<std::string> agents) {
  std::map<std::string, bool> silent;
  for (const auto& name : agents) silent[name] = false;
  on_status = [silent = std::move(silent)](const client::AgentStatus& status) mutable {
    auto found = silent.find(status.name);
    if (found == silent.end()) return;
    const bool online = status.state == client::AgentState::kOnline;
    if (!online && status.state != client::AgentState::kConnecting && !found->second) {
      // An error (no connection could be made, a damaged record) is not a silence to wait out.
      const bool error = status.state == client::AgentState::kError;
      std::fprintf(stderr, "ringmasterctl: agent '%s': %s%s\n", status.name.c_str(),
                   status.reason.c_str(), error ? "" : " (still watching for it)");
      found->second = true;
    } else if (online && found->second) {
      std::fprintf(stderr, "ringmasterctl: agent '%s' answers again\n", status.name.c_str());
      found->second = false;
    }
  };
  // What went wrong before (an agent the session could not even connect to) is said too.
  for (const auto& [name, status] : latest_) on_status(status);
}

void SessionLoop::runFor(int ms) {
  std::deque<std::function<void()>> ready;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    arrived_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return !pending_.empty(); });
    ready.swap(pending_);
  }
  for (auto& handler : ready) handler();
}

void SessionLoop::push(std::function<void()> handler) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.push_back(std::move(handler));
  }
  arrived_.notify_one();
}

void SessionLoop::agentStatus(const client::AgentStatus& status) {
  push([this, status] {
    latest_[status.name] = status;
    if (on_status) on_status(status);
  });
}

void SessionLoop::records(const std::string& agent, std::vector<proto::JournalRecord> records) {
  push([this, agent, records = std::move(records)] {
    if (on_records) on_records(agent, records);
  });
}

void SessionLoop::submitted(uint64_t, const Result<client::SubmittedJob>& result) {
  push([this, result] {
    if (on_submitted) on_submitted(result);
  });
}

void SessionLoop::submitWaiting(uint64_t, const std::string& line) {
  push([this, line] {
    if (on_submit_waiting) on_submit_waiting(line);
  });
}

void SessionLoop::logChunk(uint64_t token, const std::string&, int rank,
                           const Result<proto::LogChunk>& chunk) {
  push([this, token, rank, chunk] {
    if (on_log_chunk) on_log_chunk(token, rank, chunk);
  });
}

}  // namespace ringmaster::ctl
