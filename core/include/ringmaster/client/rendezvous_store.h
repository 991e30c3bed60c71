#pragma once
// The rendezvous store of a running job, as the comm layer sees it (comm::KeyValueStore), served
// by rank 0's agent. Ranks connect with the job's own CURVE key pair (the per-job credential from
// RINGMASTER_RENDEZVOUS_* in their environment), which that agent admits for this job's
// rendezvous requests only.

#include <memory>
#include <mutex>
#include <string>

#include "ringmaster/client/agent_connection.h"
#include "ringmaster/comm/store.h"

namespace ringmaster::client {

struct RendezvousEndpoint {
  std::string job_id;
  std::string endpoint;    // rank 0's agent
  std::string server_key;  // its public key
  security::KeyPair credential;

  // From RINGMASTER_JOB_ID and RINGMASTER_RENDEZVOUS_*; an error names the missing variable.
  static Result<RendezvousEndpoint> fromEnvironment();
};

// Thread-safe (one connection behind a mutex).
class AgentRendezvousStore final : public comm::KeyValueStore {
 public:
  static Result<std::unique_ptr<AgentRendezvousStore>> connect(const RendezvousEndpoint& where);
  ~AgentRendezvousStore() override;

  Status set(const std::string& key, std::string_view value) override;
  Result<std::string> get(const std::string& key, std::chrono::milliseconds timeout) override;

 private:
  AgentRendezvousStore(std::string job_id, std::unique_ptr<ZmqContext> context,
                       std::unique_ptr<AgentConnection> connection);

  std::string job_id_;
  std::mutex mutex_;
  std::unique_ptr<ZmqContext> context_;
  std::unique_ptr<AgentConnection> connection_;  // GUARDED_BY(mutex_)
};

}  // namespace ringmaster::client
