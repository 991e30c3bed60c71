#pragma once
// The gang coordinator's world in the agent (gang_world.h): CURVE connections to the job's
// other agents (with the job's key pair), the supervisor's ranks, the agent's journal, ZAP and
// rendezvous, the gang ledger, a TCP probe and the steady clock.

#include <functional>
#include <string>

#include "gang_world.h"
#include "ringmaster/client/agent_connection.h"

namespace ringmaster::agent {

class GangLedger;
class JobSupervisor;
class Journal;
class RendezvousService;
class ZapHandler;

class AgentGangWorld final : public GangWorld {
 public:
  struct Parts {
    ZapHandler* zap = nullptr;
    JobSupervisor* supervisor = nullptr;
    RendezvousService* rendezvous = nullptr;
    Journal* journal = nullptr;
    GangLedger* ledger = nullptr;  // may be null: nothing is kept for a restart
    std::function<void(const std::string&)> log;
  };
  explicit AgentGangWorld(Parts parts) : parts_(std::move(parts)) {}

  Clock::time_point now() override { return Clock::now(); }
  std::unique_ptr<GangLink> connect(const proto::JobLaunch& launch,
                                    const proto::GangMember& member) override;
  bool refusesConnections(const std::string& endpoint) override;
  void admitKey(const std::string& public_key, const std::string& job_id) override;
  void revokeKey(const std::string& public_key) override;
  Result<std::vector<int>> startRanks(const proto::JobLaunch& launch) override;
  void stopRanks(const std::string& job_id) override;
  bool ranksActive(const std::string& job_id) override;
  std::vector<proto::RankProgress> progress(const std::string& job_id) override;
  void journal(proto::JournalRecord& record) override;
  void saveGang(const SavedGang& gang) override;
  void forgetGang(const std::string& job_id) override;

 private:
  Parts parts_;
  client::ZmqContext
      context_;  // for the sockets to other agents; outlives them (see ~GangCoordinator)
};

}  // namespace ringmaster::agent
