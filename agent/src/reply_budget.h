#pragma once
// ReplyBudget: how much reply data the agent may hold for the clients of one key, over all their
// connections, and for all keys together. libzmq keeps a reply until the client reads it and
// says nothing when it does, so each connection is charged what it may still hold: its newest
// kHeldReplies replies (ZMQ_SNDHWM queued plus the one being written). A key's client that never
// reads, over as many connections as it likes, then holds at most `per_user` bytes of the agent's
// memory; a reply past that is refused (an error of a few bytes instead), while small replies
// (errors, inventories, rendezvous values) always go. A connection's charge goes with it when
// libzmq reports it closed. Used by the agent's loop only.

#include <array>
#include <cstdint>
#include <map>
#include <string>

namespace ringmaster::agent {

class ReplyBudget {
 public:
  // The agent's ZMQ_SNDHWM: replies queued for a connection that has not read them.
  static constexpr int kQueuedPerConnection = 8;
  static constexpr int kHeldReplies = kQueuedPerConnection + 1;  // and the one being written
  static constexpr uint64_t kAlwaysAllowed = 64 << 10;  // replies this small are never refused

  ReplyBudget(uint64_t per_user, uint64_t total) : per_user_(per_user), total_limit_(total) {}

  // A request of `user` came in on connection `identity`, through socket `fd` (ZMQ_SRCFD).
  void noteRequest(const std::string& identity, const std::string& user, int fd);
  // Whether a reply of `bytes` to `identity` may be queued; it is charged when so.
  bool admit(const std::string& identity, uint64_t bytes);
  // Whether admit() would take a reply of up to `bytes` now, charging nothing: a read whose
  // reply could not go is refused before the agent reads and encodes megabytes for it.
  bool wouldAdmit(const std::string& identity, uint64_t bytes) const;
  // libzmq closed the connection on `fd`: what it held is freed.
  void disconnected(int fd);

  uint64_t heldFor(const std::string& user) const;
  uint64_t held() const { return total_; }
  size_t connectionsOf(const std::string& user) const;

 private:
  struct Connection {
    std::string user;
    int fd = -1;
    std::array<uint64_t, kHeldReplies> newest{};  // a ring of the newest replies' sizes
    size_t next = 0;
    uint64_t held = 0;  // their sum
  };
  void forget(std::map<std::string, Connection>::iterator connection);

  const uint64_t per_user_, total_limit_;
  std::map<std::string, Connection> connections_;  // by routing identity
  std::map<int, std::string> identity_of_fd_;
  std::map<std::string, uint64_t> by_user_;
  uint64_t total_ = 0;
};

}  // namespace ringmaster::agent
