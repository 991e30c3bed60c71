#pragma once
// Requests that wait for data (long polls: journal and log reads, rendezvous gets), answered when
// the data arrives or at their deadline, whichever comes first.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>

#include "ringmaster/protocol/ringmaster.pb.h"

namespace ringmaster::agent {

class ParkedRequests {
 public:
  using Clock = std::chrono::steady_clock;
  // The reply to a request of `user` (the id ZAP gave its key), or nullopt while it should go on
  // waiting; `final`: it may not.
  using Answer = std::function<std::optional<proto::Envelope>(const std::string& user,
                                                              const proto::Envelope&, bool final)>;
  using Send = std::function<void(const std::string& identity, proto::Envelope& reply)>;

  // wait_ms is capped at a minute.
  void park(std::string identity, std::string user, proto::Envelope request, uint32_t wait_ms);
  // Answers every request that can be answered now (with expire_only, only those whose
  // deadline has passed) and forgets them; `between`, when given, runs after each answer sent
  // (the agent takes in cheap requests there, so that they do not wait for a round of answers).
  // It may park more requests.
  void retry(bool expire_only, const Answer& answer, const Send& send,
             const std::function<void()>& between = {});
  // The earliest deadline, or `otherwise` when nothing waits or it is earlier.
  Clock::time_point nextDeadline(Clock::time_point otherwise) const;

 private:
  struct Parked {
    std::string identity;
    std::string user;
    proto::Envelope request;
    Clock::time_point deadline;
  };
  std::deque<Parked> parked_;
};

}  // namespace ringmaster::agent
