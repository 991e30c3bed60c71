#pragma once
// JournalFollower: one agent's journal as a client pulls it into the history, the one walk that
// both `ringmasterctl sync` (JournalSync) and the session's live watch (ClusterSession) take. It
// keeps the cursor (the next seq to read) of one journal, sends one read at a time (a long poll
// once caught up), and turns each reply into parsed records plus the cursor to store with them:
//   - a key with role user is sent only its own jobs' records, so seqs may skip: the batch's
//     next_seq, not its last record, is where it ends;
//   - the next read goes out before a batch is parsed, so that the agent reads while we parse;
//   - a record that does not parse ends the batch there, and the cursor goes back to it;
//   - a journal shorter than what was read of it (cut by an older agent) is followed from its
//     end rather than waited for.
//
// Not thread-safe: used on the thread that owns the connection.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/client/agent_connection.h"

namespace ringmaster::client {

class JournalFollower {
 public:
  using Clock = std::chrono::steady_clock;

  struct Batch {
    std::vector<proto::JournalRecord> records;
    uint64_t applied_to = 0;  // the cursor to store with the records
    Status broken;            // set when a record did not parse (the batch ends before it)
  };

  explicit JournalFollower(AgentConnection* connection) : connection_(connection) {}

  // Follows `journal_id` from `cursor` (the history's). Until then nothing is read.
  void resume(std::string journal_id, uint64_t cursor);
  // The journal changed under us (the agent said NOT_FOUND): nothing is read until resumed.
  void forget() { cursor_ = 0; }
  bool known() const { return cursor_ > 0; }
  const std::string& journalId() const { return journal_id_; }
  uint64_t cursor() const { return cursor_; }
  void setCursor(uint64_t cursor) { cursor_ = cursor; }
  bool caughtUp() const { return caught_up_; }

  // Sends the read of the next batch of up to `max_records`; once caught up it waits up to
  // `wait_ms` at the agent for new records.
  Status sendRead(uint32_t max_records, uint32_t wait_ms);
  uint64_t inFlight() const { return request_; }  // request id, 0 when none
  // How long the read in flight may take before it counts as unanswered.
  bool overdue(int request_timeout_ms) const;
  void abandon() { request_ = 0; }

  // Takes the reply to the read in flight: nullopt when the socket held an answer to an
  // abandoned request. Moves the cursor past the batch, then calls `read_on` (it may send the
  // next read) before parsing. An error reply is returned as it is (NOT_FOUND forgets the
  // journal).
  std::optional<Result<Batch>> receive(const std::function<void()>& read_on);

 private:
  AgentConnection* connection_;
  std::string journal_id_;
  uint64_t cursor_ = 0;
  bool caught_up_ = false;
  uint64_t request_ = 0;
  uint32_t request_wait_ms_ = 0;
  Clock::time_point sent_at_{};
};

}  // namespace ringmaster::client
