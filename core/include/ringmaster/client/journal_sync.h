#pragma once
// Pulling agents' journals into the history: one request in flight per agent (pull-with-cursor,
// long polls when caught up), records parsed on the calling thread and committed by the store's
// writer thread, so fetching, parsing and inserting overlap. The cursor is stored with the
// records in one transaction, so pulls resume exactly where the last commit ended.
//
// Not thread-safe: the calling thread owns the connections.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/client/agent_connection.h"
#include "ringmaster/store/store.h"

namespace ringmaster::client {

struct SyncOptions {
  uint32_t batch_records = 20000;
  // Keep pulling after catching up (long polls of `poll_wait_ms`) until `until` is true or
  // `timeout_ms` passes. false: stop once every agent is caught up.
  bool follow = false;
  uint32_t poll_wait_ms = 500;
  int64_t timeout_ms = 60000;  // overall; 0 = no limit (follow until `until`)
  int request_timeout_ms = 10000;
  std::function<bool()> until;  // checked after every batch when following
  // Sees every record as it arrives (live views, --wait); agent name first.
  std::function<void(const std::string&, const proto::JournalRecord&)> on_record;
};

// An agent found its journal damaged: records were lost before any client could store them.
struct JournalDamageNote {
  std::string agent;
  uint64_t first_lost_seq = 0;
  uint64_t lost_records = 0;
  std::string kept_at;  // the damaged file, on the agent's host
  std::string detail;   // what was unreadable, and where

  // "agent 'a1' found its journal damaged (bytes 100-180 unreadable): 2 record(s) lost from
  // seq 12 ...": one line for a user.
  std::string describe() const;
};

// The JournalDamage record that reports a damage as a whole (the agent also leaves one with no
// detail in place of each lost record); nullopt for any other record.
std::optional<JournalDamageNote> damageReported(const std::string& agent,
                                                const proto::JournalRecord& record);

struct SyncReport {
  uint64_t records = 0;
  std::map<std::string, Status> agent_errors;  // agents that could not be synced, and why
  std::vector<JournalDamageNote> damage;       // journal damage read in this sync
};

class JournalSync {
 public:
  JournalSync(std::vector<AgentConnection*> agents, store::Reader* store,
              store::BatchWriter* writer);
  // Pulls, then flushes the writer. Errors of single agents are in the report; the returned
  // status fails only when nothing could be done at all or the history could not be written.
  Result<SyncReport> run(const SyncOptions& options);

 private:
  std::vector<AgentConnection*> agents_;
  store::Reader* store_;
  store::BatchWriter* writer_;
};

}  // namespace ringmaster::client
