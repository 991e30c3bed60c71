#include "dashboard/log_search.h"

#include <QtConcurrent/QtConcurrentRun>

#include "bridge/session_bridge.h"

namespace ringmaster::gui {
namespace {
// Large enough that the round trips cost little (about 1 ms each on loopback), small enough that
// a scan takes a few ms and the agent's reply stays far under its cap.
constexpr uint32_t kReadBytes = 4u << 20;
}  // namespace

LogSearch::LogSearch(SessionBridge* bridge, const QString& job_id, const QString& agent, int rank,
                     uint32_t attempt, const QString& needle, QObject* parent)
    : QObject(parent),
      bridge_(bridge),
      job_id_(job_id),
      attempt_(attempt),
      needle_(needle),
      cursor_(agent.toStdString(), rank),
      matcher_(needle.toStdString()) {
  connect(bridge_, &SessionBridge::logChunk, this, &LogSearch::onChunk);
  connect(&scanning_, &QFutureWatcher<std::vector<uint64_t>>::finished, this,
          &LogSearch::onScanned);
}

LogSearch::~LogSearch() {
  cancelled_ = true;
  scanning_.waitForFinished();  // the scan uses matcher_
}

void LogSearch::start() { readNext(); }

void LogSearch::cancel() {
  if (finished_) return;
  cancelled_ = true;
  finish({});
}

void LogSearch::readNext() {
  if (cancelled_ || cursor_.reading() || read_ahead_) return;
  if (total_ > 0 && cursor_.offset() >= total_) return;  // all of it read
  cursor_.sent(bridge_->readLog(QString::fromStdString(cursor_.agent()), job_id_, cursor_.rank(),
                                cursor_.offset(), attempt_, kReadBytes));
}

void LogSearch::onChunk(uint64_t token, const QString& job_id, int rank,
                        const Result<proto::LogChunk>& chunk) {
  if (job_id != job_id_ || rank != cursor_.rank() || finished_) return;
  const uint64_t offset = cursor_.offset();
  std::optional<Result<std::string>> taken = cursor_.take(token, chunk);
  if (!taken) return;  // another reader's answer
  if (!taken->isOk()) return finish(QString::fromStdString(taken->status().message()));
  if (total_ == 0) total_ = cursor_.size();
  if (total_ == 0) return finish({});  // an empty log
  std::string data = std::move(**taken);
  if (offset + data.size() > total_) data.resize(total_ - offset);  // written since the start
  if (scan_busy_) {
    read_ahead_.emplace(offset, std::move(data));
  } else {
    scan(offset, std::move(data));
  }
}

void LogSearch::scan(uint64_t offset, std::string data) {
  scanning_end_ = offset + data.size();
  scan_busy_ = true;
  scanning_.setFuture(QtConcurrent::run([this, offset, data = std::move(data)] {
    std::vector<uint64_t> found;
    matcher_.feed(offset, data, &found);
    return found;
  }));
  readNext();
}

void LogSearch::onScanned() {
  if (finished_) return;
  const std::vector<uint64_t> found = scanning_.result();
  searched_ = scanning_end_;
  scan_busy_ = false;
  const size_t room = kMaxMatches - std::min(kMaxMatches, matches_.size());
  matches_.insert(matches_.end(), found.begin(), found.begin() + std::min(room, found.size()));
  if (read_ahead_) {
    auto [offset, data] = std::move(*read_ahead_);
    read_ahead_.reset();
    scan(offset, std::move(data));
  }
  Q_EMIT progressed();
  if (!scan_busy_ && cursor_.offset() >= total_) finish({});
}

void LogSearch::finish(const QString& error) {
  finished_ = true;
  error_ = error;
  Q_EMIT done();
}

}  // namespace ringmaster::gui
