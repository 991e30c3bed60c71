#pragma once
// What the gang coordinator (gang_coordinator.h) needs of the world around it: a connection to
// each peer, this agent's ranks, the journal, the ledger, the job keys ZAP admits, a probe of a
// peer's port, and the time. The agent gives it the real ones (agent_gang_world.h); the gang's
// deterministic simulation (tests/agent/gang_simulation.h) gives it a virtual clock, network
// and ranks, so that the same decisions are tested under schedules no real cluster would
// reproduce.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gang_ledger.h"
#include "ringmaster/protocol/ringmaster.pb.h"
#include "ringmaster/util/result.h"

namespace ringmaster::agent {

// One connection to another agent of a job. Every message sent is answered, in order.
class GangLink {
 public:
  virtual ~GangLink() = default;
  // Hands `envelope` over without blocking; false when the connection is not up (in its
  // handshake, or dropped): the message is not sent.
  virtual bool send(proto::Envelope& envelope) = 0;
  // The next reply's bytes; nullopt when none has arrived.
  virtual std::optional<std::string> receive() = 0;
  // The peer refused the handshake (it had not admitted the job's key) and none succeeded since:
  // the connection stays dead until it is opened again.
  virtual bool handshakeRefused() = 0;
  // The peer's process holds the connection (up, or in a handshake its host accepted), however
  // busy its loop.
  virtual bool alive() = 0;
  // The connection's state in a few words ("up", "dropped (no answer to heartbeats)", ...).
  virtual std::string describeState() = 0;
  // For the agent's poll loop; nullptr where there is no socket.
  virtual void* socket() const = 0;
};

class GangWorld {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~GangWorld() = default;

  virtual Clock::time_point now() = 0;
  // A connection to `member` with the job's key pair; nullptr (logged) when none can be made.
  virtual std::unique_ptr<GangLink> connect(const proto::JobLaunch& launch,
                                            const proto::GangMember& member) = 0;
  // Whether the host of `endpoint` refuses connections on its port: the agent is down.
  virtual bool refusesConnections(const std::string& endpoint) = 0;
  // The job's key, which its other agents' gang messages carry: admitted as "job:<id>" or not.
  virtual void admitKey(const std::string& public_key, const std::string& job_id) = 0;
  virtual void revokeKey(const std::string& public_key) = 0;

  // This agent's ranks of `launch` start (its rendezvous first, where it hosts it).
  virtual Result<std::vector<int>> startRanks(const proto::JobLaunch& launch) = 0;
  // Its ranks of the job are stopped (SIGTERM, then SIGKILL after the job's grace); their end
  // arrives as the supervisor's events.
  virtual void stopRanks(const std::string& job_id) = 0;
  // Ranks running, or slots prepared for a launch.
  virtual bool ranksActive(const std::string& job_id) = 0;
  virtual std::vector<proto::RankProgress> progress(const std::string& job_id) = 0;

  virtual void journal(proto::JournalRecord& record) = 0;
  // The gang as it stands, for a restart of this agent; forgotten once it is over here.
  virtual void saveGang(const SavedGang& gang) = 0;
  virtual void forgetGang(const std::string& job_id) = 0;
};

}  // namespace ringmaster::agent
