#include "parked_requests.h"

#include <algorithm>

namespace ringmaster::agent {
namespace {
constexpr uint32_t kMaxWaitMs = 60000;
}  // namespace

void ParkedRequests::park(std::string identity, std::string user, proto::Envelope request,
                          uint32_t wait_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(std::min(wait_ms, kMaxWaitMs));
  parked_.push_back({std::move(identity), std::move(user), std::move(request), deadline});
}

void ParkedRequests::retry(bool expire_only, const Answer& answer, const Send& send) {
  const auto now = Clock::now();
  for (auto it = parked_.begin(); it != parked_.end();) {
    const bool expired = it->deadline <= now;
    std::optional<proto::Envelope> reply;
    if (expired || !expire_only) reply = answer(it->user, it->request, expired);
    if (!reply) {
      ++it;
      continue;
    }
    send(it->identity, *reply);
    it = parked_.erase(it);
  }
}

ParkedRequests::Clock::time_point ParkedRequests::nextDeadline(Clock::time_point otherwise) const {
  for (const auto& p : parked_) otherwise = std::min(otherwise, p.deadline);
  return otherwise;
}

}  // namespace ringmaster::agent
