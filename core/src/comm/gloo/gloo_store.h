#pragma once
// Adapts a ringmaster KeyValueStore to the gloo::rendezvous::Store that Gloo's connectFullMesh
// expects. Gloo reports store failures only as exceptions, so the adapter throws
// gloo::IoException and keeps the first Status for the caller to return.

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "ringmaster/comm/store.h"

namespace ringmaster::comm::gloo {

// Used by one connectFullMesh call; the store must outlive it. Thread-compatible.
class GlooStoreAdapter final : public ::gloo::rendezvous::Store {
 public:
  // Every key is prefixed with `prefix`; `timeout` bounds every get() and wait() that Gloo
  // issues without a timeout of its own.
  GlooStoreAdapter(KeyValueStore& store, std::string prefix, std::chrono::milliseconds timeout);

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  // The first failure seen, or OK.
  Status firstError() const;

 private:
  [[noreturn]] void fail(Status status);

  KeyValueStore& store_;
  const std::string prefix_;
  const std::chrono::milliseconds timeout_;
  mutable std::mutex mutex_;
  Status firstError_;  // GUARDED_BY(mutex_)
};

}  // namespace ringmaster::comm::gloo
