#pragma once
// The open connections of each user id ZAP gave (a client key, an attempt's credential), as
// their requests show them (ZMQ_SRCFD), so that those of a credential that stops being valid
// can be closed: ZAP checks a key only at the handshake, and libzmq has no other way to drop one
// peer of a ROUTER. Used by the agent's loop only.

#include <functional>
#include <map>
#include <string>

namespace ringmaster::agent {

class UserConnections {
 public:
  void seen(const std::string& user, int fd);

  // Closes the connections of every user `revoked` names and forgets them; `closed` hears of
  // each such user with how many it had.
  void closeWhere(const std::function<bool(const std::string& user)>& revoked,
                  const std::function<void(const std::string& user, size_t count)>& closed);

 private:
  // user -> fd -> the peer's address when first seen. A connection libzmq closed may have left
  // its fd to a newer one: a fd is only shut down while its peer is the one seen.
  std::map<std::string, std::map<int, std::string>> by_user_;
};

}  // namespace ringmaster::agent
