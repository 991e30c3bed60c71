#include "comm/gloo/gloo_store.h"

#include <gloo/common/error.h>

#include <utility>

namespace ringmaster::comm::gloo {

GlooStoreAdapter::GlooStoreAdapter(KeyValueStore& store, std::string prefix,
                                   std::chrono::milliseconds timeout)
    : store_(store), prefix_(std::move(prefix)), timeout_(timeout) {}

void GlooStoreAdapter::set(const std::string& key, const std::vector<char>& data) {
  Status status = store_.set(prefix_ + key, std::string_view(data.data(), data.size()));
  if (!status.isOk()) fail(std::move(status));
}

std::vector<char> GlooStoreAdapter::get(const std::string& key) {
  auto value = store_.get(prefix_ + key, timeout_);
  if (!value.isOk()) fail(value.status());
  return std::vector<char>(value->begin(), value->end());
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void GlooStoreAdapter::wait(const std::vector<std::string>& keys,
                            const std::chrono::milliseconds& timeout) {
  std::vector<std::string> prefixed;
  prefixed.reserve(keys.size());
  for (const auto& key : keys) prefixed.push_back(prefix_ + key);
  // Gloo passes its own default (30 s) here; our options' timeout is the one the user chose.
  Status status = store_.wait(prefixed, timeout_);
  if (!status.isOk()) fail(std::move(status));
}

Status GlooStoreAdapter::firstError() const {
  std::lock_guard lock(mutex_);
  return firstError_;
}

void GlooStoreAdapter::fail(Status status) {
  {
    std::lock_guard lock(mutex_);
    if (firstError_.isOk()) firstError_ = status;
  }
  throw ::gloo::IoException(status.toString());
}

}  // namespace ringmaster::comm::gloo
