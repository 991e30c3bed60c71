#pragma once
// The rendezvous stores this agent hosts: it runs group rank 0 of those jobs. A job's store is
// reachable with that job's own key (ZAP admits it as "job:<id>", for this store only) and is
// dropped, with the key, once the job is no longer active here.

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "ringmaster/protocol/ringmaster.pb.h"

namespace ringmaster::agent {

class ZapHandler;

class RendezvousService {
 public:
  RendezvousService(std::string agent_name, ZapHandler* zap)
      : agent_name_(std::move(agent_name)), zap_(zap) {}

  // Hosts the store of a job launched here with group rank 0 and a rendezvous key.
  void host(const proto::JobLaunch& launch);
  proto::Envelope set(const proto::Envelope& request);
  // nullopt: the key is not set yet and the request may wait (long poll) until `final`.
  std::optional<proto::Envelope> get(const proto::Envelope& request, bool final);
  // Drops the stores and keys of jobs for which `active` says false.
  void dropInactive(const std::function<bool(const std::string& job_id)>& active);
  // True once after a set(): waiting gets may have their answer.
  bool takeChanged();

 private:
  proto::Envelope noStore(const proto::Envelope& request, const std::string& job_id) const;

  std::string agent_name_;
  ZapHandler* zap_;
  std::map<std::string, std::map<std::string, std::string>> stores_;  // job id -> key -> value
  std::map<std::string, std::string> keys_;  // job id -> its rendezvous public key
  bool changed_ = false;
};

}  // namespace ringmaster::agent
