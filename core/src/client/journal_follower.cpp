#include "client/journal_follower.h"

#include <algorithm>

namespace ringmaster::client {

void JournalFollower::resume(std::string journal_id, uint64_t cursor) {
  journal_id_ = std::move(journal_id);
  cursor_ = std::max<uint64_t>(cursor, 1);
  caught_up_ = false;
  request_ = 0;
}

Status JournalFollower::sendRead(uint32_t max_records, uint32_t wait_ms) {
  proto::Envelope request;
  auto* read = request.mutable_read_journal();
  read->set_from_seq(cursor_);
  read->set_max_records(max_records);
  read->set_journal_id(journal_id_);
  request_wait_ms_ = caught_up_ ? wait_ms : 0;
  read->set_wait_ms(request_wait_ms_);
  RM_RETURN_IF_ERROR(connection_->send(request, 0));
  request_ = request.request_id();
  sent_at_ = Clock::now();
  return Status();
}

bool JournalFollower::overdue(int request_timeout_ms) const {
  return request_ &&
         Clock::now() - sent_at_ > std::chrono::milliseconds(request_timeout_ms + request_wait_ms_);
}

std::optional<Result<JournalFollower::Batch>> JournalFollower::receive(
    const std::function<void()>& read_on) {
  auto reply = connection_->receive(request_);
  if (!reply) return std::nullopt;
  request_ = 0;
  if (!reply->isOk()) {
    if (reply->status().code() == ErrorCode::kNotFound) forget();
    return Result<Batch>(reply->status());
  }
  const proto::JournalBatch& batch = (*reply)->journal_batch();
  if (batch.records_size() == 0 && batch.last_seq() + 1 < cursor_) cursor_ = batch.last_seq() + 1;
  const uint64_t from = cursor_;
  caught_up_ = batch.next_seq() > batch.last_seq();
  cursor_ = std::max(cursor_, batch.next_seq());
  read_on();

  Batch out;
  out.applied_to = batch.next_seq();
  out.records.resize(static_cast<size_t>(batch.records_size()));
  for (int i = 0; i < batch.records_size(); ++i) {
    if (out.records[static_cast<size_t>(i)].ParseFromString(batch.records(i))) continue;
    out.records.resize(static_cast<size_t>(i));
    out.applied_to = out.records.empty() ? from : out.records.back().seq() + 1;
    out.broken = protocolError("journal record " + std::to_string(out.applied_to) +
                               " from agent '" + connection_->agent().name + "' does not parse");
    // Read the bad record again rather than what a read already sent would skip to.
    cursor_ = out.applied_to;
    request_ = 0;
    break;
  }
  return Result<Batch>(std::move(out));
}

}  // namespace ringmaster::client
