#include "parked_requests.h"

#include <algorithm>
#include <iterator>

namespace ringmaster::agent {
namespace {
constexpr uint32_t kMaxWaitMs = 60000;
}  // namespace

void ParkedRequests::park(std::string identity, std::string user, proto::Envelope request,
                          uint32_t wait_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(std::min(wait_ms, kMaxWaitMs));
  parked_.push_back({std::move(identity), std::move(user), std::move(request), deadline});
}

void ParkedRequests::retry(bool expire_only, const Answer& answer, const Send& send,
                           const std::function<void()>& between) {
  const auto now = Clock::now();
  // Taken out first: `between` may park requests (appended to parked_ meanwhile).
  std::deque<Parked> asked;
  asked.swap(parked_);
  std::deque<Parked> still_waiting;
  for (Parked& p : asked) {
    const bool expired = p.deadline <= now;
    std::optional<proto::Envelope> reply;
    if (expired || !expire_only) reply = answer(p.user, p.request, expired);
    if (!reply) {
      still_waiting.push_back(std::move(p));
      continue;
    }
    send(p.identity, *reply);
    if (between) between();
  }
  // The older requests keep their place before those parked meanwhile.
  parked_.insert(parked_.begin(), std::make_move_iterator(still_waiting.begin()),
                 std::make_move_iterator(still_waiting.end()));
}

ParkedRequests::Clock::time_point ParkedRequests::nextDeadline(Clock::time_point otherwise) const {
  for (const auto& p : parked_) otherwise = std::min(otherwise, p.deadline);
  return otherwise;
}

}  // namespace ringmaster::agent
