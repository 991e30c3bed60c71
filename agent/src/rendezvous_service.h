#pragma once
// The rendezvous stores this agent hosts: it runs group rank 0 of those jobs. A job's store is
// reachable only with the ranks' credential of its current attempt (security::attemptKeyPair;
// ZAP admits it as "attempt:<id>:<n>"), and of the next one, which nobody holds before that
// attempt starts but whose ranks may ask before this agent hears of it. Once an attempt is over
// its credential opens nothing, on new connections and on those already open. The store is
// dropped, with the keys, once the job is no longer active here.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/protocol/ringmaster.pb.h"

namespace ringmaster::agent {

class ZapHandler;

class RendezvousService {
 public:
  RendezvousService(std::string agent_name, ZapHandler* zap)
      : agent_name_(std::move(agent_name)), zap_(zap) {}

  // Hosts the store of a job launched here with group rank 0 and a rendezvous key, for the
  // launch's attempt (and the next).
  void host(const proto::JobLaunch& launch);
  // Whether the ranks' credential of `attempt` of `job_id` may use its store now.
  bool admits(const std::string& job_id, uint32_t attempt) const;
  proto::Envelope set(const proto::Envelope& request);
  // nullopt: the key is not set yet and the request may wait (long poll) until `final`.
  std::optional<proto::Envelope> get(const proto::Envelope& request, bool final);
  // An attempt whose ranks have all ended here (`running` said true and now says false) is over:
  // its credential opens nothing more.
  void endAttempts(const std::function<bool(const std::string& job_id)>& running);
  // Drops the stores and keys of jobs for which `active` says false.
  void dropInactive(const std::function<bool(const std::string& job_id)>& active);
  // True once after a set(): waiting gets may have their answer.
  bool takeChanged();

 private:
  proto::Envelope noStore(const proto::Envelope& request, const std::string& job_id) const;

  std::string agent_name_;
  ZapHandler* zap_;
  std::map<std::string, std::map<std::string, std::string>> stores_;  // job id -> key -> value
  struct Hosted {
    uint32_t attempt = 0;
    bool ran = false;  // its ranks (or their slots) existed here
    bool over = false;
    std::vector<std::string> admitted;  // the attempt keys ZAP admits
  };
  std::map<std::string, Hosted> hosted_;  // job id -> its current attempt
  bool changed_ = false;
};

}  // namespace ringmaster::agent
