#include "dashboard/merged_log_reader.h"

namespace ringmaster::gui {
namespace {
constexpr uint32_t kChunkBytes = 64 * 1024;  // per rank per read: 64 ranks stay under 4 MB
}  // namespace

MergedLogReader::MergedLogReader(SessionBridge* bridge, const QString& job_id,
                                 const std::map<int, QString>& agents, client::LogStream stream,
                                 QObject* parent)
    : QObject(parent), bridge_(bridge), job_id_(job_id) {
  for (const auto& [rank, agent] : agents) {
    ranks_[rank].cursor = client::LogCursor(agent.toStdString(), rank);
    ranks_[rank].cursor.setStream(stream);
  }
  connect(bridge_, &SessionBridge::logChunk, this, &MergedLogReader::onChunk);
}

void MergedLogReader::poll() {
  for (auto& [rank, log] : ranks_) {
    if (!log.cursor.wantsRead() || log.cursor.agent().empty()) continue;
    log.cursor.sent(bridge_->readLog(QString::fromStdString(log.cursor.agent()), job_id_, rank,
                                     log.cursor.offset(), 0, kChunkBytes));
  }
}

void MergedLogReader::onChunk(uint64_t token, const QString& job_id, int rank,
                              const Result<proto::LogChunk>& chunk) {
  auto it = ranks_.find(rank);
  if (job_id != job_id_ || it == ranks_.end()) return;
  RankLog& log = it->second;
  const uint64_t from = log.cursor.offset();
  std::optional<Result<std::string>> taken = log.cursor.take(token, chunk);
  if (!taken) return;  // another reader's answer
  if (!taken->isOk()) {
    Q_EMIT failed(rank, QString::fromStdString(taken->status().message()));
    return;
  }
  if (!log.started) {
    log.started = true;
    if (from == 0 && log.cursor.size() > kStartBytes) {  // only its end, read again from there
      log.cursor.skipTo(log.cursor.size() - kStartBytes);
      log.drop_partial_line = true;
      poll();
      return;
    }
  }
  std::string_view data = **taken;
  if (log.drop_partial_line) {
    const size_t newline = data.find('\n');
    data.remove_prefix(newline == std::string_view::npos ? data.size() : newline + 1);
    log.drop_partial_line = newline == std::string_view::npos;
  }
  std::vector<TerminalLine> done = log.terminal.feed(data);
  if (log.cursor.complete() && !log.terminal.pending().text.empty()) {
    done.push_back(log.terminal.pending());
    log.terminal.clear();
  }
  if (!done.empty()) Q_EMIT lines(rank, done);
  if (!log.cursor.complete() && !log.cursor.caughtUp()) poll();  // more is there already
}

}  // namespace ringmaster::gui
