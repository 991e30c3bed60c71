#include "bridge/session_bridge.h"

#include <QElapsedTimer>
#include <QPointer>
#include <algorithm>
#include <iterator>
#include <map>
#include <utility>

namespace ringmaster::gui {
namespace {
constexpr int kDeliveryIntervalMs = 40;
constexpr qint64 kDeliveryBudgetMs = 10;
constexpr size_t kSliceRecords = 512;
}  // namespace

// What the I/O thread has reported since the last delivery. Agent statuses keep only the newest
// per agent; records and answers keep everything, in order.
class SessionBridge::Inbox : public client::SessionSink {
 public:
  struct Batch {
    std::map<std::string, client::AgentStatus> statuses;
    std::vector<AgentRecords> records;
    std::vector<std::function<void(SessionBridge&)>> answers;
    bool empty() const { return statuses.empty() && records.empty() && answers.empty(); }
  };

  Batch take() {
    std::lock_guard<std::mutex> lock(mutex_);
    Batch out;
    std::swap(out, pending_);
    wake_posted_ = false;
    return out;
  }
  std::vector<std::function<void(SessionBridge&)>> takeAnswers() {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_posted_ = false;
    return std::exchange(pending_.answers, {});
  }
  // Called on the I/O thread when an answer waits and no wake-up is on its way yet.
  void setWake(std::function<void()> wake) { wake_ = std::move(wake); }

  void agentStatus(const client::AgentStatus& status) override {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.statuses[status.name] = status;
  }
  void records(const std::string& agent, std::vector<proto::JournalRecord> records) override {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.records.push_back({agent, std::move(records)});
  }
  void submitted(uint64_t token, const Result<client::SubmittedJob>& result) override {
    answer([token, result](SessionBridge& b) { emit b.submitted(token, result); });
  }
  void stopped(uint64_t token, const std::string& job_id, const Result<int>& result) override {
    answer([token, id = QString::fromStdString(job_id), result](SessionBridge& b) {
      emit b.stopped(token, id, result);
    });
  }
  void restarted(uint64_t token, const std::string& job_id,
                 const Result<client::RestartReport>& result) override {
    const QString error =
        result.isOk() ? QString() : QString::fromStdString(result.status().message());
    answer([token, id = QString::fromStdString(job_id), error](SessionBridge& b) {
      emit b.restarted(token, id, error);
    });
  }
  void rankKilled(uint64_t token, const std::string& job_id, int rank,
                  const Status& result) override {
    answer([token, id = QString::fromStdString(job_id), rank,
            error = QString::fromStdString(result.message())](SessionBridge& b) {
      emit b.rankKilled(token, id, rank, error);
    });
  }
  void logChunk(uint64_t token, const std::string& job_id, int rank,
                const Result<proto::LogChunk>& chunk) override {
    // A reader pages through a log one chunk after another: each waits for the last.
    answer([token, id = QString::fromStdString(job_id), rank,
            chunk](SessionBridge& b) { emit b.logChunk(token, id, rank, chunk); },
           /*at_once=*/true);
  }
  // What a read of the history (postRead) built is ready: `then` takes it on the GUI thread.
  void readDone(std::function<void()> then) {
    answer([then = std::move(then)](SessionBridge&) { then(); });
  }
  void runsListed(uint64_t token, const Result<std::vector<client::RunSummary>>& runs) override {
    answer([token, runs](SessionBridge& b) { emit b.runsListed(token, runs); });
  }
  void historyEdited(uint64_t token, const Status& status) override {
    const QString error = status.isOk() ? QString() : QString::fromStdString(status.message());
    answer([token, error](SessionBridge& b) { emit b.historyEdited(token, error); });
  }
  void hardwareReported(uint64_t token, const Result<hardware::HardwareReport>& report) override {
    answer([token, report](SessionBridge& b) { emit b.hardwareReported(token, report); });
  }
  void submitWaiting(uint64_t token, const std::string& line) override {
    answer([token, text = QString::fromStdString(line)](SessionBridge& b) {
      emit b.submitWaiting(token, text);
    });
  }
  void preflightProgress(uint64_t token, const std::string& what) override {
    answer([token, text = QString::fromStdString(what)](SessionBridge& b) {
      emit b.preflightProgress(token, text);
    });
  }
  void preflightDone(uint64_t token, const Result<client::PreflightReport>& report) override {
    answer([token, report](SessionBridge& b) { emit b.preflightDone(token, report); });
  }
  void slurmJobChanged(const store::SlurmJobRow& row) override {
    answer([row](SessionBridge& b) { emit b.slurmJobChanged(row); });
  }
  void sessionError(const Status& error) override {
    const QString text = QString::fromStdString(error.message());
    answer([text](SessionBridge& b) { emit b.sessionError(text); });
  }

 private:
  // at_once: delivered as soon as the GUI thread can (with the answers before it), not at the
  // next tick. Only log chunks: a job's snapshot delivered at once landed in the same turn as
  // the new dashboard's first paint (opening it stalled 17-23 ms instead of 12).
  void answer(std::function<void(SessionBridge&)> f, bool at_once = false) {
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      pending_.answers.push_back(std::move(f));
      wake = at_once && !wake_posted_ && wake_;
      wake_posted_ = wake_posted_ || wake;
    }
    if (wake) wake_();
  }

  std::mutex mutex_;
  Batch pending_;               // GUARDED_BY(mutex_)
  bool wake_posted_ = false;    // GUARDED_BY(mutex_)
  std::function<void()> wake_;  // set before the I/O thread starts
};

