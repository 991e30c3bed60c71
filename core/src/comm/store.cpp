#include "ringmaster/comm/store.h"

#include <algorithm>

namespace ringmaster::comm {

namespace {

using Clock = std::chrono::steady_clock;

std::string timeoutMessage(const std::string& key, std::chrono::milliseconds timeout) {
  return "key '" + key + "' did not appear in the rendezvous store within " +
         std::to_string(timeout.count()) + " ms";
}

}  // namespace

Status KeyValueStore::wait(const std::vector<std::string>& keys,
                           std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (const auto& key : keys) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    auto value = get(key, std::max(left, std::chrono::milliseconds(0)));
    if (!value.isOk()) {
      if (value.status().code() == ErrorCode::kTimeout) {
        return timeoutError(timeoutMessage(key, timeout));
      }
      return value.status();
    }
  }
  return Status::ok();
}

Status InMemoryStore::set(const std::string& key, std::string_view value) {
  {
    std::lock_guard lock(mutex_);
    values_.insert_or_assign(key, std::string(value));
  }
  changed_.notify_all();
  return Status::ok();
}

Result<std::string> InMemoryStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  auto it = values_.end();
  const bool found = changed_.wait_for(lock, timeout, [&] {
    it = values_.find(key);
    return it != values_.end();
  });
  if (!found) return timeoutError(timeoutMessage(key, timeout));
  return it->second;
}

Status InMemoryStore::wait(const std::vector<std::string>& keys,
                           std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  std::string missing;
  const bool found = changed_.wait_for(lock, timeout, [&] {
    for (const auto& key : keys) {
      if (values_.find(key) == values_.end()) {
        missing = key;
        return false;
      }
    }
    return true;
  });
  if (!found) return timeoutError(timeoutMessage(missing, timeout));
  return Status::ok();
}

size_t InMemoryStore::size() const {
  std::lock_guard lock(mutex_);
  return values_.size();
}

}  // namespace ringmaster::comm
