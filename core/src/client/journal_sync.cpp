#include "ringmaster/client/journal_sync.h"

#include <zmq.h>

#include <algorithm>
#include <chrono>

#include "client/journal_follower.h"

namespace ringmaster::client {
namespace {

using Clock = std::chrono::steady_clock;

struct AgentPull {
  explicit AgentPull(AgentConnection* c) : connection(c), follower(c) {}
  AgentConnection* connection;
  JournalFollower follower;
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

JournalSync::JournalSync(std::vector<AgentConnection*> agents, store::Reader* store,
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
    const proto::Inventory& inventory = inventories[i]->inventory();
    auto cursor = store_->cursor(name, inventory.journal_id());
    if (!cursor.isOk()) return cursor.status();
    pulls.emplace_back(agents_[i]);
    // A journal shorter than what was read of it is followed from its end.
    pulls.back().follower.resume(inventory.journal_id(),
                                 std::min(*cursor, inventory.journal_last_seq() + 1));
  }
  if (pulls.empty() && !agents_.empty()) {
    return Status(report.agent_errors.begin()->second.code(),
                  "no agent could be reached: " + report.agent_errors.begin()->second.message());
  }

  auto fail = [&](AgentPull& pull, Status why) {
    pull.failed = true;
    report.agent_errors[pull.connection->agent().name] = std::move(why);
  };
  auto finished = [&] {
    if (options.follow) {
      if (options.until && options.until()) return true;
    } else {
      bool all_done = true;
      for (const auto& p : pulls) all_done = all_done && (p.failed || p.follower.caughtUp());
      if (all_done) return true;
    }
    bool any_alive = false;
    for (const auto& p : pulls) any_alive = any_alive || !p.failed;
    return !any_alive || (options.timeout_ms > 0 && elapsed_ms() >= options.timeout_ms);
  };
  auto send = [&](AgentPull& pull) {
    Status sent =
        pull.follower.sendRead(options.batch_records, options.follow ? options.poll_wait_ms : 0);
    if (!sent.isOk()) fail(pull, std::move(sent));
  };

  for (auto& pull : pulls) send(pull);
  std::vector<zmq_pollitem_t> items;
  std::vector<AgentPull*> owners;
  while (!finished()) {
    items.clear();
    owners.clear();
    for (auto& pull : pulls) {
      if (pull.failed || !pull.follower.inFlight()) continue;
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
        if (pull.follower.overdue(options.request_timeout_ms)) {
          pull.connection->drainMonitor();
          fail(pull, pull.connection->explainSilence(options.request_timeout_ms));
        }
        continue;
      }
      auto batch = pull.follower.receive([&] {
        if (!finished() || !pull.follower.caughtUp()) send(pull);
      });
      if (!batch) continue;
      if (!batch->isOk()) {
        fail(pull, batch->status());
        continue;
      }
      if (!(*batch)->broken.isOk()) fail(pull, (*batch)->broken);
      std::vector<proto::JournalRecord>& records = (*batch)->records;
      for (const proto::JournalRecord& record : records) {
        if (auto damage = damageReported(name, record)) report.damage.push_back(std::move(*damage));
        if (options.on_record) options.on_record(name, record);
      }
      report.records += records.size();
      if (!records.empty()) {
        writer_->enqueue(name, pull.follower.journalId(), std::move(records), (*batch)->applied_to);
      }
    }
  }
  Status flushed = writer_->flush();
  if (!flushed.isOk()) return flushed;
  return report;
}

}  // namespace ringmaster::client
