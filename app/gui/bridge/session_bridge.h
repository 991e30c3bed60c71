#pragma once
// SessionBridge: the GUI's I/O thread. It runs a client::ClusterSession (every socket, the
// journal sync and the SQLite batch writer live there) and hands what the session reports to the
// GUI thread: records and agent statuses in batches, on a 40 ms timer, so that a flood of metrics
// costs the GUI one wake-up per frame and never a wait on the network or on SQLite; answers to
// requests with them, in the order they came, but a log chunk at once (with the answers before
// it): a log is read chunk after chunk.
//
// Thread safety: the public API and the signals belong to the GUI thread (the object's thread);
// the sink side is called on the I/O thread and only touches the mutex-guarded inbox.

#include <QObject>
#include <QTimer>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

// The generated protobuf code has Inventory::slots(), which Qt's `slots` keyword macro would eat:
// hide the macro while core's headers are parsed, whatever was included before.
#pragma push_macro("slots")
#undef slots
#include "ringmaster/client/cluster_session.h"
#pragma pop_macro("slots")

namespace ringmaster::gui {

// Journal records of one agent, in journal order.
struct AgentRecords {
  std::string agent;
  std::vector<proto::JournalRecord> records;
};

class SessionBridge : public QObject {
  Q_OBJECT
 public:
  explicit SessionBridge(QObject* parent = nullptr);
  ~SessionBridge() override;  // stops the session and joins the I/O thread

  // Opens the session (keys, history, cluster file) and starts the I/O thread.
  Status start(const client::ClientPaths& paths, const client::SessionOptions& options = {});
  void stop();
  QString clientPublicKey() const;

  // Commands: they return at once; the answer comes as the signal of the same name.
  uint64_t submit(job::JobSpec spec);
  uint64_t stopJob(const QString& job_id);
  uint64_t restartJob(const QString& job_id, const QString& exclude_agent, const QString& reason);
  uint64_t killRank(const QString& job_id, int rank);
  uint64_t readLog(const QString& agent, const QString& job_id, int rank, uint64_t offset,
                   uint32_t attempt = 0, uint32_t max_bytes = 0);
  // Builds something from the history on the session's history worker (`read`: a long run's
  // charts take seconds to read), then hands it to `then` on this thread, unless `context` is
  // gone by then. false without a session (nothing is read).
  template <class T>
  bool readHistory(std::function<T(store::Reader&)> read, QObject* context,
                   std::function<void(T)> then) {
    auto result = std::make_shared<std::optional<T>>();  // the worker's until `then` runs
    return postRead([read = std::move(read),
                     result](store::Reader& history) { result->emplace(read(history)); },
                    context, [result, then = std::move(then)] { then(std::move(**result)); });
  }
  uint64_t listRuns();
  uint64_t hardwareReport(double since = 0);  // every run submitted at or after `since`
  // The cluster preflight of these agents (all when empty): progress, then the report.
  uint64_t preflight(const QStringList& agents = {});
  // ClusterSession::postEditHistory: runs on the session's writer, never on the GUI thread.
  uint64_t editHistory(std::function<Status(store::Writer&)> edit);
  void reloadCluster();

  // Records handed to the GUI so far (tests and benchmarks).
  uint64_t deliveredRecords() const { return delivered_records_; }

 signals:
  void agentStatus(const client::AgentStatus& status);
  void records(const std::vector<ringmaster::gui::AgentRecords>& batch);
  void submitted(uint64_t token, const Result<client::SubmittedJob>& result);
  void submitWaiting(uint64_t token, const QString& line);  // agents alive but busy
  void stopped(uint64_t token, const QString& job_id, const Result<int>& result);
  // error: empty when the restart is under way.
  void restarted(uint64_t token, const QString& job_id, const QString& error);
  // error: empty when the rank was killed.
  void rankKilled(uint64_t token, const QString& job_id, int rank, const QString& error);
  void logChunk(uint64_t token, const QString& job_id, int rank,
                const Result<proto::LogChunk>& chunk);
  void runsListed(uint64_t token, const Result<std::vector<client::RunSummary>>& runs);
  void hardwareReported(uint64_t token, const Result<hardware::HardwareReport>& report);
  void preflightProgress(uint64_t token, const QString& what);
  void preflightDone(uint64_t token, const Result<client::PreflightReport>& report);
  void historyEdited(uint64_t token, const QString& error);  // error: empty once committed
  void slurmJobChanged(const store::SlurmJobRow& row);
  void sessionError(const QString& message);  // the history could not be written, ...

 private:
  class Inbox;
  bool postRead(std::function<void(store::Reader&)> read, QObject* context,
                std::function<void()> then);
  void deliver();
  void deliverAnswers();  // the answers only, at once (a log chunk came: see the constructor)

  std::unique_ptr<Inbox> inbox_;
  std::unique_ptr<client::ClusterSession> session_;
  std::thread thread_;
  QTimer timer_;
  std::deque<AgentRecords> backlog_;  // delivered in slices (see deliver())
  size_t backlog_offset_ = 0;         // records of backlog_.front() already delivered
  uint64_t delivered_records_ = 0;
};

}  // namespace ringmaster::gui
