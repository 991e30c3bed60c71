#include "rendezvous_service.h"

#include "ringmaster/protocol/codec.h"
#include "ringmaster/security/keys.h"
#include "zap_handler.h"

namespace ringmaster::agent {

void RendezvousService::host(const proto::JobLaunch& launch) {
  if (launch.group_rank() != 0 || !security::isValidKey(launch.rendezvous_public_key())) return;
  const security::KeyPair job_keys{launch.rendezvous_public_key(), launch.rendezvous_secret_key()};
  Hosted& hosted = hosted_[launch.job_id()];
  if (hosted.attempt == launch.attempt()) return;
  for (const std::string& key : hosted.admitted) zap_->revokeKey(key);
  hosted = Hosted{};
  hosted.attempt = launch.attempt();
  for (uint32_t attempt : {launch.attempt(), launch.attempt() + 1}) {
    auto credential = security::attemptKeyPair(job_keys, attempt);
    if (!credential.isOk()) continue;
    zap_->allowKey(credential->public_key,
                   "attempt:" + launch.job_id() + ":" + std::to_string(attempt));
    hosted.admitted.push_back(credential->public_key);
  }
  stores_[launch.job_id()];  // an empty store exists from now on
}

bool RendezvousService::admits(const std::string& job_id, uint32_t attempt) const {
  auto it = hosted_.find(job_id);
  return it != hosted_.end() &&
         ((attempt == it->second.attempt && !it->second.over) || attempt == it->second.attempt + 1);
}

void RendezvousService::endAttempts(const std::function<bool(const std::string&)>& running) {
  for (auto& [job_id, hosted] : hosted_) {
    const bool now = running(job_id);
    if (hosted.ran && !now) hosted.over = true;
    hosted.ran = hosted.ran || now;
  }
}

proto::Envelope RendezvousService::noStore(const proto::Envelope& request,
                                           const std::string& job_id) const {
  Status missing =
      notFound("agent '" + agent_name_ + "' hosts no rendezvous for job '" + job_id + "'");
  return protocol::makeError(request.request_id(), missing.code(), missing.message(), agent_name_);
}

proto::Envelope RendezvousService::set(const proto::Envelope& request) {
  const auto& set = request.rendezvous_set();
  auto store = stores_.find(set.job_id());
  if (store == stores_.end()) return noStore(request, set.job_id());
  store->second[set.key()] = set.value();
  changed_ = true;
  proto::Envelope response;
  response.set_request_id(request.request_id());
  response.mutable_ack();
  return response;
}

std::optional<proto::Envelope> RendezvousService::get(const proto::Envelope& request, bool final) {
  const auto& get = request.rendezvous_get();
  auto store = stores_.find(get.job_id());
  if (store == stores_.end()) return noStore(request, get.job_id());
  auto value = store->second.find(get.key());
  if (value == store->second.end()) {
    if (!final && get.wait_ms() > 0) return std::nullopt;
    Status late = timeoutError("rendezvous key '" + get.key() + "' of job '" + get.job_id() +
                               "' was not set within " + std::to_string(get.wait_ms()) + " ms");
    return protocol::makeError(request.request_id(), late.code(), late.message(), agent_name_);
  }
  proto::Envelope response;
  response.set_request_id(request.request_id());
  response.mutable_rendezvous_value()->set_value(value->second);
  return response;
}

void RendezvousService::dropInactive(const std::function<bool(const std::string&)>& active) {
  for (auto it = hosted_.begin(); it != hosted_.end();) {
    if (active(it->first)) {
      ++it;
      continue;
    }
    for (const std::string& key : it->second.admitted) zap_->revokeKey(key);
    stores_.erase(it->first);
    it = hosted_.erase(it);
  }
}

bool RendezvousService::takeChanged() {
  const bool changed = changed_;
  changed_ = false;
  return changed;
}

}  // namespace ringmaster::agent
