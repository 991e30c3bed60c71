#include "ringmaster/client/journal_sync.h"

#include <zmq.h>

#include <algorithm>
#include <chrono>

namespace ringmaster::client {
namespace {

using Clock = std::chrono::steady_clock;

struct AgentPull {
  AgentConnection* connection = nullptr;
  std::string journal_id;
  uint64_t cursor = 1;
  uint64_t in_flight = 0;  // request id, 0 when none
  Clock::time_point sent_at;
  bool caught_up = false;
  bool failed = false;
};

}  // namespace

std::string JournalDamageNote::describe() const {
  std::string text = "agent '" + agent + "' found its journal damaged";
  if (!detail.empty()) text += " (" + detail + ")";
  text += ": " + std::to_string(lost_records) + " record(s) lost";
  if (lost_records > 0) text += " from seq " + std::to_string(first_lost_seq);
  text += "; the damaged file is kept on its host at " + kept_at;
  return text;
}

std::optional<JournalDamageNote> damageReported(const std::string& agent,
                                                const proto::JournalRecord& record) {
  if (!record.has_journal_damage() || record.journal_damage().detail().empty()) return std::nullopt;
  const proto::JournalDamage& d = record.journal_damage();
  return JournalDamageNote{agent, d.first_lost_seq(), d.lost_records(), d.kept_at(), d.detail()};
}

JournalSync::JournalSync(std::vector<AgentConnection*> agents, store::Store* store,
                         store::BatchWriter* writer)
    : agents_(std::move(agents)), store_(store), writer_(writer) {}

Result<SyncReport> JournalSync::run(const SyncOptions& options) {
  SyncReport report;
  const auto start = Clock::now();
  auto elapsed_ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  };

  // Which journal each agent has now decides where its cursor is.
  std::vector<proto::Envelope> inventory_requests(agents_.size());
  for (auto& r : inventory_requests) r.mutable_inventory_request();
  auto inventories = callAll(agents_, std::move(inventory_requests), options.request_timeout_ms);
  std::vector<AgentPull> pulls;
  for (size_t i = 0; i < agents_.size(); ++i) {
    const std::string& name = agents_[i]->agent().name;
    if (!inventories[i].isOk()) {
      report.agent_errors[name] = inventories[i].status();
      continue;
    }
    AgentPull pull;
    pull.connection = agents_[i];
    pull.journal_id = inventories[i]->inventory().journal_id();
    auto cursor = store_->cursor(name, pull.journal_id);
    if (!cursor.isOk()) return cursor.status();
    // A journal shorter than what was read of it (cut by an older agent) is followed from its
    // end rather than waited for.
    pull.cursor = std::min(*cursor, inventories[i]->inventory().journal_last_seq() + 1);
    pulls.push_back(std::move(pull));
  }
  if (pulls.empty() && !agents_.empty()) {
    return Status(report.agent_errors.begin()->second.code(),
                  "no agent could be reached: " + report.agent_errors.begin()->second.message());
  }

  auto send = [&](AgentPull& pull) {
    proto::Envelope request;
    auto* read = request.mutable_read_journal();
    read->set_from_seq(pull.cursor);
    read->set_max_records(options.batch_records);
    read->set_journal_id(pull.journal_id);
    read->set_wait_ms(pull.caught_up && options.follow ? options.poll_wait_ms : 0);
    Status sent = pull.connection->send(request, options.request_timeout_ms);
    if (!sent.isOk()) {
      pull.failed = true;
      report.agent_errors[pull.connection->agent().name] = sent;
      return;
    }
    pull.in_flight = request.request_id();
    pull.sent_at = Clock::now();
  };
  auto finished = [&] {
    if (options.follow) {
      if (options.until && options.until()) return true;
    } else {
      bool all_done = true;
      for (const auto& p : pulls) all_done = all_done && (p.failed || p.caught_up);
      if (all_done) return true;
    }
    bool any_alive = false;
    for (const auto& p : pulls) any_alive = any_alive || !p.failed;
    return !any_alive || (options.timeout_ms > 0 && elapsed_ms() >= options.timeout_ms);
  };

  for (auto& pull : pulls) send(pull);
  std::vector<zmq_pollitem_t> items;
  std::vector<AgentPull*> owners;
  std::vector<proto::JournalRecord> records;
  while (!finished()) {
    items.clear();
    owners.clear();
    for (auto& pull : pulls) {
      if (pull.failed || !pull.in_flight) continue;
      items.push_back({pull.connection->socket(), 0, ZMQ_POLLIN, 0});
      owners.push_back(&pull);
    }
    if (items.empty()) break;
    if (zmq_poll(items.data(), static_cast<int>(items.size()), 100) < 0 && zmq_errno() != EINTR) {
      return Status(ErrorCode::kIo, std::string("zmq_poll: ") + zmq_strerror(zmq_errno()));
    }
    for (size_t k = 0; k < items.size(); ++k) {
      AgentPull& pull = *owners[k];
      const std::string& name = pull.connection->agent().name;
      if (!(items[k].revents & ZMQ_POLLIN)) {
        int64_t waited =
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - pull.sent_at)
                .count();
        if (waited > options.request_timeout_ms + options.poll_wait_ms) {
          pull.connection->drainMonitor();
          pull.failed = true;
          report.agent_errors[name] = pull.connection->explainSilence(options.request_timeout_ms);
        }
        continue;
      }
      auto reply = pull.connection->receive(pull.in_flight);
      if (!reply) continue;
      pull.in_flight = 0;
      if (!reply->isOk()) {
        pull.failed = true;
        report.agent_errors[name] = reply->status();
        continue;
      }
      proto::JournalBatch& batch = *(*reply)->mutable_journal_batch();
      const uint64_t next = batch.next_seq();
      pull.caught_up = next > batch.last_seq();
      const uint64_t from = pull.cursor;
      pull.cursor = std::max(pull.cursor, next);
      // Ask for the next batch before parsing this one: the agent reads while we parse.
      if (!finished() || !pull.caught_up) send(pull);
      // A key with role user is sent only its own jobs' records: seqs may skip, and next_seq
      // is where the batch ends.
      uint64_t applied_to = next;
      records.clear();
      records.resize(static_cast<size_t>(batch.records_size()));
      for (int i = 0; i < batch.records_size(); ++i) {
        if (!records[static_cast<size_t>(i)].ParseFromString(batch.records(i))) {
          pull.failed = true;
          records.resize(static_cast<size_t>(i));
          applied_to = records.empty() ? from : records.back().seq() + 1;
          report.agent_errors[name] = protocolError("journal record " + std::to_string(applied_to) +
                                                    " from agent '" + name + "' does not parse");
          break;
        }
        const proto::JournalRecord& record = records[static_cast<size_t>(i)];
        if (auto damage = damageReported(name, record)) report.damage.push_back(std::move(*damage));
        if (options.on_record) options.on_record(name, record);
      }
      report.records += records.size();
      if (!records.empty()) {
        writer_->enqueue(name, pull.journal_id, std::move(records), applied_to);
        records = {};
      }
    }
  }
  Status flushed = writer_->flush();
  if (!flushed.isOk()) return flushed;
  return report;
}

}  // namespace ringmaster::client