SessionBridge::SessionBridge(QObject* parent) : QObject(parent), inbox_(new Inbox) {
  timer_.setInterval(kDeliveryIntervalMs);
  timer_.setObjectName("bridge-delivery");
  connect(&timer_, &QTimer::timeout, this, &SessionBridge::deliver);
  // A log chunk is what a reader paging a log waits for: delivered at once rather than at the
  // next tick, which made every read of a long log take up to 40 ms.
  inbox_->setWake([this] {
    QMetaObject::invokeMethod(this, &SessionBridge::deliverAnswers, Qt::QueuedConnection);
  });
}

void SessionBridge::deliverAnswers() {
  for (auto& answer : inbox_->takeAnswers()) answer(*this);
}

SessionBridge::~SessionBridge() { stop(); }

Status SessionBridge::start(const client::ClientPaths& paths,
                            const client::SessionOptions& options) {
  stop();
  RM_ASSIGN_OR_RETURN(session_, client::ClusterSession::open(paths, inbox_.get(), options));
  client::ClusterSession* session = session_.get();
  Inbox* inbox = inbox_.get();
  thread_ = std::thread([session, inbox] {
    if (Status ended = session->run(); !ended.isOk()) {
      inbox->sessionError(Status(ended.code(), "the session stopped: " + ended.message()));
    }
  });
  timer_.start();
  return Status::ok();
}

void SessionBridge::stop() {
  if (!session_) return;
  session_->stop();
  if (thread_.joinable()) thread_.join();
  session_.reset();
  timer_.stop();
  inbox_->take();  // answers to a session that is gone
  backlog_.clear();
  backlog_offset_ = 0;
}

QString SessionBridge::clientPublicKey() const {
  return session_ ? QString::fromStdString(session_->clientPublicKey()) : QString();
}

uint64_t SessionBridge::submit(job::JobSpec spec) {
  return session_ ? session_->postSubmit(std::move(spec)) : 0;
}

uint64_t SessionBridge::stopJob(const QString& job_id) {
  return session_ ? session_->postStop(job_id.toStdString()) : 0;
}

uint64_t SessionBridge::restartJob(const QString& job_id, const QString& exclude_agent,
                                   const QString& reason) {
  return session_ ? session_->postRestart(job_id.toStdString(), exclude_agent.toStdString(),
                                          reason.toStdString())
                  : 0;
}

uint64_t SessionBridge::killRank(const QString& job_id, int rank) {
  return session_ ? session_->postKillRank(job_id.toStdString(), rank) : 0;
}

uint64_t SessionBridge::readLog(const QString& agent, const QString& job_id, int rank,
                                uint64_t offset, uint32_t attempt, uint32_t max_bytes) {
  return session_ ? session_->postReadLog(agent.toStdString(), job_id.toStdString(), rank, offset,
                                          attempt, max_bytes)
                  : 0;
}

bool SessionBridge::postRead(std::function<void(store::Reader&)> read, QObject* context,
                             std::function<void()> then) {
  if (!session_) return false;
  session_->postReadHistory([inbox = inbox_.get(), read = std::move(read),
                             guard = QPointer<QObject>(context),
                             then = std::move(then)](store::Reader& history) mutable {
    read(history);
    // Moved, not copied, on this thread: the guard and `then` are only ever used on the GUI's.
    inbox->readDone([guard = std::move(guard), then = std::move(then)] {
      if (guard) then();
    });
  });
  return true;
}

uint64_t SessionBridge::listRuns() { return session_ ? session_->postListRuns() : 0; }

uint64_t SessionBridge::preflight(const QStringList& agents) {
  if (!session_) return 0;
  client::PreflightOptions options;
  for (const QString& agent : agents) options.agents.push_back(agent.toStdString());
  return session_->postPreflight(std::move(options));
}

uint64_t SessionBridge::hardwareReport(double since) {
  return session_ ? session_->postHardwareReport(since) : 0;
}

uint64_t SessionBridge::editHistory(std::function<Status(store::Writer&)> edit) {
  return session_ ? session_->postEditHistory(std::move(edit)) : 0;
}

void SessionBridge::reloadCluster() {
  if (session_) session_->postReloadCluster();
}

void SessionBridge::deliver() {
  Inbox::Batch batch = inbox_->take();
  for (const auto& [name, status] : batch.statuses) emit agentStatus(status);
  // Answers first: a submission is known before the records of its job arrive.
  for (auto& answer : batch.answers) answer(*this);
  for (auto& agent : batch.records) backlog_.push_back(std::move(agent));
  // Records in slices, for at most kDeliveryBudgetMs per wake-up: a burst (a journal caught up
  // after hours) becomes many short turns of the event loop instead of one long stall.
  QElapsedTimer clock;
  clock.start();
  while (!backlog_.empty() && clock.elapsed() < kDeliveryBudgetMs) {
    AgentRecords& front = backlog_.front();
    std::vector<AgentRecords> slice(1);
    slice[0].agent = front.agent;
    const size_t end = std::min(front.records.size(), backlog_offset_ + kSliceRecords);
    slice[0].records.assign(std::make_move_iterator(front.records.begin() + backlog_offset_),
                            std::make_move_iterator(front.records.begin() + end));
    backlog_offset_ = end;
    if (backlog_offset_ == front.records.size()) {
      backlog_.pop_front();
      backlog_offset_ = 0;
    }
    delivered_records_ += slice[0].records.size();
    emit records(slice);
  }
  if (!backlog_.empty()) QTimer::singleShot(0, this, &SessionBridge::deliver);
}

}  // namespace ringmaster::gui
