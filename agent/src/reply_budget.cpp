#include "reply_budget.h"

namespace ringmaster::agent {

void ReplyBudget::noteRequest(const std::string& identity, const std::string& user, int fd) {
  if (fd >= 0) {
    // Two open connections never share a fd: an earlier one on this fd is closed, whether or
    // not its DISCONNECTED event came yet.
    auto earlier = identity_of_fd_.find(fd);
    if (earlier != identity_of_fd_.end() && earlier->second != identity) {
      auto gone = connections_.find(earlier->second);
      if (gone != connections_.end() && gone->second.fd == fd) forget(gone);
    }
    identity_of_fd_[fd] = identity;
  }
  Connection& connection = connections_[identity];
  connection.user = user;
  if (fd >= 0) connection.fd = fd;
}

bool ReplyBudget::wouldAdmit(const std::string& identity, uint64_t bytes) const {
  auto found = connections_.find(identity);
  if (found == connections_.end() || bytes <= kAlwaysAllowed) return true;
  const Connection& connection = found->second;
  const uint64_t dropped = connection.newest[connection.next];  // the oldest of the ring
  auto user = by_user_.find(connection.user);
  const uint64_t user_held = user == by_user_.end() ? 0 : user->second;
  return user_held - dropped + bytes <= per_user_ && total_ - dropped + bytes <= total_limit_;
}

bool ReplyBudget::admit(const std::string& identity, uint64_t bytes) {
  auto found = connections_.find(identity);
  if (found == connections_.end()) return true;  // not a client's (nothing to charge)
  if (!wouldAdmit(identity, bytes)) return false;
  Connection& connection = found->second;
  const uint64_t dropped = connection.newest[connection.next];  // the oldest of the ring
  const uint64_t user_after = by_user_[connection.user] - dropped + bytes;
  const uint64_t total_after = total_ - dropped + bytes;
  connection.newest[connection.next] = bytes;
  connection.next = (connection.next + 1) % kHeldReplies;
  connection.held = connection.held - dropped + bytes;
  by_user_[connection.user] = user_after;
  total_ = total_after;
  return true;
}

void ReplyBudget::disconnected(int fd) {
  auto identity = identity_of_fd_.find(fd);
  if (identity == identity_of_fd_.end()) return;
  auto connection = connections_.find(identity->second);
  identity_of_fd_.erase(identity);
  if (connection != connections_.end() && connection->second.fd == fd) forget(connection);
}

void ReplyBudget::forget(std::map<std::string, Connection>::iterator connection) {
  auto user = by_user_.find(connection->second.user);
  if (user != by_user_.end()) {
    user->second -= connection->second.held;
    if (user->second == 0) by_user_.erase(user);
  }
  total_ -= connection->second.held;
  connections_.erase(connection);
}

uint64_t ReplyBudget::heldFor(const std::string& user) const {
  auto found = by_user_.find(user);
  return found == by_user_.end() ? 0 : found->second;
}

size_t ReplyBudget::connectionsOf(const std::string& user) const {
  size_t count = 0;
  for (const auto& [identity, connection] : connections_) count += connection.user == user;
  return count;
}

}  // namespace ringmaster::agent
