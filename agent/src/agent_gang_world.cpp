#include "agent_gang_world.h"

#include <zmq.h>

#include <algorithm>

#include "gang_ledger.h"
#include "job_supervisor.h"
#include "journal.h"
#include "peer_probe.h"
#include "rendezvous_service.h"
#include "ringmaster/security/keys.h"
#include "zap_handler.h"

namespace ringmaster::agent {
namespace {

constexpr auto kProbeTimeout = std::chrono::milliseconds(200);

class ZmqGangLink final : public GangLink {
 public:
  explicit ZmqGangLink(std::unique_ptr<client::AgentConnection> connection)
      : connection_(std::move(connection)) {}
  // Never blocks: a peer that is not connected misses the message (kUnavailable).
  bool send(proto::Envelope& envelope) override { return connection_->send(envelope, 0).isOk(); }
  std::optional<std::string> receive() override {
    // Gang replies are acknowledgements and short errors: a longer frame is cut, never read.
    char buffer[4096];
    const int size = zmq_recv(connection_->socket(), buffer, sizeof buffer, ZMQ_DONTWAIT);
    if (size < 0) return std::nullopt;
    return std::string(buffer, std::min<size_t>(size, sizeof buffer));
  }
  bool handshakeRefused() override { return connection_->handshakeRefused(); }
  bool alive() override { return connection_->alive(); }
  std::string describeState() override { return connection_->describeState(); }
  void* socket() const override { return connection_->socket(); }

 private:
  std::unique_ptr<client::AgentConnection> connection_;
};

}  // namespace

std::unique_ptr<GangLink> AgentGangWorld::connect(const proto::JobLaunch& launch,
                                                  const proto::GangMember& member) {
  security::KeyPair job_keys{launch.rendezvous_public_key(), launch.rendezvous_secret_key()};
  // With ZMTP pings, which the peer's I/O threads answer however busy its main loop is: a
  // silent peer whose connection stays up is busy, not lost (see GangCoordinator's kBusyFor).
  auto connection = client::AgentConnection::connect(
      context_, {member.agent(), member.endpoint(), member.server_key()}, job_keys);
  if (connection.isOk()) return std::make_unique<ZmqGangLink>(std::move(*connection));
  parts_.log("job " + launch.job_id() + ": " + connection.status().message());
  return nullptr;
}

bool AgentGangWorld::refusesConnections(const std::string& endpoint) {
  return agent::refusesConnections(endpoint, kProbeTimeout);
}

void AgentGangWorld::admitKey(const std::string& public_key, const std::string& job_id) {
  parts_.zap->allowKey(public_key, "job:" + job_id);
}

void AgentGangWorld::revokeKey(const std::string& public_key) { parts_.zap->revokeKey(public_key); }

Result<std::vector<int>> AgentGangWorld::startRanks(const proto::JobLaunch& launch) {
  parts_.rendezvous->host(launch);
  return parts_.supervisor->launch(launch);
}

void AgentGangWorld::stopRanks(const std::string& job_id) {
  // NotFound: nothing of the job runs here (its ranks had ended, or it is between attempts).
  Result<int> stopped = parts_.supervisor->stop(job_id, std::chrono::milliseconds(0));
  if (!stopped.isOk() && stopped.status().code() != ErrorCode::kNotFound) {
    parts_.log("job " + job_id +
               ": its ranks here could not be stopped: " + stopped.status().message());
  }
}

bool AgentGangWorld::ranksActive(const std::string& job_id) {
  return parts_.supervisor->isActive(job_id);
}

std::vector<proto::RankProgress> AgentGangWorld::progress(const std::string& job_id) {
  return parts_.supervisor->progress(job_id);
}

void AgentGangWorld::journal(proto::JournalRecord& record) {
  // The gang goes on without it: its peers journal theirs.
  if (auto appended = parts_.journal->append(record); !appended.isOk()) {
    parts_.log("job " + record.job() +
               ": a gang record was not journaled: " + appended.status().message());
  }
}

void AgentGangWorld::saveGang(const SavedGang& gang) {
  if (!parts_.ledger) return;
  if (Status written = parts_.ledger->save(gang); !written.isOk()) {
    parts_.log("job " + gang.launch.job_id() +
               ": an agent restart would abandon it: " + written.message());
  }
}

void AgentGangWorld::forgetGang(const std::string& job_id) {
  if (parts_.ledger) parts_.ledger->remove(job_id);
}

}  // namespace ringmaster::agent
