#include "ringmaster/client/rendezvous_store.h"

#include <cstdlib>
#include <fstream>

namespace ringmaster::client {
namespace {

constexpr int kSetTimeoutMs = 30000;
// Long polls are cut into slices so that a dropped reply costs a slice, not the whole wait.
constexpr int64_t kGetSliceMs = 10000;

Result<std::string> requireEnv(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) {
    return invalidArgument(std::string(name) +
                           " is not set (ringmaster-agent sets it for every rank)");
  }
  return std::string(value);
}

// The attempt's secret key, from the file the agent names (only the rank's user reads it).
Result<std::string> secretKeyFromFile() {
  RM_ASSIGN_OR_RETURN(const std::string path, requireEnv("RINGMASTER_RENDEZVOUS_SECRET_KEY_FILE"));
  std::ifstream in(path);
  std::string key;
  if (!(in >> key)) return ioError("cannot read the rendezvous key file " + path);
  return key;
}

}  // namespace

Result<RendezvousEndpoint> RendezvousEndpoint::fromEnvironment() {
  RendezvousEndpoint where;
  RM_ASSIGN_OR_RETURN(where.job_id, requireEnv("RINGMASTER_JOB_ID"));
  RM_ASSIGN_OR_RETURN(where.endpoint, requireEnv("RINGMASTER_RENDEZVOUS_ENDPOINT"));
  RM_ASSIGN_OR_RETURN(where.server_key, requireEnv("RINGMASTER_RENDEZVOUS_SERVER_KEY"));
  RM_ASSIGN_OR_RETURN(where.credential.public_key, requireEnv("RINGMASTER_RENDEZVOUS_PUBLIC_KEY"));
  RM_ASSIGN_OR_RETURN(where.credential.secret_key, secretKeyFromFile());
  return where;
}

AgentRendezvousStore::AgentRendezvousStore(std::string job_id, std::unique_ptr<ZmqContext> context,
                                           std::unique_ptr<AgentConnection> connection)
    : job_id_(std::move(job_id)),
      context_(std::move(context)),
      connection_(std::move(connection)) {}

AgentRendezvousStore::~AgentRendezvousStore() {
  connection_.reset();  // the socket closes before its context
}

Result<std::unique_ptr<AgentRendezvousStore>> AgentRendezvousStore::connect(
    const RendezvousEndpoint& where) {
  auto context = std::make_unique<ZmqContext>();
  AgentEndpoint agent{"rendezvous of " + where.job_id, where.endpoint, where.server_key};
  RM_ASSIGN_OR_RETURN(auto connection, AgentConnection::connect(*context, agent, where.credential));
  return std::unique_ptr<AgentRendezvousStore>(
      new AgentRendezvousStore(where.job_id, std::move(context), std::move(connection)));
}

Status AgentRendezvousStore::set(const std::string& key, std::string_view value) {
  proto::Envelope request;
  auto* set = request.mutable_rendezvous_set();
  set->set_job_id(job_id_);
  set->set_key(key);
  set->set_value(std::string(value));
  std::lock_guard<std::mutex> lock(mutex_);
  auto reply = connection_->call(std::move(request), kSetTimeoutMs);
  return reply.isOk() ? Status::ok() : reply.status();
}

Result<std::string> AgentRendezvousStore::get(const std::string& key,
                                              std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::lock_guard<std::mutex> lock(mutex_);
  while (true) {
    const int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(
                             deadline - std::chrono::steady_clock::now())
                             .count();
    const int64_t slice = std::max<int64_t>(0, std::min(left, kGetSliceMs));
    proto::Envelope request;
    auto* get = request.mutable_rendezvous_get();
    get->set_job_id(job_id_);
    get->set_key(key);
    get->set_wait_ms(static_cast<uint32_t>(slice));
    auto reply = connection_->call(std::move(request), static_cast<int>(slice) + 5000);
    if (reply.isOk()) return std::move(*reply->mutable_rendezvous_value()->mutable_value());
    if (reply.status().code() != ErrorCode::kTimeout || left <= kGetSliceMs) {
      if (reply.status().code() == ErrorCode::kTimeout) {
        return timeoutError("rendezvous key '" + key + "' did not appear within " +
                            std::to_string(timeout.count()) + " ms (has every rank started?)");
      }
      return reply.status();
    }
  }
}

}  // namespace ringmaster::client
